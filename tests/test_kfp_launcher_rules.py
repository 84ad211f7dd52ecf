"""The open-source-KFP mode of the launcher stand-in (tests/support/kfp_launcher.py), one rule per
test, on tiny hand-written specs whose tasks record what they were handed
(tests/support/kfp_task_probe.py). Each rule's source in kubeflow/pipelines is named in the
stand-in's code."""
import os
import re

import pytest
from google.protobuf import json_format

import kfp_launcher
from kfp_tiny_specs import EXAMPLES, build, probe, recorded

STRING, INT = 'STRING', 'NUMBER_INTEGER'


@pytest.fixture
def dirs(tmp_path):
    return str(tmp_path / 'root'), str(tmp_path / 'records'), str(tmp_path / 'pods')


def _launcher(dirs, **kwargs):
    os.makedirs(dirs[1], exist_ok=True)
    return kfp_launcher.Launcher(workdir=dirs[2], **kwargs)


def test_parameters_come_as_parameter_values_from_constants(dirs):
    root, records, _ = dirs
    job = build(root, {'A': probe(records, params={
        'text': (STRING, 'x'), 'count': (INT, 3), 'as_text': (STRING, 2),
        'task': (STRING, '{{$.pipeline_task_name}}')})})
    _launcher(dirs).run_job(job, 'run-1')
    inputs = recorded(records, 'A')['executor_input']['inputs']
    assert 'parameters' not in inputs  # the deprecated field KFP never fills
    # A STRING parameter takes any value as text (PbValueToText); placeholders are resolved.
    assert inputs['parameterValues'] == {'text': 'x', 'count': 3, 'as_text': '2', 'task': 'A'}


def test_a_2_0_constant_value_is_refused_with_kfps_message(dirs):
    root, records, _ = dirs
    job = build(root, {'A': probe(records, raw_params={
        'text': {'runtimeValue': {'constantValue': {'stringValue': 'x'}}}})})
    with pytest.raises(kfp_launcher.TaskFailed) as failure:
        _launcher(dirs).run_job(job, 'run-1')
    assert str(failure.value).startswith('driver.Container(pipelineName=rules, runID=run-1, ')
    assert ('failed to resolve inputs: resolving input parameter with spec runtime_value:'
            '{constant_value:{string_value:"x"}}: param runtime value spec of type '
            '*pipelinespec.ValueOrRuntimeParameter_ConstantValue not implemented'
            ) in str(failure.value)
    assert not os.path.exists(os.path.join(records, 'A.json'))  # no pod started


def test_a_parameter_of_the_wrong_type_is_refused(dirs):
    root, records, _ = dirs
    job = build(root, {'A': probe(records, params={'count': (INT, 'three')})})
    with pytest.raises(kfp_launcher.TaskFailed,
                       match='input parameter "count" type mismatch: expect NUMBER_INTEGER, '
                             'got string'):
        _launcher(dirs).run_job(job, 'run-1')


def test_outputs_go_under_pipeline_run_task_uuid_and_the_output_file_stays_in_the_pod(dirs):
    root, records, pods = dirs
    launcher = _launcher(dirs)
    launcher.run_job(build(root, {'A': probe(records, outputs={'out': EXAMPLES})}), 'run-1')
    outputs = recorded(records, 'A')['executor_input']['outputs']
    uri = outputs['artifacts']['out']['artifacts'][0]['uri']
    task_root = re.fullmatch(re.escape(root) + r'/rules/run-1/A/([0-9a-f-]{36})/out', uri)
    assert task_root, uri
    # The executor output file is in the pod's local copy of the task root, never in the bucket.
    assert outputs['outputFile'] == f'{pods}/run-1/A/gcs{os.path.dirname(uri)}/output_metadata.json'
    assert outputs['outputFile'] == launcher.tasks[('run-1', 'A')].pod.local_path_for_uri(
        os.path.dirname(uri)) + '/output_metadata.json'


def test_executor_logs_is_an_extra_system_artifact_output_recorded_with_the_log(dirs):
    root, records, _ = dirs
    outputs = _launcher(dirs).run_job(build(root, {'A': probe(records)}), 'run-1')
    [logs] = recorded(records, 'A')['executor_input']['outputs']['artifacts'][
        'executor-logs']['artifacts']
    assert logs['type'] == {'schemaTitle': 'system.Artifact'} and logs['name'] == 'executor-logs'
    assert logs['uri'].endswith('/executor-logs-0')  # qualifyExecutorLogsForRetry
    [record] = outputs['A'].artifacts['executor-logs'].artifacts
    with open(record.uri) as uploaded:
        assert 'probe ran' in uploaded.read()


def test_publish_logs_off_adds_no_executor_logs(dirs):
    root, records, _ = dirs
    _launcher(dirs, publish_logs=False).run_job(build(root, {'A': probe(records)}), 'run-1')
    assert 'artifacts' not in recorded(records, 'A')['executor_input']['outputs']


def _producer_consumer(records, metadata):
    written = {'artifacts': {'out': {'artifacts': [{'metadata': metadata}]}}}
    return {'A': probe(records, outputs={'out': EXAMPLES}, written=written),
            'B': probe(records, inputs={'examples': ('A', 'out')})}


def test_downstream_inputs_are_untyped_id_named_and_metadata_is_converted(dirs):
    root, records, _ = dirs
    metadata = {'s': 'x', 'n': 3, 'flag': True, 'l': [1, 'a'], 'd': {'k': 'v'}}
    launcher = _launcher(dirs)
    outputs = launcher.run_job(build(root, _producer_consumer(records, metadata)), 'run-1')
    [given] = recorded(records, 'B')['executor_input']['inputs']['artifacts'][
        'examples']['artifacts']
    artifact_id = outputs['A'].artifacts['out'].artifacts[0].name
    assert given['name'] == artifact_id == str(int(artifact_id))  # the ML Metadata id
    assert given['type'] == {'instanceSchema': ''}
    assert given['metadata'] == {
        's': 'x', 'n': 3, 'flag': 1, 'l': {'list': [1, 'a']}, 'd': {'struct': {'k': 'v'}},
        'display_name': 'out',
        'store_session_info': '{"Provider":"gs","Params":{"fromEnv":"true"}}'}


def test_a_null_metadata_value_fails_the_task_after_its_executor_succeeded(dirs):
    root, records, _ = dirs
    launcher = _launcher(dirs)
    with pytest.raises(kfp_launcher.TaskFailed) as failure:
        launcher.run_job(build(root, _producer_consumer(records, {'x': None})), 'run-1')
    assert str(failure.value).startswith(
        'failed to execute component: unable to produce MLMD artifact for output "out": failed '
        'to convert RuntimeArtifact to MLMD artifact: unknown/unsupported value type '
        '*structpb.Value_NullValue')
    assert os.path.exists(os.path.join(records, 'A.json'))  # the executor had finished
    [failed] = [e for e in launcher.store.executions.values()
                if e.type == 'system.ContainerExecution']
    assert failed.last_known_state == failed.FAILED


def test_inputs_are_copied_into_the_pods_local_mirror_before_the_task(dirs):
    root, records, _ = dirs
    launcher = _launcher(dirs)
    launcher.run_job(build(root, _producer_consumer(records, {})), 'run-1')
    uri = recorded(records, 'B')['executor_input']['inputs']['artifacts']['examples'][
        'artifacts'][0]['uri']
    mirror = launcher.tasks[('run-1', 'B')].pod.local_path_for_uri(uri)
    with open(os.path.join(mirror, 'data.txt')) as copied:
        assert copied.read() == 'out'
    assert mirror.startswith(launcher.workdir) and '/gcs/' in mirror


def test_the_executor_output_is_merged_uri_and_metadata_only(dirs):
    root, records, _ = dirs
    written = {'artifacts': {
        'out': {'artifacts': [
            {'name': 'mine', 'uri': f'{root}/elsewhere', 'type': {'schemaTitle': 'x.Other'},
             'metadata': {'k': 'v'}},
            {'uri': f'{root}/ignored'}]},
        'undeclared': {'artifacts': [{'uri': f'{root}/nothing'}]}}}
    launcher = _launcher(dirs)
    outputs = launcher.run_job(build(root, {'A': probe(
        records, outputs={'out': EXAMPLES}, written=written)}), 'run-1')
    assert set(outputs['A'].artifacts) == {'out', 'executor-logs'}
    [out] = outputs['A'].artifacts['out'].artifacts
    assert out.uri == f'{root}/elsewhere' and json_format.MessageToDict(out.metadata)['k'] == 'v'
    assert launcher.store.type_names[int(out.name)] == 'tfx.Examples'  # the declared type


def test_no_lifecycle_hook_runs(dirs):
    root, records, _ = dirs
    hook = [['python', 'tests/support/kfp_task_probe.py'], ['{{$}}', '--hook']]
    _launcher(dirs).run_job(build(root, {'A': probe(records, hook=hook)}), 'run-1')
    assert recorded(records, 'A')['found_output'] is None


def test_a_failing_command_fails_the_task_and_records_only_its_log(dirs):
    root, _, _ = dirs
    launcher = _launcher(dirs)
    job = build(root, {'A': {'command': ['python', '-c', 'print("boom"); raise SystemExit(3)'],
                             'outputs': {'out': EXAMPLES}}})
    with pytest.raises(kfp_launcher.TaskFailed, match='^failed to execute component: exit '
                                                       'status 3\nboom'):
        launcher.run_job(job, 'run-1')
    [execution_id] = [i for i, e in launcher.store.executions.items()
                      if e.type == 'system.ContainerExecution']
    assert list(launcher.store.output_artifacts(execution_id)) == ['executor-logs']


def test_a_pipeline_root_kfp_cannot_use_is_refused():
    job = build('hdfs://data/root', {'A': {'command': ['python', '-c', '']}})
    with pytest.raises(kfp_launcher.TaskFailed, match='parse bucket config failed: unsupported '
                                                      'Cloud bucket: "hdfs://data/root"'):
        kfp_launcher.Launcher().run_job(job, 'run-1')


# An s3:// or minio:// root: the object store's Secret reaches every task through the platform
# spec (driver/k8s.go extendPodSpecPatch, then the kubelet); the values here are made up.
SECRET = 'mlpipeline-minio-artifact'
KEYS = {'accesskey': 'made-up-access', 'secretkey': 'made-up-secret'}
_NAMES = ('AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY')


def _env(records, task):
    """The task's object-store variables (the stand-in's tasks also inherit this process's
    environment, which a pod would not)."""
    return {k: v for k, v in recorded(records, task)['env'].items() if k in _NAMES}


def _platform(executors, secret=SECRET, **extra):
    config = {'secretAsEnv': [dict({'secretNameParameter': {'runtimeValue': {'constant': secret}},
                                    'keyToEnv': [
                                        {'secretKey': 'accesskey', 'envVar': 'AWS_ACCESS_KEY_ID'},
                                        {'secretKey': 'secretkey',
                                         'envVar': 'AWS_SECRET_ACCESS_KEY'}]}, **extra)]}
    return {'platforms': {'kubernetes': {'deploymentSpec': {'executors': {
        label: config for label in executors}}}}}


def test_secret_as_env_and_the_container_env_reach_the_task(dirs):
    root, records, _ = dirs
    job = build(root, {'A': probe(records, env={'AWS_ENDPOINT_URL': 'http://store:9000'}),
                       'B': probe(records)})
    _launcher(dirs, secrets={SECRET: KEYS}).run_job(job, 'run-1', _platform(['A_executor']))
    assert _env(records, 'A') == {
        'AWS_ENDPOINT_URL': 'http://store:9000', 'AWS_ACCESS_KEY_ID': 'made-up-access',
        'AWS_SECRET_ACCESS_KEY': 'made-up-secret'}
    assert _env(records, 'B') == {}  # only the executors the platform spec names


def test_the_deprecated_secret_name_is_read_when_there_is_no_parameter(dirs):
    root, records, _ = dirs
    platform = _platform(['A_executor'])
    config = platform['platforms']['kubernetes']['deploymentSpec']['executors']['A_executor']
    config['secretAsEnv'][0] = {'secretName': 'other', 'keyToEnv': [
        {'secretKey': 'accesskey', 'envVar': 'AWS_ACCESS_KEY_ID'}]}
    _launcher(dirs, secrets={'other': KEYS}).run_job(build(root, {'A': probe(records)}), 'r',
                                                      platform)
    assert _env(records, 'A') == {'AWS_ACCESS_KEY_ID': 'made-up-access'}


@pytest.mark.parametrize('secrets, message', [
    ({}, 'secret "mlpipeline-minio-artifact" not found'),
    ({SECRET: {'accesskey': 'a'}}, "couldn't find key secretkey in Secret "
                                   'kubeflow/mlpipeline-minio-artifact'),
])
def test_a_missing_secret_or_key_keeps_the_pod_from_starting(dirs, secrets, message):
    root, records, _ = dirs
    with pytest.raises(kfp_launcher.TaskFailed, match=re.escape(
            f'the pod of task A does not start: CreateContainerConfigError: {message}')):
        _launcher(dirs, secrets=secrets).run_job(build(root, {'A': probe(records)}), 'run-1',
                                                 _platform(['A_executor']))
    assert not os.path.exists(os.path.join(records, 'A.json'))  # the command never ran


def test_a_secret_reference_without_a_name_fails_the_driver(dirs):
    root, records, _ = dirs
    platform = _platform(['A_executor'])
    config = platform['platforms']['kubernetes']['deploymentSpec']['executors']['A_executor']
    del config['secretAsEnv'][0]['secretNameParameter']
    with pytest.raises(kfp_launcher.TaskFailed, match='missing either SecretName or '
                                                      'SecretNameParameter'):
        _launcher(dirs, secrets={SECRET: KEYS}).run_job(build(root, {'A': probe(records)}),
                                                        'run-1', platform)


def test_a_cached_task_needs_no_secret(dirs):
    root, records, _ = dirs
    launcher = _launcher(dirs, secrets={SECRET: KEYS})
    job = build(root, {'A': probe(records, outputs={'out': EXAMPLES})})
    launcher.run_job(job, 'run-1', _platform(['A_executor']))
    launcher.secrets.clear()  # the Secret is deleted: a cache hit starts no pod
    launcher.run_job(job, 'run-2', _platform(['A_executor']))
    assert launcher.tasks[('run-2', 'A')].cached


def test_the_pods_name_uid_and_namespace_come_from_the_launcher_never_the_image(dirs):
    """As KFP 2.17.0's binaries record them (compared by hand): the driver creates the execution
    with image, namespace, pod name and uid all "" (container.go sets none of them), the
    launcher's prePublish fills the pod's three; a cache hit starts no pod and keeps them "".
    The run's DAG execution is named run/<run id>."""
    root, records, _ = dirs
    launcher = _launcher(dirs)
    job = build(root, {'A': probe(records, outputs={'out': EXAMPLES})})
    launcher.run_job(job, 'run-1')
    launcher.run_job(job, 'run-2')
    executions = launcher.store.executions

    def props(run):
        record = executions[launcher.tasks[(run, 'A')].execution_id]
        return {key: record.custom_properties[key].string_value
                for key in ('image', 'namespace', 'pod_name', 'pod_uid')}
    ran, cached = props('run-1'), props('run-2')
    assert ran['image'] == '' and ran['namespace'] == 'kubeflow'
    assert ran['pod_name'] == 'run-1-A' and ran['pod_uid']
    assert cached == {'image': '', 'namespace': '', 'pod_name': '', 'pod_uid': ''}
    assert sorted(e.name for e in executions.values() if e.type == 'system.DAGExecution') == [
        'run/run-1', 'run/run-2']
