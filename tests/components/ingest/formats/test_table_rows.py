"""The CSV rules of ingestion: type inference with empty values, what rejects a row (only
structural faults), dropped columns, and the per-column counts and train moments that the
imputation is built from (the real Beam graph, in-process)."""
import os

import apache_beam as beam
import numpy as np
import pytest
import tensorflow as tf

from core import features
from components.ingest.formats import rules, table_rows
from components.ingest.graph import beam_pipeline, checks, stats

HEADER = ['id', 'size', 'weight', 'colour', 'notes', 'kind']


def test_a_mostly_empty_numeric_column_is_inferred_numeric_from_the_values_it_has():
    # Like an ID column of a real export: 90% empty, the rest numbers.
    rows = [[str(1000 + i) if i % 10 == 0 else '', f'{i}.5', '', 'red', 'x', 'a']
            for i in range(200)]
    table = table_rows.infer_table(HEADER, 'kind', rows)
    assert dict(table.types) == {'id': 'numeric', 'size': 'numeric', 'weight': 'categorical',
                                 'colour': 'categorical', 'notes': 'categorical'}


def test_an_empty_numeric_value_is_missing_not_a_rejection():
    table = table_rows.infer_table(HEADER, 'kind', [], {'id': 'numeric', 'size': 'numeric',
                                                        'weight': 'numeric'})
    values, label = table_rows.row_values([' ', '2.5', '', '', 'n', 'b'], table)
    assert label == 'b'
    assert values == {'size': 2.5, 'colour': '', 'notes': 'n'}  # id and weight are absent
    example = features.make_tabular_example(values, 0, 'b', 't.csv')
    assert 'id' not in example.features.feature and 'weight' not in example.features.feature


@pytest.mark.parametrize('fields, reason, column', [
    (['1', '2', '3', 'red', 'n'], 'wrong_column_count', None),
    (['1', '2', '3', 'red', 'n', 'b', 'extra'], 'wrong_column_count', None),
    (['1', '2', '3', 'red', 'n', '  '], 'missing_label', 'kind'),
    (['1', 'n/a', '3', 'red', 'n', 'b'], 'non_numeric', 'size'),
    (['1', '2', 'inf', 'red', 'n', 'b'], 'non_numeric', 'weight'),
])
def test_only_structural_faults_reject_a_row_and_name_the_column(fields, reason, column):
    table = table_rows.infer_table(HEADER, 'kind', [], {'id': 'numeric', 'size': 'numeric',
                                                        'weight': 'numeric'})
    with pytest.raises(rules.BadRecord) as raised:
        table_rows.row_values(fields, table)
    assert (raised.value.reason, raised.value.column) == (reason, column)
    assert 'missing_value' not in rules.REASONS


def test_dropped_columns_are_not_features_and_an_unknown_one_is_named():
    table = table_rows.infer_table(HEADER, 'kind', [['1', '2', '3', 'red', 'n', 'a']],
                                   drop=('notes', 'id'))
    assert [c for c, _ in table.types] == ['size', 'weight', 'colour']
    values, _ = table_rows.row_values(['1', '2', '3', 'red', 'free text', 'a'], table)
    assert values == {'size': 2.0, 'weight': 3.0, 'colour': 'red'}
    # A dropped column may clash with a key the pipeline adds: it is never written.
    table_rows.infer_table(['source_path', 'x', 'kind'], 'kind', [], drop=('source_path',))
    with pytest.raises(ValueError, match="drop_columns names 'note', which is not a column"):
        table_rows.infer_table(HEADER, 'kind', [], drop=('note',))
    with pytest.raises(ValueError, match="'size', which is also the label column or in"):
        table_rows.infer_table(HEADER, 'kind', [], {'size': 'numeric'}, drop=('size',))


def test_moments_count_only_the_non_empty_values():
    accumulator = stats.empty_moments(2)
    for row in ([1.0, None], [3.0, 4.0], [None, None], [5.0, 6.0]):
        accumulator = stats.add_row(accumulator, row)
    merged = stats.Moments(2).merge_accumulators([accumulator, stats.empty_moments(2)])
    first, second = stats.Moments(2).extract_output(merged)
    assert first == pytest.approx({'mean': 3.0, 'std': np.std([1, 3, 5]), 'count': 3,
                                   'missing': 1})
    assert second == pytest.approx({'mean': 5.0, 'std': 1.0, 'count': 2, 'missing': 2})
    empty = stats.Moments(1).extract_output(stats.add_row(stats.empty_moments(1), [None]))
    assert empty == [{'mean': 0.0, 'std': 1.0, 'count': 0, 'missing': 1}]


def _ingest(tmp_path, lines, drop=()):
    root = tmp_path / 'table'
    root.mkdir()
    (root / 'data.csv').write_text('\n'.join(lines) + '\n')
    header = table_rows.read_header(str(root / 'data.csv'))
    table = table_rows.infer_table(header, 'kind', table_rows.sample_rows(str(root / 'data.csv')),
                                   drop=drop)
    options = beam_pipeline.IngestOptions(root=str(root), source='csv', table=table,
                                          files=(str(root / 'data.csv'),))
    out = str(tmp_path / 'out')
    pipeline = beam.Pipeline(argv=['--direct_running_mode=in_memory'])
    beam_pipeline.build_ingest(pipeline, options, out)
    result = pipeline.run()
    result.wait_until_finish()
    return result, beam_pipeline.finalize(out, options), out


def _read(out, split):
    files = tf.io.gfile.glob(os.path.join(out, f'Split-{split}', '*'))
    return [tf.train.Example.FromString(r.numpy())
            for r in tf.data.TFRecordDataset(files, compression_type='GZIP')]


def test_empty_values_are_counted_per_column_and_the_train_mean_skips_them(tmp_path):
    lines = ['id,size,weight,notes,kind']
    for i in range(120):
        size = '' if i % 5 == 0 else f'{i % 17}.25'
        weight = '' if i % 8 == 0 else str(i % 9)
        lines.append(f'{"" if i % 3 else 9000 + i},{size},{weight},note {i},{"ab"[i % 2]}')
    lines += ['1,2,x,n,a', '1,2,3,n', '1,2,3,n,']  # non_numeric, ragged, missing label
    result, table, out = _ingest(tmp_path, lines, drop=('notes',))
    counts = stats.read_counts(result)
    assert (counts['found'], counts['rejected']) == (123, 3)
    assert counts['written_train'] + counts['written_eval'] == 120
    assert stats.read_missing(result) == {'id': 80, 'size': 24, 'weight': 15}
    assert stats.read_rejected_by_column(result) == {('non_numeric', 'weight'): 1,
                                                     ('missing_label', 'kind'): 1}
    train = _read(out, 'train')
    assert all('notes' not in e.features.feature for e in train + _read(out, 'eval'))
    for column in ('id', 'size', 'weight'):
        present = [e.features.feature[column].float_list.value[0] for e in train
                   if column in e.features.feature]
        assert table['moments'][column] == pytest.approx({
            'mean': np.mean(present), 'std': np.std(present), 'count': len(present),
            'missing': len(train) - len(present)})
        assert table['moments'][column]['missing'] > 0
    message = table_rows.describe_missing(stats.read_missing(result), table['moments'])
    assert message.startswith("'id' 80 (train mean ") and message.endswith('indicator)')
    quarantine = checks.read_quarantine(out)
    assert {(q['reason'], q.get('column')) for q in quarantine} == {
        ('non_numeric', 'weight'), ('wrong_column_count', None), ('missing_label', 'kind')}
