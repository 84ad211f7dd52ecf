"""pipeline/kubeflow/entrypoint.py: TFX's run_executor, given the ExecutorInput as open-source KFP's
driver hands it over, and as Vertex AI does.

Fast: TFX runs in this process with a recording executor; no pipeline runs. The inputs spec is
built by the functions TFX's compiler uses for --json_serialized_inputs_spec_args (step_builder).
"""
import json

import pytest
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from tfx.dsl.components.base import base_executor
from tfx.orchestration.kubeflow.v2 import compiler_utils
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_run_executor
from tfx.types import channel, standard_artifacts

from pipeline.kubeflow import entrypoint

INPUT_TYPES = {'examples': standard_artifacts.Examples,
               'anomalies': standard_artifacts.ExampleAnomalies}
# One of each parameter type the compiled pipeline has: integer, double, string, JSON string.
PARAMETERS = {'num_shards': 2, 'learning_rate': 0.003, 'source': 'images',
              'input_config': json.dumps({'splits': [{'name': 'images', 'pattern': '*/*'}]})}
RECEIVED = {}


class Recorder(base_executor.BaseExecutor):
    """Keeps what TFX hands the executor, and writes one custom property on its output."""

    def Do(self, input_dict, output_dict, exec_properties):
        RECEIVED.update(inputs=input_dict, outputs=output_dict, exec_properties=exec_properties)
        output_dict['model'][0].set_int_custom_property('trained', 1)


def _schema(artifact_type):
    return compiler_utils.get_artifact_schema(artifact_type).decode()


def _inputs_spec() -> str:
    spec = pipeline_spec_pb2.ComponentInputsSpec()
    for key, artifact_type in INPUT_TYPES.items():
        spec.artifacts[key].CopyFrom(
            compiler_utils.build_input_artifact_spec(channel.Channel(type=artifact_type)))
    for key, value in PARAMETERS.items():
        spec.parameters[key].CopyFrom(compiler_utils.build_parameter_type_spec(value))
    return json_format.MessageToJson(spec, sort_keys=True)


def _executor_input(tmp_path, typed: bool) -> dict:
    """typed=False: open-source KFP (client.go, converter.go, driver.go); True: Vertex AI."""
    def artifact(key, artifact_id, metadata):
        name = (f'projects/p/locations/l/metadataStores/default/artifacts/{artifact_id}'
                if typed else str(artifact_id))  # converter.go toRuntimeArtifact: the MLMD id
        instance_schema = _schema(INPUT_TYPES[key]) if typed else ''  # client.go: Schema ""
        return {'artifacts': [{'name': name, 'uri': str(tmp_path / key), 'metadata': metadata,
                               'type': {'instanceSchema': instance_schema}}]}
    wrap = (lambda kind, value: value) if typed else (lambda kind, value: {kind: value})
    session = {'display_name': 'examples', 'store_session_info': '{"Provider": "gs"}'}
    outputs = {'model': {'artifacts': [{'name': 'model', 'uri': str(tmp_path / 'model'),
                                        'type': {'instanceSchema': _schema(
                                            standard_artifacts.Model)}}]}}
    if not typed:  # driver.go provisionOutputs, publish_logs on (the default from KFP 2.14)
        outputs['executor-logs'] = {'artifacts': [{
            'name': 'executor-logs', 'uri': str(tmp_path / 'executor-logs'),
            'type': {'schemaTitle': 'system.Artifact'}}]}
    return {
        'inputs': {
            'artifacts': {
                'examples': artifact('examples', 17, dict(
                    {} if typed else session, span=3.0, version=0.0,
                    split_names='["train", "eval"]', num_written_train=40.0,
                    column_order=wrap('list', ['image', 'label']))),
                'anomalies': artifact('anomalies', 21, dict(
                    span=3.0, split_names='["train", "eval"]',
                    blessed=wrap('struct', {'train': 1, 'eval': 1})))},
            # resolve.go: the driver fills only parameterValues, from runtimeValue.constant.
            'parameterValues': PARAMETERS},
        'outputs': {'artifacts': outputs, 'outputFile': str(tmp_path / 'output_metadata.json')}}


def _argv(executor_input) -> list:
    return ['kfp_entrypoint', '--executor_class_path', f'{__name__}.Recorder',
            '--json_serialized_invocation_args', json.dumps(executor_input),
            '--json_serialized_inputs_spec_args', _inputs_spec(), '--direct_num_workers=1']


def test_stock_tfx_fails_on_open_source_kfp_inputs(tmp_path):
    argv = _argv(_executor_input(tmp_path, typed=False))
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'get'"):
        kubeflow_v2_run_executor.main(kubeflow_v2_run_executor._parse_flags(argv))


def test_stock_tfx_fails_on_the_executor_logs_output(tmp_path):
    executor_input = _executor_input(tmp_path, typed=True)
    executor_input['outputs']['artifacts']['executor-logs'] = _executor_input(
        tmp_path, typed=False)['outputs']['artifacts']['executor-logs']
    with pytest.raises(ImportError, match='Could not import system.Artifact'):
        kubeflow_v2_run_executor.main(kubeflow_v2_run_executor._parse_flags(_argv(executor_input)))


def test_open_source_kfp_inputs_reach_the_executor_as_locally(tmp_path):
    RECEIVED.clear()
    entrypoint.main(_argv(_executor_input(tmp_path, typed=False)))
    examples, = RECEIVED['inputs']['examples']
    anomalies, = RECEIVED['inputs']['anomalies']
    assert type(examples) is standard_artifacts.Examples
    assert type(anomalies) is standard_artifacts.ExampleAnomalies
    assert (examples.uri, examples.span, examples.split_names) == (
        str(tmp_path / 'examples'), 3, '["train", "eval"]')
    assert examples.get_int_custom_property('num_written_train') == 40
    # ML Metadata's {"list"} / {"struct"} wrappers are gone: the values as the producer set them.
    assert examples.get_json_value_custom_property('column_order') == ['image', 'label']
    assert anomalies.get_json_value_custom_property('blessed') == {'train': 1, 'eval': 1}
    assert RECEIVED['exec_properties'] == PARAMETERS
    assert type(RECEIVED['exec_properties']['num_shards']) is int
    # executor-logs is the launcher's: TFX neither parses it nor reports it back.
    assert set(RECEIVED['outputs']) == {'model'}
    with open(tmp_path / 'output_metadata.json') as handle:
        written = json.load(handle)
    assert set(written['artifacts']) == {'model'}
    assert written['artifacts']['model']['artifacts'][0]['metadata']['trained'] == 1


def test_vertex_inputs_pass_unchanged_and_run(tmp_path):
    executor_input = _executor_input(tmp_path, typed=True)
    invocation = json.dumps(executor_input)
    # Typed inputs are Vertex AI's: left as they are, even a value that looks like a wrapper.
    executor_input['inputs']['artifacts']['examples']['artifacts'][0]['metadata'][
        'column_order'] = {'list': ['image']}
    for text in (invocation, json.dumps(executor_input)):
        assert entrypoint.prepare_invocation(text, _inputs_spec()) is text
    RECEIVED.clear()
    entrypoint.main(_argv(executor_input))
    examples, = RECEIVED['inputs']['examples']
    assert type(examples) is standard_artifacts.Examples and examples.span == 3
    assert examples.get_json_value_custom_property('column_order') == {'list': ['image']}
    assert RECEIVED['exec_properties'] == PARAMETERS


def test_an_untyped_input_the_task_does_not_declare_is_refused(tmp_path):
    invocation = json.dumps(_executor_input(tmp_path, typed=False))
    with pytest.raises(ValueError, match="'anomalies' arrived without a type .* PipelineSpec 2.1"):
        entrypoint.prepare_invocation(invocation, json.dumps(
            {'artifacts': {'examples': json.loads(_inputs_spec())['artifacts']['examples']}}))
    with pytest.raises(ValueError, match='arrived without a type'):
        entrypoint.prepare_invocation(invocation, None)  # a 2.0 spec has no inputs spec


def test_the_ingestion_tasks_driver_work_is_done_here_and_handed_over_as_parameters(tmp_path):
    """Open-source KFP runs no driver: the entry point resolves the latest span and fingerprints
    it (the component's own driver), and TFX gets them as the hook's parameters would reach it."""
    import os
    from PIL import Image
    for span in (1, 2):
        os.makedirs(tmp_path / 'data' / f'span-{span}' / 'a')
        Image.new('L', (8, 8), span).save(tmp_path / 'data' / f'span-{span}' / 'a' / 'x.png')
    parameters = {'input_base': str(tmp_path / 'data'), 'source': 'images', 'num_shards': 2,
                  'input_config': json.dumps({'splits': [
                      {'name': 'images', 'pattern': 'span-{SPAN}/*/*'}]})}
    spec = pipeline_spec_pb2.ComponentInputsSpec()
    for key, value in parameters.items():
        spec.parameters[key].CopyFrom(compiler_utils.build_parameter_type_spec(value))
    ingest = 'components.ingest.executor.Executor'

    def prepared(executor_class_path, **extra):
        executor_input = json_format.ParseDict(
            {'inputs': {'parameterValues': dict(parameters, **extra)},
             'outputs': {'outputFile': str(tmp_path / 'output_metadata.json')}},
            pipeline_spec_pb2.ExecutorInput())
        done = entrypoint.run_driver(executor_input, spec, executor_class_path)
        return done, executor_input.inputs.parameter_values
    done, values = prepared(ingest)
    assert done == ['resolved span 2 and fingerprinted the input (no driver ran)']
    assert values['span'].number_value == 2 and 'version' not in values
    assert values['input_fingerprint'].string_value.startswith('split:images,num_files:1,')
    assert json.loads(values['input_config'].string_value)['splits'][0]['pattern'] == \
        'span-2/*/*'
    # Another task, a driver that ran (its values given, or written to the output file), and
    # input that matches nothing: left as they are, for the executor's checks to name.
    done, values = prepared(f'{__name__}.Recorder')
    assert done == [] and 'span' not in values
    assert values['input_config'].string_value == parameters['input_config']
    assert prepared(ingest, input_fingerprint='hook')[0] == []
    (tmp_path / 'output_metadata.json').write_text('{}')
    assert prepared(ingest)[0] == []
    os.remove(tmp_path / 'output_metadata.json')
    done, values = prepared(ingest, input_base=str(tmp_path / 'nowhere'))
    assert done == [] and 'span' not in values
