"""Unit tests of the report's readers, pictures and page on small artifacts written here.

The statistics and anomalies are real TFDV protos in the files the stock components write; the
events are real TensorBoard event files. The whole-pipeline report is checked in
tests/test_serving_e2e.py.
"""
import json
import os

import numpy as np
from PIL import Image
import tensorflow as tf
from ml_metadata.proto import metadata_store_pb2
from tensorflow_metadata.proto.v0 import anomalies_pb2, statistics_pb2

from pipeline import summary as summary_lib
from pipeline.report import page, plots, readers


def _artifact(uri, splits=('train', 'eval'), artifact_id=1, **custom):
    artifact = metadata_store_pb2.Artifact(uri=str(uri), id=artifact_id)
    artifact.properties['split_names'].string_value = json.dumps(list(splits))
    for key, value in custom.items():
        if isinstance(value, int):
            artifact.custom_properties[key].int_value = value
        else:
            artifact.custom_properties[key].string_value = value
    return artifact


def _write_statistics(uri, counts_by_split):
    for split, counts in counts_by_split.items():
        stats = statistics_pb2.DatasetFeatureStatisticsList()
        dataset = stats.datasets.add(num_examples=sum(counts.values()))
        label = dataset.features.add()
        label.path.step.append('label_name')
        for name, count in counts.items():
            label.string_stats.rank_histogram.buckets.add(label=name, sample_count=count)
        height = dataset.features.add()
        height.path.step.append('image/height')
        height.num_stats.min, height.num_stats.max = 8, 12
        os.makedirs(os.path.join(uri, f'Split-{split}'))
        with open(os.path.join(uri, f'Split-{split}', 'FeatureStats.pb'), 'wb') as handle:
            handle.write(stats.SerializeToString())
    return _artifact(uri, splits=tuple(counts_by_split))


def _write_anomalies(uri, anomalous_split):
    for split in ('train', 'eval'):
        found = anomalies_pb2.Anomalies()
        if split == anomalous_split:
            found.anomaly_info['label_name'].short_description = 'Unexpected string values'
            found.anomaly_info['label_name'].description = 'Examples contain value "x".'
        os.makedirs(os.path.join(uri, f'Split-{split}'))
        with open(os.path.join(uri, f'Split-{split}', 'SchemaDiff.pb'), 'wb') as handle:
            handle.write(found.SerializeToString())
    return _artifact(uri)


def test_data_summary_counts_classes_per_split_from_statistics(tmp_path):
    stats = _write_statistics(str(tmp_path / 'stats'), {'train': {'b': 5, 'a': 7},
                                                        'eval': {'a': 2, 'b': 1}})
    summary = readers.data_summary(stats)
    assert summary['train'].class_counts == {'a': 7, 'b': 5}
    assert summary['eval'].num_examples == 3
    assert summary['train'].image_sizes == {'height': (8, 12)}


def test_anomalies_are_text_per_split_and_empty_when_clean(tmp_path):
    found = readers.anomalies_by_split(_write_anomalies(str(tmp_path / 'anomalies'), 'eval'))
    assert found['train'] == ''
    assert 'label_name: Unexpected string values' in found['eval']


def test_training_curves_come_from_tensorboard_events(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path / 'run'))
    with writer.as_default():
        for step in (10, 20, 30):
            tf.summary.scalar('train/loss', 1.0 / step, step=step)
        tf.summary.scalar('eval/accuracy', 0.75, step=30)
    writer.flush()
    curves = readers.training_curves(_artifact(tmp_path / 'run'))
    assert [s for s, _ in curves['train/loss']] == [10, 20, 30]
    np.testing.assert_allclose([v for _, v in curves['train/loss']], [0.1, 0.05, 1 / 30],
                               rtol=1e-6)
    assert curves['eval/accuracy'] == [(30, 0.75)]


def test_pictures_are_png_files_of_a_readable_size(tmp_path):
    names = [
        plots.class_counts({'train': {'a': 3, 'b': 4}, 'eval': {'a': 1}}, str(tmp_path)),
        plots.training_curves({'train/loss': [(1, 2.0), (2, 1.0)], 'eval/loss': [(2, 1.5)],
                               'train/accuracy': [(1, 0.5), (2, 0.7)]}, str(tmp_path)),
        plots.confusion_matrix(np.array([[3.0, 1.0], [0.0, 4.0]]), ['a', 'b'], str(tmp_path)),
    ]
    for name in names:
        with Image.open(tmp_path / name) as image:
            assert image.format == 'PNG' and image.size[0] >= 300 and image.size[1] >= 250


def test_a_run_stopped_by_the_gate_still_gets_every_section(tmp_path):
    stats = _write_statistics(str(tmp_path / 'stats'), {'train': {'a': 3}, 'eval': {'a': 1}})
    anomalies = _write_anomalies(str(tmp_path / 'anomalies'), 'train')
    examples = _artifact(tmp_path / 'examples', class_names=json.dumps(['a']))
    summary = summary_lib.RunSummary(
        run_id='r1', states={'StatisticsGen': 'COMPLETE', 'AnomalyGate': 'FAILED'},
        outputs={'Examples': [examples], 'ExampleStatistics': [stats],
                 'ExampleAnomalies': [anomalies]})
    path = page.write_report(summary, str(tmp_path / 'out'))
    text = open(path, encoding='utf-8').read()
    for section in page.SECTIONS:
        assert f'<h2 id="{section.lower()}">{section}</h2>' in text
    assert 'train: <span class="no">anomalies</span>' in text and 'value &quot;x&quot;' in text
    assert 'stopped before training' in text and 'The Pusher did not run' in text
    assert os.path.exists(tmp_path / 'out' / 'data_classes.png')
