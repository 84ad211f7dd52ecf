"""Executor tests of ImageExampleGen on CSV sources: types, empty values, dropped columns and
the rejection report with its kept quarantine."""
import json
import os

import pytest
import tensorflow as tf

from core import inputs
from components.ingest.formats import rules
from components.ingest.graph import checks
from ingest_helpers import ingest_do as _do


def test_csv_source_records_classes_and_a_tabular_input_spec(tmp_path):
    os.makedirs(tmp_path / 'table')
    rows = ['size,kind,target'] + [f'{i}.5,{"ab"[i % 2]},{"xyz"[i % 3]}' for i in range(30)]
    (tmp_path / 'table' / 'rows.csv').write_text('\n'.join(rows) + '\n')
    examples = _do(str(tmp_path / 'table'), str(tmp_path / 'examples'), pattern='*.csv',
                   source='csv', label_column='target', feature_types='{}')
    assert json.loads(examples.get_string_custom_property('class_names')) == ['x', 'y', 'z']
    spec = inputs.InputSpec.from_json(examples.get_string_custom_property('input_spec'))
    assert spec.kind == 'tabular' and spec.categorical == ('kind',)
    assert [name for name, _, _ in spec.numeric] == ['size']
    assert examples.get_int_custom_property('num_found') == 30


def _messy_table(tmp_path, rows=60, bad=0):
    """A table with an ID-like column that is mostly empty, empty values in a measurement, a
    free-text column to drop, and `bad` rows with a non-numeric value."""
    os.makedirs(tmp_path / 'table')
    lines = ['record_id,size,notes,target']
    for i in range(rows):
        record_id = str(70000 + i) if i % 4 == 0 else ''
        size = '' if i % 6 == 0 else f'{i % 7}.5'
        lines.append(f'{record_id},{size},"free, text {i}",{"xy"[i % 2]}')
    lines += [f',{("?", "n/a", "-")[i % 3]},t,x' for i in range(bad)]
    (tmp_path / 'table' / 'rows.csv').write_text('\n'.join(lines) + '\n')
    return str(tmp_path / 'table')


def test_csv_empty_values_are_imputed_and_recorded_and_a_column_is_dropped(tmp_path):
    properties = {}
    examples = _do(_messy_table(tmp_path), str(tmp_path / 'out'), pattern='*.csv', source='csv',
                   label_column='target', feature_types='{}', drop_columns='["notes"]',
                   properties=properties)
    assert examples.get_int_custom_property('num_rejected') == 0
    assert examples.get_int_custom_property('num_written_train') + \
        examples.get_int_custom_property('num_written_eval') == 60
    assert json.loads(examples.get_string_custom_property('missing_values')) == {
        'record_id': 45, 'size': 10}
    spec = inputs.InputSpec.from_json(examples.get_string_custom_property('input_spec'))
    assert [name for name, _, _ in spec.numeric] == ['record_id', 'size']
    assert spec.categorical == () and spec.missing == ('record_id', 'size')
    train = os.path.join(examples.uri, 'Split-train', '*')
    sizes = [tf.train.Example.FromString(r.numpy()).features.feature['size'].float_list.value
             for r in tf.data.TFRecordDataset(tf.io.gfile.glob(train), compression_type='GZIP')]
    present = [v[0] for v in sizes if v]
    assert len(present) < len(sizes)  # some train rows have no size
    assert dict((n, m) for n, m, _ in spec.numeric)['size'] == pytest.approx(
        sum(present) / len(present))


def test_csv_rejection_failure_keeps_the_quarantine_where_the_message_says(tmp_path):
    with pytest.raises(rules.IngestionError) as raised:
        # 'size' is given: with 12 bad values in 72 rows, inference would make it categorical.
        _do(_messy_table(tmp_path, bad=12), str(tmp_path / 'out'), pattern='*.csv',
            source='csv', label_column='target', feature_types='{"size": "numeric"}',
            drop_columns='[]')
    message = str(raised.value)
    assert message.startswith('Rejected 12 of 72 records')
    assert "non_numeric 12 (by column: 'size' 12)" in message
    # Under the pipeline root given as a property, named by the failed Examples' URI.
    kept = checks.kept_quarantine_path(
        str(tmp_path / 'out'), str(tmp_path / 'out' / 'ImageExampleGen' / 'examples' / '1'))
    assert kept.startswith(str(tmp_path / 'out' / '_quarantine' / 'ImageExampleGen'))
    assert message.endswith(kept)
    with open(kept) as handle:
        entries = [json.loads(line) for line in handle]
    assert len(entries) == 12 and {e['column'] for e in entries} == {'size'}
    # Three different bad values: each shown once, not twelve near-identical lines.
    shown = [line for line in message.splitlines() if line.startswith('  rows.csv:')]
    assert len(shown) == 3 and len(set(shown)) == 3


def test_an_unknown_dropped_column_is_named(tmp_path):
    with pytest.raises(rules.IngestionError, match="drop_columns names 'note'"):
        _do(_messy_table(tmp_path), str(tmp_path / 'out'), pattern='*.csv', source='csv',
            label_column='target', feature_types='{}', drop_columns='["note"]')
