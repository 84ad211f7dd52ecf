"""Unit tests of the report's readers and pictures on small artifacts written here: real TFDV
statistics and anomalies in the files the stock components write, real TensorBoard events."""
import numpy as np
from PIL import Image
import tensorflow as tf

from pipeline.report import plots, readers
from report_inputs import artifact, write_anomalies, write_statistics


def test_data_summary_counts_classes_per_split_from_statistics(tmp_path):
    stats = write_statistics(str(tmp_path / 'stats'), {'train': {'b': 5, 'a': 7},
                                                        'eval': {'a': 2, 'b': 1}})
    summary = readers.data_summary(stats)
    assert summary['train'].class_counts == {'a': 7, 'b': 5}
    assert summary['eval'].num_examples == 3
    assert summary['train'].image_sizes == {'height': (8, 12)}


def test_anomalies_are_text_per_split_and_empty_when_clean(tmp_path):
    found = readers.anomalies_by_split(write_anomalies(str(tmp_path / 'anomalies'), 'eval'))
    assert found['train'] == ''
    assert 'label_name: Unexpected string values' in found['eval']


def test_training_curves_come_from_tensorboard_events(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path / 'run'))
    with writer.as_default():
        for step in (10, 20, 30):
            tf.summary.scalar('train/loss', 1.0 / step, step=step)
        tf.summary.scalar('eval/accuracy', 0.75, step=30)
    writer.flush()
    curves = readers.training_curves(artifact(tmp_path / 'run'))
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
