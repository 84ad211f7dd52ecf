"""pipeline/kubeflow/entrypoint.py on an object-store root (SeaweedFS, tests/support/seaweedfs.py):
minio:// URIs read as s3:// inside the task and handed back to KFP as they came, and a run whose
artifacts KFP puts outside the compiled root refused."""
import json

import pytest
import tensorflow as tf
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from tfx.dsl.components.base import base_executor
from tfx.orchestration.kubeflow.v2 import compiler_utils
from tfx.types import standard_artifacts

from pipeline.kubeflow import entrypoint, task_record

RECEIVED = {}


class Writer(base_executor.BaseExecutor):
    """Writes one file into its output, as every TFX executor writes its own artifacts."""

    def Do(self, input_dict, output_dict, exec_properties):
        RECEIVED.update(outputs=output_dict, exec_properties=exec_properties)
        model, = output_dict['model']
        with tf.io.gfile.GFile(model.uri + '/weights.bin', 'wb') as handle:
            handle.write(b'weights')


def _argv(tmp_path, root: str, model_uri: str) -> list:
    spec = pipeline_spec_pb2.ComponentInputsSpec()
    spec.parameters['pipeline_root'].CopyFrom(compiler_utils.build_parameter_type_spec(root))
    executor_input = {
        'inputs': {'parameterValues': {'pipeline_root': root}},
        'outputs': {'artifacts': {'model': {'artifacts': [{
            'name': 'model', 'uri': model_uri, 'type': {'instanceSchema': (
                compiler_utils.get_artifact_schema(standard_artifacts.Model).decode())}}]}},
            'outputFile': str(tmp_path / 'output_metadata.json')}}
    return ['kfp_entrypoint', '--executor_class_path', f'{__name__}.Writer',
            '--json_serialized_invocation_args', json.dumps(executor_input),
            '--json_serialized_inputs_spec_args', json_format.MessageToJson(spec)]


def test_minio_uris_are_s3_inside_and_minio_to_kfp(s3, tmp_path):
    minio_root = f'minio://{s3.name}/v2/artifacts'
    model = f'{minio_root}/image-pipeline/run-1/Trainer/salt/model'
    RECEIVED.clear()
    entrypoint.main(_argv(tmp_path, minio_root, model))
    received, = RECEIVED['outputs']['model']
    assert received.uri == 's3://' + model[len('minio://'):]
    assert RECEIVED['exec_properties']['pipeline_root'] == f's3://{s3.name}/v2/artifacts'
    task = 'v2/artifacts/image-pipeline/run-1/Trainer/salt/'
    keys = s3.keys('v2/')
    assert sorted(keys) == [task + 'model/weights.bin', task + task_record.RECORD_NAME]
    # The task's record beside its output (pipeline/kubeflow/task_record.py), URIs as s3://.
    with tf.io.gfile.GFile(s3.uri(task + task_record.RECORD_NAME)) as handle:
        record = json.load(handle)
    assert record['state'] == 'COMPLETE' and record['inputs'] == []
    assert [(o['key'], o['uri'], o['type']) for o in record['outputs']] == [
        ('model', 's3://' + model[len('minio://'):], 'Model')]
    with open(tmp_path / 'output_metadata.json') as handle:
        written = json.load(handle)
    # As KFP's launcher named it: it refuses a URI outside its minio:// bucket configuration.
    assert written['artifacts']['model']['artifacts'][0]['uri'] == model


def test_a_run_outside_the_compiled_root_is_refused(s3, tmp_path):
    compiled = f's3://{s3.name}/team/pipeline_root'
    # KFP's default root, as a run created without one gets it (config/env.go).
    elsewhere = f'minio://{s3.name}/v2/artifacts/image-pipeline/run-1/Trainer/salt/model'
    with pytest.raises(ValueError, match='outside the pipeline root it was compiled for'):
        entrypoint.main(_argv(tmp_path, compiled, elsewhere))
    assert s3.keys() == {}
    # Under it: runs (a root given without a trailing slash, one with).
    RECEIVED.clear()
    entrypoint.main(_argv(tmp_path, compiled + '/', f'{compiled}/run-1/Trainer/model'))
    assert sorted(s3.keys()) == ['team/pipeline_root/run-1/Trainer/model/weights.bin',
                                 'team/pipeline_root/run-1/Trainer/' + task_record.RECORD_NAME]


def test_minio_inside_a_json_parameter_is_read_as_s3():
    """The Pusher's push_destination is a proto as JSON text (TFX's exec property), its
    base_directory a minio:// URI on a minio:// root; other text stays as it is."""
    destination = json.dumps({'filesystem': {'base_directory': 'minio://b/kfp/serving'}})
    assert json.loads(entrypoint.parameter_to_s3(destination)) == \
        {'filesystem': {'base_directory': 's3://b/kfp/serving'}}
    assert entrypoint.parameter_to_s3('minio://b/x') == 's3://b/x'
    assert entrypoint.parameter_to_s3('see minio://b/x, "gs://b/y"') == \
        'see minio://b/x, "gs://b/y"'
