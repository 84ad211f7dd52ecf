"""TFX's stock BulkInferrer executor on an exported model: both Example signatures are consumable.

BulkInferrer is the batch-scoring component of the TFX stack; it takes the model's
`classify` signature through tfx_bsl's `_post_process_classify` and `serving_default` through
its predict path, which splits every output row by row. One PredictionLog per example, with
the class the brightness model predicts (tests/support/saved_models.py).
"""
import glob

import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2
from tfx.components.bulk_inferrer import executor as bulk_inferrer_executor
from tfx.dsl.components.base import base_beam_executor
from tfx.proto import bulk_inferrer_pb2
from tfx.types import standard_artifacts
from tfx.types import standard_component_specs as specs
from tfx.utils import proto_utils

import saved_models
from core import features
from components.score import predictions
from training import export
from helpers import IN_PROCESS_BEAM

CLASSES = ('dark', 'bright')
BRIGHTNESS = {'dark': [0.05, 0.2, 0.3], 'bright': [0.7, 0.95]}
# Brightness 0.3 is nearer 0.1 than 0.9, so every example is predicted as its own class.
EXPECTED = sorted((f'{name}/{i}.png', name) for name, values in BRIGHTNESS.items()
                  for i in range(len(values)))


@pytest.fixture(scope='module')
def artifacts(tmp_path_factory):
    root = tmp_path_factory.mktemp('bulk')
    return (saved_models.eval_examples(root / 'examples', BRIGHTNESS),
            saved_models.exported_model(root / 'model', CLASSES, centers=[0.1, 0.9]), root)


def _infer(artifacts, signature):
    examples, model, root = artifacts
    result = standard_artifacts.InferenceResult()
    result.uri = str(root / f'result-{signature}')
    context = base_beam_executor.BaseBeamExecutor.Context(
        beam_pipeline_args=IN_PROCESS_BEAM)
    bulk_inferrer_executor.Executor(context).Do(
        {specs.EXAMPLES_KEY: [examples], specs.MODEL_KEY: [model]},
        {specs.INFERENCE_RESULT_KEY: [result]},
        {specs.DATA_SPEC_KEY: proto_utils.proto_to_json(bulk_inferrer_pb2.DataSpec()),
         specs.MODEL_SPEC_KEY: proto_utils.proto_to_json(
             bulk_inferrer_pb2.ModelSpec(model_signature_name=[signature]))})
    logs = []
    for path in sorted(glob.glob(f'{result.uri}/prediction_logs-*.gz')):
        for record in tf.data.TFRecordDataset(path, compression_type='GZIP'):
            logs.append(prediction_log_pb2.PredictionLog.FromString(record.numpy()))
    return logs


def _source(example: tf.train.Example) -> str:
    return example.features.feature[features.SOURCE_KEY].bytes_list.value[0].decode()


def test_classify_signature_gives_one_classification_per_example(artifacts):
    logs = _infer(artifacts, export.CLASSIFY_SIGNATURE)
    assert len(logs) == len(EXPECTED)
    predicted = {}
    for log in logs:
        assert log.WhichOneof('log_type') == 'classify_log'
        (example,) = log.classify_log.request.input.example_list.examples
        (classification,) = log.classify_log.response.result.classifications
        assert [c.label for c in classification.classes] == list(CLASSES)
        assert sum(c.score for c in classification.classes) == pytest.approx(1.0, abs=1e-5)
        predicted[_source(example)] = max(classification.classes, key=lambda c: c.score).label
    assert sorted(predicted.items()) == EXPECTED
    # The scoring rows (components/score) read the same logs: source, class, top-k.
    rows = predictions.rows(logs, version=7)
    assert [(r['source'], r['class'], r['model_version']) for r in rows] == [
        (source, name, 7) for source, name in EXPECTED]


def test_serving_default_gives_one_prediction_per_example(artifacts):
    logs = _infer(artifacts, 'serving_default')
    assert len(logs) == len(EXPECTED)
    predicted = {}
    for log in logs:
        assert log.WhichOneof('log_type') == 'predict_log'
        (serialized,) = log.predict_log.request.inputs[export.SIGNATURE_INPUT].string_val
        outputs = log.predict_log.response.outputs
        names = tf.make_ndarray(outputs['class_names'])
        assert names.shape == (1, 1)
        assert tf.make_ndarray(outputs['probabilities']).shape == (1, len(CLASSES))
        class_id = int(tf.make_ndarray(outputs['class_ids'])[0])
        assert CLASSES[class_id] == names[0, 0].decode()
        predicted[_source(tf.train.Example.FromString(serialized))] = names[0, 0].decode()
    assert sorted(predicted.items()) == EXPECTED
