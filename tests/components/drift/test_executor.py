"""DriftCheck's executor on real records: the served version's training data found from its
training_data.json, its statistics computed once and kept, every value recorded."""
import json
import os

import tensorflow as tf
import tensorflow_data_validation as tfdv
from tfx import version as tfx_version
from tfx.types import artifact_utils, standard_artifacts

from core import features, properties
from components.drift import executor, training_data

import saved_models

UNIFORM = {'bag': 25, 'coat': 25, 'dress': 25, 'shirt': 25}
DRIFTED = {'bag': 84, 'coat': 6, 'dress': 5, 'shirt': 5}
PROPERTIES = {'max_label_drift': 0.30, 'max_categorical_drift': 0.30,
              'max_numeric_drift': 0.15, 'max_image_drift': 0.30}


def _span(folder, label_counts, size=8):
    """A span's Split-train as ingestion writes it (gzip TFRecords of tf.Examples)."""
    split = os.path.join(folder, 'Split-train')
    os.makedirs(split)
    with tf.io.TFRecordWriter(os.path.join(split, 'data_tfrecord-00000-of-00001.gz'),
                              options='GZIP') as writer:
        for label, (name, count) in enumerate(sorted(label_counts.items())):
            for i in range(count):
                writer.write(features.make_example(saved_models.png(0.5, size), label, name,
                                                   size, size, f'{name}/{i}.png')
                             .SerializeToString())
    return str(folder)


def _statistics(tmp_path, span_folder):
    """What StatisticsGen gives for the new span."""
    stats = standard_artifacts.ExampleStatistics()
    stats.uri = str(tmp_path / 'statistics')
    stats.split_names = artifact_utils.encode_split_names(['train'])
    stats.set_string_custom_property('tfx_version', tfx_version.__version__)
    os.makedirs(os.path.join(stats.uri, 'Split-train'))
    computed = tfdv.generate_statistics_from_tfrecord(
        os.path.join(span_folder, 'Split-train', '*'),
        output_path=str(tmp_path / 'scratch' / 'stats.tfrecord'))
    with open(os.path.join(stats.uri, 'Split-train', 'FeatureStats.pb'), 'wb') as handle:
        handle.write(computed.SerializeToString())  # StatisticsGen's binary file
    return stats


def _examples(span_folder, sizes, modes):
    examples = standard_artifacts.Examples()
    examples.uri = span_folder
    examples.set_string_custom_property('image_sizes', json.dumps(sizes))
    examples.set_string_custom_property('color_modes', json.dumps(modes))
    return examples


def _served(tmp_path, version, window):
    """A served version's folder as the Pusher leaves it, and the baseline artifact naming it."""
    path = tmp_path / 'serving' / str(version)
    os.makedirs(path, exist_ok=True)
    if window is not None:
        os.makedirs(path / 'assets.extra', exist_ok=True)
        (path / 'assets.extra' / 'training_data.json').write_text(json.dumps({'window': window}))
    baseline = standard_artifacts.Model()
    baseline.uri = str(tmp_path / 'baseline')
    baseline.set_int_custom_property('served_version', version)
    baseline.set_string_custom_property('served_path', str(path))
    return baseline


def _entry(span, uri, n, sizes=None, modes=None):
    return {'span': span, 'uri': uri, 'fingerprint': f'fp{span}', 'num_train': n,
            'num_eval': 0, 'image_sizes': sizes, 'color_modes': modes}


def _run(tmp_path, statistics, examples, baseline, name='drift'):
    drift = standard_artifacts.ExampleAnomalies()
    drift.uri = str(tmp_path / name)
    executor.Executor().Do(
        {'statistics': [statistics], 'examples': [examples], 'baseline': [baseline]},
        {'drift': [drift]}, dict(PROPERTIES, pipeline_root=str(tmp_path / 'root')))
    return drift


def _record(drift):
    return {key: json.loads(drift.get_string_custom_property(key))
            for key in (properties.DRIFT_VALUES, properties.DRIFT_REASONS)}


def test_a_drifted_label_mix_over_a_two_span_window_is_measured_and_named(tmp_path):
    window = [_entry(1, _span(tmp_path / 'span1', UNIFORM), 100, {'8x8': 100}, {'L': 100}),
              _entry(2, _span(tmp_path / 'span2', UNIFORM), 100, {'8x8': 100}, {'L': 100})]
    new = _span(tmp_path / 'span3', DRIFTED)
    drift = _run(tmp_path, _statistics(tmp_path, new),
                 _examples(new, {'8x8': 100}, {'L': 100}), _served(tmp_path, 1, window))
    record = _record(drift)
    label, size, mode = record[properties.DRIFT_VALUES]
    assert (label['feature'], label['measure'], round(label['value'], 4), label['exceeded']) == (
        'label', 'L-infinity', 0.59, True)
    assert (size['feature'], size['value'], mode['feature'], mode['value']) == (
        'image size', 0.0, 'colour mode', 0.0)
    assert record[properties.DRIFT_REASONS] == [
        'label L∞ 0.59 > 0.30 vs the data of served version 1']
    assert drift.get_int_custom_property(properties.COMPARED_VERSION) == 1
    assert drift.get_string_custom_property(properties.DRIFT_TEXT) == (
        'drift: label L∞ 0.59 > 0.30 vs the data of served version 1')
    with open(os.path.join(drift.uri, executor.RECORD_FILE)) as handle:
        assert json.load(handle)[properties.DRIFT_REASONS] == record[properties.DRIFT_REASONS]
    # The window's statistics were kept, keyed by the window, and are read back next time:
    # a later run finds them although the spans' folders are gone.
    kept = tmp_path / 'root' / '_drift' / training_data.cache_key(window) / 'train_stats.pb'
    assert kept.is_file() and not [n for n in os.listdir(kept.parent) if n.startswith('.tmp')]
    tf.io.gfile.rmtree(str(tmp_path / 'span1'))
    os.makedirs(tmp_path / 'again')
    again = _run(tmp_path, _statistics(tmp_path / 'again', new),
                 _examples(new, {'8x8': 100}, {'L': 100}), _served(tmp_path, 1, window),
                 name='drift2')
    assert _record(again) == record


def test_the_same_mix_is_below_every_threshold_and_still_recorded(tmp_path):
    window = [_entry(1, _span(tmp_path / 'span1', UNIFORM), 100, {'8x8': 100}, {'L': 100})]
    new = _span(tmp_path / 'span2', UNIFORM, size=12)  # another image size, same labels
    drift = _run(tmp_path, _statistics(tmp_path, new),
                 _examples(new, {'12x12': 100}, {'L': 100}), _served(tmp_path, 4, window))
    values = {v['feature']: v for v in _record(drift)[properties.DRIFT_VALUES]}
    assert values['label']['value'] == 0.0 and not values['label']['exceeded']
    # Every image changed size: the size mix moved entirely.
    assert values['image size']['value'] == 1.0 and values['image size']['exceeded']
    assert _record(drift)[properties.DRIFT_REASONS] == [
        'image size L∞ 1.00 > 0.30 vs the data of served version 4']


def test_nothing_is_compared_on_a_first_run_or_without_a_record_of_the_training_data(tmp_path):
    new = _span(tmp_path / 'span1', UNIFORM)
    statistics, examples = _statistics(tmp_path, new), _examples(new, {'8x8': 100}, {'L': 100})
    empty = standard_artifacts.Model()
    empty.uri = str(tmp_path / 'empty')
    empty.set_int_custom_property('served_version', -1)
    first = _run(tmp_path, statistics, examples, empty, name='first')
    assert _record(first) == {properties.DRIFT_VALUES: [], properties.DRIFT_REASONS: []}
    assert first.get_int_custom_property(properties.COMPARED_VERSION) == -1
    assert first.get_string_custom_property(properties.DRIFT_TEXT) == (
        'drift: not measured (nothing served yet)')
    unrecorded = _run(tmp_path, statistics, examples, _served(tmp_path, 2, None), name='old')
    assert _record(unrecorded)[properties.DRIFT_VALUES] == []
    assert unrecorded.get_string_custom_property(properties.DRIFT_TEXT) == (
        'drift: not measured (served version 2 does not record the data it was trained on '
        '(assets.extra/training_data.json))')
    other = _served(tmp_path, 5, None)
    other.set_string_custom_property('incompatible_reason', "served model predicts classes "
                                     "['0', '1']; this model predicts ['a', 'b']")
    assert _run(tmp_path, statistics, examples, other, name='other').get_string_custom_property(
        properties.DRIFT_TEXT) == ("drift: not measured (served version 5 is not comparable: "
                                    "served model predicts classes ['0', '1']; this model "
                                    "predicts ['a', 'b'])")
    gone = _run(tmp_path, statistics, examples, _served(tmp_path, 3, [
        _entry(7, str(tmp_path / 'deleted'), 10)]), name='gone')
    assert gone.get_string_custom_property(properties.DRIFT_TEXT) == (
        f'drift: not measured (the train data of span 7 is no longer at {tmp_path}/deleted, '
        'the data of served version 3)')
