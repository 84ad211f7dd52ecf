"""Training metrics on the Model artifact survive TFX's Kubeflow entry point: its executor
output is JSON, which has no NaN, so a diverged loss is recorded as text
(components/trainer/executor.record_metric)."""
import math

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import pytest
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
from tfx.types import standard_artifacts

from components.trainer import executor


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


def test_a_plain_nan_float_property_breaks_the_kubeflow_executor_output():
    model = _model()
    model.set_float_custom_property('eval_loss', math.nan)
    with pytest.raises(json_format.SerializeToJsonError, match='NaN'):
        _executor_output_json(model)


@pytest.mark.parametrize('value, recorded', [(math.nan, 'nan'), (math.inf, 'inf'),
                                             (-math.inf, '-inf')])
def test_a_non_finite_metric_is_recorded_as_text_and_serializes(value, recorded):
    model = _model()
    executor.record_metric(model, 'eval_loss', value)
    assert model.get_string_custom_property('eval_loss') == recorded
    assert f'"{recorded}"' in _executor_output_json(model)


def test_finite_numbers_stay_floats_and_strings_stay_strings():
    model = _model()
    executor.record_metric(model, 'eval_accuracy', 0.9125)
    executor.record_metric(model, 'steps_run', 30)
    executor.record_metric(model, 'precision_reason', 'auto: no bf16')
    assert model.get_float_custom_property('eval_accuracy') == 0.9125
    assert model.get_float_custom_property('steps_run') == 30.0
    assert model.get_string_custom_property('precision_reason') == 'auto: no bf16'
    _executor_output_json(model)  # serializes
