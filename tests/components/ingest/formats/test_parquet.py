"""The Parquet source (components/ingest/formats/parquet.py, the Source in
graph/parquet_source.py) on files pyarrow writes: row groups read one at a time, nulls,
dictionary, timestamp, list and struct columns, and files that are not Parquet, are truncated or
have a damaged row group; then the Beam graph and the executor on a folder. The same records
from one process or two Beam worker processes: tests/components/ingest/graph/test_beam_pipeline.py
(in the one pipeline of every source, so that its worker processes start once)."""
import json
import os

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf

from core import features, inputs
from components.ingest.formats import parquet, rules, table_rows
from components.ingest.graph import beam_pipeline, checks, registry, stats
from components.ingest.spans import listing
from ingest_helpers import ingest_do, no_hang, parquet_table, write_parquet

EPOCH_2024 = 1704067200  # 2024-01-01T00:00:00Z in seconds


def _records(path, names, checked, unit_bytes=parquet.UNIT_BYTES):
    found = []
    for unit in parquet.plan_units(path, unit_bytes=unit_bytes):
        found += list(parquet.read_unit(unit, names, checked))
    return found


NAMES = ('size', 'colour', 'seen', 'day', 'reading', 'where.x', 'where.name', 'kind')
FEATURES = NAMES[:-1]


def test_columns_and_types_come_from_the_schema_with_structs_flattened(tmp_path):
    path = write_parquet(str(tmp_path), 't.parquet', parquet_table())
    source = registry.get('parquet')
    assert source.columns(path, 'utf-8') == list(NAMES)
    assert source.schema_hint(path) == {
        'size': 'numeric', 'colour': 'categorical', 'seen': 'numeric', 'day': 'numeric',
        'reading': 'numeric', 'where.x': 'numeric', 'where.name': 'categorical',
        'kind': 'categorical'}
    listed = source.list_input(str(tmp_path), 'kind', {'where.x': 'categorical'}, ('day',),
                               'utf-8', False)
    assert listed['files'] == (path,)
    assert listed['table'] == table_rows.Table(
        NAMES, 'kind', (('size', 'numeric'), ('colour', 'categorical'), ('seen', 'numeric'),
                        ('reading', 'numeric'), ('where.x', 'categorical'),
                        ('where.name', 'categorical')), ('day',))


def test_every_row_group_is_a_unit_and_every_row_is_read_once_in_order(tmp_path):
    path = write_parquet(str(tmp_path), 't.parquet', parquet_table(rows=40), row_group_size=10)
    assert pq.ParquetFile(path).num_row_groups == 4
    units = parquet.plan_units(path, unit_bytes=1)  # one row group per unit
    assert units == [(path, g, g + 1) for g in range(4)]
    assert parquet.plan_units(path) == [(path, 0, 4)]  # small groups share one unit
    rows = _records(path, NAMES, FEATURES + ('kind',), unit_bytes=1)
    assert len(rows) == 40
    assert [table_rows.parse_line(line)[4] for _, line, _ in rows[:3]] == ['0', '2', '4']


def test_values_as_text_nulls_empty_timestamps_in_seconds_and_lists_of_one_flattened(tmp_path):
    path = write_parquet(str(tmp_path), 't.parquet', parquet_table())
    rows = {int(table_rows.parse_line(line)[5]): (table_rows.parse_line(line), problem)
            for _, line, problem in _records(path, NAMES, FEATURES + ('kind',))}
    fields, problem = rows[1]
    assert problem is None
    assert fields[:2] + fields[4:] == ['1.5', 'green', '2', '1', 'p1', 'dog']
    assert [float(v) for v in fields[2:4]] == [EPOCH_2024 + 1, EPOCH_2024 + 86400]
    assert rows[0][0][0] == ''   # a null float: an empty value, imputed like an empty CSV field
    assert rows[3][0][1] == ''   # a null in the dictionary column: the category ''
    fields, problem = rows[7]    # the list of two values
    assert problem == ('nested_value', 'holds a list of 2 values; a feature takes one value '
                       '(drop the column with drop_columns)', 'reading')
    assert fields[4] == '[1, 2]'
    # Dropped, the same column is no reason to reject the row.
    assert rows[7][0][4] == '[1, 2]' and all(
        problem is None for _, _, problem in _records(path, NAMES, ('size', 'kind')))


def test_text_with_commas_quotes_and_line_breaks_round_trips_and_a_lone_null_is_a_row(
        tmp_path):
    texts = ['a,b', 'say "hi"', 'two\nlines', 'cr\rtoo', ' padded ', '']
    path = write_parquet(str(tmp_path), 't.parquet', pa.table({'note': texts, 'kind': ['x'] * 6}))
    lines = [line for _, line, _ in _records(path, ('note', 'kind'), ('kind',))]
    assert [table_rows.parse_line(line) for line in lines] == [[t, 'x'] for t in texts]
    path = write_parquet(str(tmp_path), 'one.parquet', pa.table({'kind': ['x', None, ' ']}))
    lines = [line for _, line, _ in _records(path, ('kind',), ('kind',))]
    assert lines == ['x', '""', '" "']  # not blank lines, which are skipped as no record


def test_nan_is_empty_infinity_is_not_a_number_and_a_null_label_is_missing(tmp_path):
    table = pa.table({'v': pa.array([float('nan'), float('inf'), 1.0, 2.0]),
                      'kind': pa.array(['a', 'b', None, 'a'])})
    path = write_parquet(str(tmp_path), 't.parquet', table)
    lines = [line for _, line, _ in _records(path, ('v', 'kind'), ('v', 'kind'))]
    assert lines == [',a', 'inf,b', '1,', '2,a']  # floats as Arrow writes them: shortest
    table = table_rows.Table(('v', 'kind'), 'kind', (('v', 'numeric'),))
    assert table_rows.row_values(table_rows.parse_line(lines[0]), table) == ({}, 'a')
    for line, reason in ((lines[1], 'non_numeric'), (lines[2], 'missing_label')):
        with pytest.raises(rules.BadRecord) as raised:
            table_rows.row_values(table_rows.parse_line(line), table)
        assert raised.value.reason == reason


def test_maps_and_lists_of_lists_are_rejected_when_not_empty(tmp_path):
    table = pa.table({
        'm': pa.array([[('a', 1)], [], None], pa.map_(pa.string(), pa.int64())),
        'll': pa.array([[[1]], [[1], [2]], []], pa.list_(pa.list_(pa.int64()))),
        'kind': pa.array(['a', 'b', 'a'])})
    path = write_parquet(str(tmp_path), 't.parquet', table)
    problems = [p for _, _, p in _records(path, ('m', 'll', 'kind'), ('m', 'll', 'kind'))]
    assert [p and (p[0], p[2]) for p in problems] == [
        ('nested_value', 'm'), ('nested_value', 'll'), None]


def test_a_file_that_is_not_parquet_is_truncated_or_empty_is_one_rejection(tmp_path):
    good = write_parquet(str(tmp_path), 'good.parquet', parquet_table())
    data = open(good, 'rb').read()
    for name, content in (('notes.parquet', b'id,kind\n1,cat\n'),
                          ('cut.parquet', data[:len(data) // 2]), ('empty.parquet', b'')):
        (tmp_path / name).write_bytes(content)
    rejected = {name: _records(str(tmp_path / name), NAMES, FEATURES)
                for name in ('notes.parquet', 'cut.parquet', 'empty.parquet')}
    for name in ('notes.parquet', 'cut.parquet'):
        ((_, line, (reason, detail)),) = rejected[name]
        assert (line, reason) == (None, 'corrupt_parquet')
        assert detail.startswith('not a Parquet file, or truncated (') and 'magic' in detail
    assert rejected['empty.parquet'] == [(str(tmp_path / 'empty.parquet'), None,
                                          ('empty_file', 'empty file (0 bytes)'))]
    # Listing skips them (the graph quarantines them) and reads its columns from good.parquet.
    listed = registry.get('parquet').list_input(str(tmp_path), 'kind', {}, (), 'utf-8', False)
    assert listed['table'].columns == NAMES and len(listed['files']) == 4
    os.remove(good)
    with pytest.raises(rules.IngestionError, match=r'No readable \*\.parquet file in .*: '
                       r'.*cut\.parquet: not a Parquet file'):
        registry.get('parquet').list_input(str(tmp_path), 'kind', {}, (), 'utf-8', False)


def test_a_fifo_named_parquet_is_rejected_without_being_opened(tmp_path):
    os.mkfifo(tmp_path / 'pipe.parquet')
    with no_hang(30):
        ((_, line, (reason, detail)),) = _records(str(tmp_path / 'pipe.parquet'), NAMES, FEATURES)
    assert (line, reason) == (None, 'not_a_file') and 'named pipe (FIFO)' in detail


def test_a_damaged_row_group_loses_only_itself(tmp_path):
    path = write_parquet(str(tmp_path), 't.parquet', pa.table({
        'x': pa.array([float(i) for i in range(400)]),
        'kind': pa.array(['ab'[i % 2] for i in range(400)])}), row_group_size=100)
    offset = pq.ParquetFile(path).metadata.row_group(2).column(0).data_page_offset
    with open(path, 'r+b') as handle:  # garbage over the third row group's first page header
        handle.seek(offset)
        handle.write(b'\xff' * 40)
    found = _records(path, ('x', 'kind'), ('x', 'kind'))
    good = [line for _, line, problem in found if problem is None]
    assert len(good) == 200 + 100 and len(found) == 301  # groups 0, 1 and 3; one rejection
    ((_, _, (reason, detail)),) = [r for r in found if r[2] is not None]
    assert reason == 'corrupt_parquet'
    assert detail.startswith('row group 2 of 4 cannot be decoded (')


def _ingest(options, out):
    pipeline = beam.Pipeline(argv=['--direct_running_mode=in_memory'])
    beam_pipeline.build_ingest(pipeline, options, out)
    result = pipeline.run()
    result.wait_until_finish()
    return result, beam_pipeline.finalize(out, options)


def _examples(out):
    return [tf.train.Example.FromString(r.numpy()) for split in features.SPLITS
            for r in tf.data.TFRecordDataset(tf.io.gfile.glob(
                os.path.join(out, f'Split-{split}', '*')), compression_type='GZIP')]


def test_the_beam_graph_writes_every_valid_row_and_quarantines_the_rest(tmp_path):
    folder = str(tmp_path / 'data')
    write_parquet(folder, 'a.parquet', parquet_table(rows=40))
    write_parquet(folder, 'b.parquet', parquet_table(rows=40, start=40))
    (tmp_path / 'data' / 'c.parquet').write_bytes(b'PAR1 but nothing else')
    listed = registry.get('parquet').list_input(folder, 'kind', {}, (), 'utf-8', False)
    options = beam_pipeline.IngestOptions(root=folder, source='parquet', **listed)
    result, table = _ingest(options, str(tmp_path / 'out'))
    counts = stats.read_counts(result)
    assert (counts['found'], counts['rejected'], counts['rejected_nested_value'],
            counts['rejected_corrupt_parquet']) == (81, 2, 1, 1)
    assert counts['written_train'] + counts['written_eval'] == 79
    assert table['class_names'] == ['cat', 'dog']
    examples = _examples(str(tmp_path / 'out'))
    assert len(examples) == 79
    sizes = [e.features.feature['size'].float_list.value for e in examples]
    assert sum(1 for v in sizes if not v) == 16  # every fifth size is null: left out, imputed
    colours = {e.features.feature['colour'].bytes_list.value[0] for e in examples}
    assert colours == {b'red', b'green', b'blue', b''}
    seen = sorted(e.features.feature['seen'].float_list.value[0] for e in examples)
    # Numeric features are float32 in an Example: 128 s apart at this magnitude (docs/data.md).
    assert seen[0] == pytest.approx(EPOCH_2024, abs=128)
    quarantine = {(q['source'], q['reason']) for q in checks.read_quarantine(
        str(tmp_path / 'out'))}
    assert quarantine == {('a.parquet', 'nested_value'), ('c.parquet', 'corrupt_parquet')}


def test_the_executor_ingests_the_latest_span_of_parquet_files(tmp_path):
    base = tmp_path / 'base'
    write_parquet(str(base / 'span-1'), 'part-0.parquet', parquet_table(rows=30))
    write_parquet(str(base / 'span-2'), 'part-0.parquet', parquet_table(rows=40))
    write_parquet(str(base / 'span-2'), 'part-1.parquet', parquet_table(rows=20, start=40))
    os.makedirs(base / 'span-3')
    with pytest.raises(rules.IngestionError, match='expected one or more \\*\\.parquet files'):
        listing.check_latest_span(str(base), 'parquet')
    os.rmdir(base / 'span-3')
    properties = {}
    examples = ingest_do(str(base), str(tmp_path / 'out'), pattern='span-{SPAN}/*.parquet',
                         source='parquet', label_column='kind', feature_types='{}',
                         drop_columns='["reading"]', properties=properties)
    assert examples.get_int_custom_property('span') == 2
    assert (properties['num_found'], properties['num_rejected']) == (60, 0)
    spec = inputs.InputSpec.from_json(examples.get_string_custom_property('input_spec'))
    assert spec.kind == 'tabular' and spec.categorical == ('colour', 'where.name')
    assert [name for name, _, _ in spec.numeric] == ['size', 'seen', 'day', 'where.x']
    assert json.loads(examples.get_string_custom_property('missing_values')) == {'size': 12}
    assert json.loads(examples.get_string_custom_property('class_names')) == ['cat', 'dog']


def test_the_records_before_beam_are_the_footers_counts(tmp_path):
    write_parquet(str(tmp_path), 'a.parquet', parquet_table(rows=40), row_group_size=10)
    write_parquet(str(tmp_path), 'b.parquet', parquet_table(rows=7))
    (tmp_path / 'c.parquet').write_bytes(b'not parquet at all')  # quarantined: counts nothing
    source = registry.get('parquet')
    listed = source.list_input(str(tmp_path), 'kind', {}, (), 'utf-8', False)
    options = beam_pipeline.IngestOptions(root=str(tmp_path), source='parquet', **listed)
    assert source.estimated_records(options) == 47
    sizes = [pq.ParquetFile(str(tmp_path / name)).metadata for name in ('a.parquet', 'b.parquet')]
    assert source.estimated_output_bytes(options) == parquet.EXAMPLE_GROWTH * sum(
        meta.row_group(g).total_byte_size for meta in sizes for g in range(meta.num_row_groups))
