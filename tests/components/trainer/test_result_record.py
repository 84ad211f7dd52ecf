"""The TrainResult on the Model artifact (components/trainer/result_record.py): the names and
value types ML Metadata held before the result was typed, and metrics that survive TFX's
Kubeflow entry point (its executor output is JSON, which has no NaN: a diverged loss is recorded
as text)."""
import json
import math
import os

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import pytest
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
from tfx.types import standard_artifacts

from components.trainer import result_record
from training.result import TrainResult

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures')
# The Model's properties the executor records besides the TrainResult.
_NOT_THE_RESULT = ('augment', 'input_channels', 'input_height', 'input_statement', 'input_width',
                   'spans', 'window')


def _fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def _executor_output_json(model) -> str:
    """What TFX's kubeflow_v2_run_executor writes for the Model (the same two calls)."""
    output = pipeline_spec_pb2.ExecutorOutput()
    for key, value in kubeflow_v2_entrypoint_utils.translate_executor_output(
            {'model': [model]}, {}).items():
        output.artifacts[key].CopyFrom(value)
    return json_format.MessageToJson(output)


def _model(uri='/tmp/model'):
    model = standard_artifacts.Model()
    model.uri = uri
    return model


def test_the_names_and_types_recorded_are_those_recorded_before_the_result_was_typed():
    # metrics.json and the Model's properties of one training, both as the executor at
    # abc4031 wrote them (tests/fixtures/).
    model = _model()
    result_record.record(model, TrainResult.from_metrics(_fixture('metrics_abc4031.json')))
    recorded = json_format.MessageToDict(model.mlmd_artifact)['customProperties']
    before = _fixture('model_recorded_abc4031.json')['customProperties']
    assert recorded == {k: v for k, v in before.items() if k not in _NOT_THE_RESULT}
    assert recorded['flip'] == {'intValue': '0'} and recorded['steps_run'] == {'doubleValue': 3.0}


def test_a_plain_nan_float_property_breaks_the_kubeflow_executor_output():
    model = _model()
    model.set_float_custom_property('eval_loss', math.nan)
    with pytest.raises(json_format.SerializeToJsonError, match='NaN'):
        _executor_output_json(model)


@pytest.mark.parametrize('value, recorded', [(math.nan, 'nan'), (math.inf, 'inf'),
                                             (-math.inf, '-inf')])
def test_a_non_finite_metric_is_recorded_as_text_and_serializes(value, recorded):
    model = _model()
    result_record.record(model, TrainResult(eval_loss=value))
    assert model.get_string_custom_property('eval_loss') == recorded
    assert f'"{recorded}"' in _executor_output_json(model)


def test_finite_numbers_stay_floats_and_strings_stay_strings():
    model = _model()
    result_record.record(model, TrainResult(eval_accuracy=0.9125, steps_run=30,
                                            precision_reason='auto: no bf16'))
    assert model.get_float_custom_property('eval_accuracy') == 0.9125
    assert model.get_float_custom_property('steps_run') == 30.0
    assert model.get_string_custom_property('precision_reason') == 'auto: no bf16'
    assert set(model.mlmd_artifact.custom_properties) == {
        'eval_accuracy', 'steps_run', 'precision_reason'}  # what is None is not recorded
    _executor_output_json(model)  # serializes
