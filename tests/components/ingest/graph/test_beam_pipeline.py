"""Unit tests of the ingestion Beam graph on a plain in-memory Beam pipeline (no TFX)."""
import glob
import json
import os

import apache_beam as beam
import pytest
import tensorflow as tf

from core import features
from components.ingest.formats import images, table_rows
from components.ingest.graph import beam_pipeline, registry, stats

from helpers import copy_digits
from ingest_helpers import parquet_table, write_parquet


def _run(root, output_dir, **options):
    opts = beam_pipeline.IngestOptions(root=root, classes=tuple(images.list_classes(root)),
                                       **options)
    pipeline = beam.Pipeline(argv=['--direct_running_mode=in_memory'])
    beam_pipeline.build_ingest(pipeline, opts, output_dir)
    result = pipeline.run()
    result.wait_until_finish()
    beam_pipeline.finalize(output_dir, opts)
    return stats.read_counts(result)


def _read(split_dir):
    records = []
    for path in sorted(glob.glob(os.path.join(split_dir, '*'))):
        records += [tf.train.Example.FromString(r.numpy())
                    for r in tf.data.TFRecordDataset(path, compression_type='GZIP')]
    return records


@pytest.mark.parametrize('num_shards', [1, 3])
def test_writes_configured_shards_and_every_image_once(small_images, tmp_path, num_shards):
    out = str(tmp_path / 'out')
    counts = _run(small_images, out, num_shards=num_shards, train_percent=60)
    for split in features.SPLITS:
        shards = sorted(os.listdir(os.path.join(out, f'Split-{split}')))
        assert len(shards) == num_shards
        assert all(s.startswith('data_tfrecord-') and s.endswith('.gz') for s in shards)
    by_split = {s: _read(os.path.join(out, f'Split-{s}')) for s in features.SPLITS}
    sources = [e.features.feature[features.SOURCE_KEY].bytes_list.value[0].decode()
               for s in features.SPLITS for e in by_split[s]]
    assert sorted(sources) == sorted(
        f'{c}/{f}' for c in os.listdir(small_images) for f in os.listdir(f'{small_images}/{c}'))
    assert {k: v for k, v in counts.items() if v} == {
        'found': 15, 'written_train': len(by_split['train']), 'written_eval': len(by_split['eval'])}
    for split, examples in by_split.items():
        for example in examples:  # each example sits in the split its path hashes to
            source = example.features.feature[features.SOURCE_KEY].bytes_list.value[0].decode()
            assert images.split_of(source, 60) == split


def test_example_content_matches_the_file(small_images, tmp_path):
    out = str(tmp_path / 'out')
    _run(small_images, out)
    example = _read(os.path.join(out, 'Split-train'))[0]
    feature = example.features.feature
    source = feature[features.SOURCE_KEY].bytes_list.value[0].decode()
    with open(os.path.join(small_images, source), 'rb') as handle:
        assert feature[features.IMAGE_KEY].bytes_list.value[0] == handle.read()
    label_name = source.split('/')[0]
    assert feature[features.LABEL_NAME_KEY].bytes_list.value[0].decode() == label_name
    assert feature[features.LABEL_KEY].int64_list.value[0] == ['0', '1', '2'].index(label_name)
    assert feature[features.HEIGHT_KEY].int64_list.value[0] == 8
    assert feature[features.WIDTH_KEY].int64_list.value[0] == 8


def test_bad_files_are_rejected_with_reason_and_counts_reconcile(small_images, tmp_path):
    (open(os.path.join(small_images, '1', 'empty.png'), 'wb')).close()
    with open(os.path.join(small_images, '2', 'notes.txt'), 'w') as handle:
        handle.write('not an image')
    with open(os.path.join(small_images, '0', '.DS_Store'), 'w') as handle:
        handle.write('hidden files are not data')
    os.makedirs(os.path.join(small_images, '2', 'nested'))
    out = str(tmp_path / 'out')
    counts = _run(small_images, out)
    assert counts['found'] == 18 and counts['rejected'] == 3
    assert counts['written_train'] + counts['written_eval'] == 15
    assert (counts['rejected_empty_file'], counts['rejected_not_an_image'],
            counts['rejected_not_a_file']) == (1, 1, 1)
    with open(os.path.join(out, 'Quarantine', 'quarantine.jsonl')) as handle:
        rejected = {os.path.basename(r['source']): (r['reason'], r['detail'])
                    for r in map(json.loads, handle)}
    assert rejected == {
        'empty.png': ('empty_file', 'empty file (0 bytes)'),
        'notes.txt': ('not_an_image', 'not a recognised image format'),
        'nested': ('not_a_file', 'is a folder; images must sit directly in a class folder '
                   '(or, to be scored, in the folder scored)')}


def test_same_records_whatever_the_worker_count(small_images, tmp_path):
    def sources(out, workers):
        opts = beam_pipeline.IngestOptions(root=small_images, classes=('0', '1', '2'))
        pipeline = beam.Pipeline(argv=['--direct_running_mode=multi_threading',
                                       f'--direct_num_workers={workers}'])
        beam_pipeline.build_ingest(pipeline, opts, out)
        pipeline.run().wait_until_finish()
        return {s: sorted(e.SerializeToString() for e in _read(os.path.join(out, f'Split-{s}')))
                for s in features.SPLITS}
    assert sources(str(tmp_path / 'a'), 1) == sources(str(tmp_path / 'b'), 2)


def test_options_are_validated():
    with pytest.raises(ValueError, match='num_shards'):
        beam_pipeline.IngestOptions(root='/x', classes=('a',), num_shards=0)
    with pytest.raises(ValueError, match='train_percent'):
        beam_pipeline.IngestOptions(root='/x', classes=('a',), train_percent=100)
    with pytest.raises(ValueError, match='classes'):
        beam_pipeline.IngestOptions(root='/x', classes=())


class _Ingest(beam.PTransform):
    """One ingestion graph (build_ingest) as a composite, so that two share a Beam pipeline."""

    def __init__(self, options, out):
        super().__init__()
        self.options, self.out = options, out

    def expand(self, begin):
        beam_pipeline.build_ingest(begin, self.options, self.out)
        return beam.pvalue.PDone(begin.pipeline)


def _records_per_split(by_source, out, argv):
    """Runs every source's ingestion in one Beam pipeline (one set of worker processes);
    returns {source: {(split, shard): sorted records}}."""
    pipeline = beam.Pipeline(argv=argv)
    for source, options in by_source.items():
        _ = pipeline | source >> _Ingest(options, os.path.join(out, source))
    pipeline.run().wait_until_finish()

    def read(path):
        return sorted(r.numpy() for r in tf.data.TFRecordDataset(path, compression_type='GZIP'))
    found = {}
    for source, options in by_source.items():
        beam_pipeline.finalize(os.path.join(out, source), options)
        found[source] = {
            (s, shard): read(path) for s in features.SPLITS for shard, path in enumerate(
                sorted(glob.glob(os.path.join(out, source, f'Split-{s}', '*'))))}
    return found


@pytest.fixture(scope='module')
def records_by_mode(tmp_path_factory):
    """Every source's {(split, shard): sorted records}, ingested in one process and by two Beam
    worker processes: ({source: records} in one, the same in two). Every source in each
    pipeline: the two worker processes start once, not once a source (the Parquet source's
    case was a pipeline of its own in formats/test_parquet.py)."""
    tmp_path = tmp_path_factory.mktemp('by_mode')
    images_root = copy_digits(str(tmp_path / 'images'), per_class=5)
    os.makedirs(tmp_path / 'csv')
    for part in range(2):
        rows = ['x,c,label'] + [f'{i}.25,{"pq"[i % 2]},{"ab"[i % 3 == 0]}'
                                for i in range(part * 100, part * 100 + 100)]
        (tmp_path / 'csv' / f'part{part}.csv').write_text('\n'.join(rows) + '\n')
    files = tuple(sorted(glob.glob(str(tmp_path / 'csv' / '*.csv'))))
    for part in range(2):
        write_parquet(str(tmp_path / 'parquet'), f'part-{part}.parquet',
                      parquet_table(rows=100, start=100 * part))
    listed = registry.get('parquet').list_input(str(tmp_path / 'parquet'), 'kind', {}, (),
                                                'utf-8', False)
    by_source = {
        'images': beam_pipeline.IngestOptions(root=images_root, classes=('0', '1', '2'),
                                              num_shards=3),
        'csv': beam_pipeline.IngestOptions(
            root=str(tmp_path / 'csv'), source='csv', files=files, num_shards=3,
            table=table_rows.infer_table(['x', 'c', 'label'], 'label', [])),
        'parquet': beam_pipeline.IngestOptions(root=str(tmp_path / 'parquet'), source='parquet',
                                               num_shards=3, **listed)}
    one = _records_per_split(by_source, str(tmp_path / 'one'), ['--direct_running_mode=in_memory'])
    two = _records_per_split(by_source, str(tmp_path / 'two'), [
        '--direct_running_mode=multi_processing', '--direct_num_workers=2'])
    return one, two


@pytest.mark.slow
def test_same_records_per_split_and_shard_in_one_process_or_two_worker_processes(
        records_by_mode):
    one, two = records_by_mode
    for source, total in (('images', 15), ('csv', 200)):
        assert one[source] == two[source], source
        assert sum(len(v) for v in one[source].values()) == total
        assert len(one[source]) == 6  # 3 shards per split


@pytest.mark.slow
def test_same_parquet_records_in_one_process_or_two_worker_processes(records_by_mode):
    one, two = records_by_mode
    assert one['parquet'] == two['parquet'] and len(one['parquet']) == 6
    # The one list of two values rejected.
    assert sum(len(v) for v in one['parquet'].values()) == 199


def _split_of_sources(out):
    return {e.features.feature[features.SOURCE_KEY].bytes_list.value[0].decode(): split
            for split in features.SPLITS for e in _read(os.path.join(out, f'Split-{split}'))}


def test_content_split_key_keeps_identical_files_in_one_split(small_images, tmp_path):
    for folder in ('0', '1'):  # copies of one image under many names, in two classes
        source = os.path.join(small_images, folder, sorted(os.listdir(
            os.path.join(small_images, folder)))[0])
        for i in range(12):
            with open(source, 'rb') as src, open(f'{source}.copy{i}.png', 'wb') as dst:
                dst.write(src.read())
    out = str(tmp_path / 'out')
    _run(small_images, out, split_key='content')
    splits = _split_of_sources(out)
    for folder in ('0', '1'):
        copies = {s for path, s in splits.items() if path.startswith(f'{folder}/')
                  and '.copy' in path}
        assert len(copies) == 1  # by path, 13 copies would land in both splits


def test_a_csv_column_as_split_key_keeps_an_entity_in_one_split(tmp_path):
    os.makedirs(tmp_path / 'csv')
    rows = ['patient,value,label'] + [f'p{i % 10},{i}.0,{"ab"[i % 2]}' for i in range(200)]
    (tmp_path / 'csv' / 'rows.csv').write_text('\n'.join(rows) + '\n')
    options = beam_pipeline.IngestOptions(
        root=str(tmp_path / 'csv'), source='csv', split_key='patient',
        files=(str(tmp_path / 'csv' / 'rows.csv'),),
        table=table_rows.infer_table(['patient', 'value', 'label'], 'label', []))
    pipeline = beam.Pipeline(argv=['--direct_running_mode=in_memory'])
    beam_pipeline.build_ingest(pipeline, options, str(tmp_path / 'out'))
    pipeline.run().wait_until_finish()
    by_patient = {}
    for split in features.SPLITS:
        for example in _read(str(tmp_path / 'out' / f'Split-{split}')):
            patient = example.features.feature['patient'].bytes_list.value[0].decode()
            by_patient.setdefault(patient, set()).add(split)
    assert len(by_patient) == 10 and all(len(s) == 1 for s in by_patient.values())
    with pytest.raises(ValueError, match='split_key'):
        beam_pipeline.IngestOptions(root='/x', classes=('a',), split_key='patient')
