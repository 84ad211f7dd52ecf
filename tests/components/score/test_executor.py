"""ScoringModel's and ScoreWriter's executors on artifacts made here (no pipeline run)."""
import json
import os

import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2
from tfx.types import standard_artifacts

from core import features
from components.score import executor
from components.score.served import ScoringError


def _version(serving, version):
    os.makedirs(serving / str(version) / 'variables')
    (serving / str(version) / 'saved_model.pb').write_bytes(b'graph')
    (serving / str(version) / 'variables' / 'variables.index').write_bytes(b'index')


def test_the_model_executor_places_the_served_version_and_names_it(tmp_path):
    for version in (1, 2):
        _version(tmp_path / 'serving', version)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'model')
    executor.ModelExecutor().Do({}, {'model': [model]},
                                {'serving_dir': str(tmp_path / 'serving'), 'version': 0})
    assert model.get_int_custom_property('model_version') == 2
    assert model.get_string_custom_property('model_path') == str(tmp_path / 'serving' / '2')
    assert os.path.isfile(tmp_path / 'model' / 'Format-Serving' / 'saved_model.pb')


def _inputs(tmp_path, sources, found, rejected):
    result = standard_artifacts.InferenceResult()
    result.uri = str(tmp_path / 'inference')
    os.makedirs(result.uri)
    path = os.path.join(result.uri, 'prediction_logs-00000-of-00001.gz')
    with tf.io.TFRecordWriter(path, 'GZIP') as writer:
        for source in sources:
            log = prediction_log_pb2.PredictionLog()
            example = log.classify_log.request.input.example_list.examples.add()
            example.features.feature[features.SOURCE_KEY].bytes_list.value.append(
                source.encode())
            example.features.feature[features.IMAGE_KEY].bytes_list.value.append(b'png')
            classes = log.classify_log.response.result.classifications.add().classes
            for label, score in (('cat', 0.75), ('dog', 0.25)):
                klass = classes.add()
                klass.label, klass.score = label, score
            writer.write(log.SerializeToString())
    examples = standard_artifacts.Examples()
    examples.uri = str(tmp_path / 'examples')
    quarantine = tmp_path / 'examples' / 'Quarantine' / 'quarantine.jsonl'
    os.makedirs(quarantine.parent)
    quarantine.write_text('{"reason": "empty_file", "source": "e.png"}\n' * rejected)
    examples.set_string_custom_property('quarantine_uri', str(quarantine))
    for name, value in (('num_found', found), ('num_rejected', rejected),
                        ('num_rejected_empty_file', rejected), ('num_written_train', 0)):
        examples.set_int_custom_property(name, value)
    model = standard_artifacts.Model()
    model.set_int_custom_property('model_version', 5)
    model.set_string_custom_property('model_path', '/serving/5')
    out = standard_artifacts.InferenceResult()
    out.uri = str(tmp_path / 'predictions')
    return {'inference_result': [result], 'examples': [examples], 'model': [model]}, out


def test_the_writer_writes_the_artifact_and_publishes_the_output_folder(tmp_path):
    inputs, out = _inputs(tmp_path, ['a.png', 'b.png'], found=3, rejected=1)
    final = tmp_path / 'scores' / 'run-v5'
    executor.WriterExecutor().Do(inputs, {'predictions': [out]}, {
        'input_base': '/in', 'output_dir': str(final), 'top_k': 1})
    for folder in (out.uri, str(final)):
        with open(os.path.join(folder, 'predictions.jsonl')) as handle:
            rows = [json.loads(line) for line in handle]
        assert [(r['source'], r['class'], r['top_k']) for r in rows] == [
            ('a.png', 'cat', [['cat', 0.75]]), ('b.png', 'cat', [['cat', 0.75]])]
        with open(os.path.join(folder, 'summary.json')) as handle:
            summary = json.load(handle)
        assert (summary['inputs'], summary['scored'], summary['quarantined']) == (3, 2, 1)
        assert summary['model_version'] == 5 and summary['input'] == '/in'
        assert open(os.path.join(folder, 'quarantine.jsonl')).read().count('empty_file') == 1
    assert (out.get_int_custom_property('num_scored'),
            out.get_int_custom_property('model_version')) == (2, 5)


def test_the_writer_refuses_counts_that_do_not_reconcile(tmp_path):
    inputs, out = _inputs(tmp_path, ['a.png'], found=3, rejected=1)  # one input lost
    with pytest.raises(ScoringError, match='Counts do not reconcile: 3 inputs, 1 scored'):
        executor.WriterExecutor().Do(inputs, {'predictions': [out]}, {
            'input_base': '/in', 'output_dir': str(tmp_path / 'final'), 'top_k': 3})
    assert not os.path.exists(tmp_path / 'final')
