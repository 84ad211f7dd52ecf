"""Our transcribed KFP driver and launcher-v2 as programs (tests/support/kfp_driver_cli.py,
kfp_launcher_cli.py): the flags as Go's flag package parses them, the refusals with KFP's
messages and exit codes, the driver's output files, and what it writes in ML Metadata over gRPC
(kfp_mlmd_server.py), asks the cache (kfp_cache_server.py) and reads from Kubernetes (the real
cluster's API server: those tests are marked `cluster`). Each expectation here was checked
against KFP 2.17.0's own binaries, built by hand (never in CI): the usage text, the error lines,
and the files, MLMD contents and cache calls of the same ROOT_DAG and CONTAINER runs. The
launcher's run of a task needs a pod's file system (/s3, /tmp/kfp): the pipeline's runs on the
real cluster cover it (tests/cluster/test_kfp_pipeline.py).
"""
import json
import stat
import subprocess
import sys

import pytest
from google.protobuf import struct_pb2
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2 as mlmd_pb

import kfp_cache_server
import kfp_driver_cli
import kfp_k8s_client
import kfp_launcher_cli
import kfp_mlmd_client
import kfp_mlmd_server
import kfp_task_api

PROXIES = ['--http_proxy', '', '--https_proxy', '', '--no_proxy', '']
COMPONENT = {'executorLabel': 'exec-a',
             'inputDefinitions': {'parameters': {'n': {'parameterType': 'NUMBER_INTEGER'},
                                                 's': {'parameterType': 'STRING'}}},
             'outputDefinitions': {
                 'artifacts': {'model': {'artifactType': {'schemaTitle': 'system.Model'}}},
                 'parameters': {'count': {'parameterType': 'NUMBER_INTEGER'}}}}
TASK = {'taskInfo': {'name': 'A'}, 'componentRef': {'name': 'A'},
        'cachingOptions': {'enableCache': True},
        'inputs': {'parameters': {'n': {'runtimeValue': {'constant': 7}},
                                  's': {'runtimeValue': {'constant': '{{$.pipeline_task_name}}'}}}}}
CONTAINER = {'image': 'example.com/x:1', 'command': ['python3', '-m', 'task'], 'args': ['{{$}}'],
             'env': [{'name': 'AWS_REGION', 'value': 'us-east-1'}]}
K8S = {'secretAsEnv': [{'keyToEnv': [{'envVar': 'AWS_ACCESS_KEY_ID', 'secretKey': 'accesskey'}],
                        'secretNameParameter': {'runtimeValue': {'constant': 'creds'}}}]}


def _run(program, argv, capsys):
    code = program.main(argv)
    return code, capsys.readouterr().err


# --- flags -------------------------------------------------------------------------------------
@pytest.mark.parametrize('program', [kfp_driver_cli, kfp_launcher_cli])
def test_an_unknown_flag_is_refused_as_gos_flag_package_does(program, capsys):
    code, err = _run(program, ['--bogus=1'], capsys)
    assert code == 2
    assert err.startswith('flag provided but not defined: -bogus\nUsage of ')
    assert '\n  -log_level string\n    \tThe verbosity level to log. (default "1")\n' in err


def test_help_prints_the_usage_and_exits_0(capsys):
    code, err = _run(kfp_driver_cli, ['-h'], capsys)
    assert code == 0
    # The lines of the real `driver -help` (Go's PrintDefaults, glog's flags among them).
    for line in ('  -component string\n    \tcomponent spec (default "{}")',
                 '  -cache_disabled\n    \tDisable cache globally.',
                 '  -dag_execution_id int\n    \tDAG execution ID',
                 '  -default_run_as_user int\n    \tAdmin-configured default runAsUser for user '
                 'containers. -1 means not set. (default -1)',
                 '  -stderrthreshold value\n    \tlogs at or above this threshold go to stderr '
                 '(default 2)',
                 '  -v value\n    \tlog level for V logs'):
        assert line in err


@pytest.mark.parametrize('argv, message', [
    (['-type'], 'flag needs an argument: -type'),
    (['---type=x'], 'bad flag syntax: ---type=x'),
    (['--dag_execution_id=08'], 'invalid value "08" for flag -dag_execution_id: parse error'),
    (['--dag_execution_id', '99999999999999999999'],
     'invalid value "99999999999999999999" for flag -dag_execution_id: value out of range'),
    (['--cache_disabled=maybe'], 'invalid boolean value "maybe" for -cache_disabled: parse error'),
    (['-v', 'x'], 'invalid value "x" for flag -v: strconv.Atoi: parsing "x": invalid syntax'),
    (['-stderrthreshold=7'],
     'invalid value "7" for flag -stderrthreshold: Severity 7 out of range (min 0, max 3).'),
])
def test_bad_values_are_refused_with_gos_messages(argv, message, capsys):
    code, err = _run(kfp_driver_cli, argv, capsys)
    assert (code, err.splitlines()[0]) == (2, message)


def test_flag_forms_and_where_parsing_stops():
    flags = kfp_launcher_cli.kfp_goflag.FlagSet('launcher-v2', kfp_launcher_cli.FLAGS)
    flags.parse(['-execution_id=0x10', '--pod_name', 'p', '--cache_disabled', '-vmodule=a=1',
                 '--', 'python', '--pod_uid', 'u'])
    assert (flags['execution_id'], flags['pod_name'], flags['cache_disabled']) == (16, 'p', True)
    assert flags['pod_uid'] == '' and flags.args == ['python', '--pod_uid', 'u']
    # A bool flag takes no separate value: "false" is the first non-flag and parsing stops.
    flags = kfp_launcher_cli.kfp_goflag.FlagSet('launcher-v2', kfp_launcher_cli.FLAGS)
    flags.parse(['--cache_disabled', 'false', '--pod_name', 'p'])
    assert flags['cache_disabled'] is True and flags['pod_name'] == ''
    assert flags.args == ['false', '--pod_name', 'p']


# --- refusals ------------------------------------------------------------------------------------
def test_the_driver_wants_the_type_and_the_three_proxy_flags(capsys):
    code, err = _run(kfp_driver_cli, ['--type', 'ROOT_DAG', '--http_proxy', ''], capsys)
    assert code == 1
    assert err.splitlines()[-1].endswith(
        '] KFP driver: argument --https_proxy is required but can be an empty value')
    code, err = _run(kfp_driver_cli, PROXIES, capsys)
    assert err.splitlines()[-1].endswith('] KFP driver: argument --type must be specified')


@pytest.fixture()
def cluster(tmp_path, monkeypatch):
    """ML Metadata and the task service on the loopback, the real cluster's API server, and this
    process as a pod of a namespace of its own: KFP's `pipeline-runner` service account there
    (its token, the cluster's CA and the namespace in a service-account folder), the in-cluster
    variables naming the API gateway (tests/support/real_cluster.py)."""
    import real_cluster
    import real_kfp
    space = real_cluster.Namespace('kfp')
    real_kfp.runner_account(space.name)
    account = tmp_path / 'serviceaccount'
    account.mkdir()
    (account / 'token').write_text(real_cluster.kubectl(
        'create', 'token', real_kfp.SERVICE_ACCOUNT, '-n', space.name).strip())
    (account / 'namespace').write_text(space.name)
    (account / 'ca.crt').write_text(real_cluster.ca_certificate())
    monkeypatch.setattr(kfp_k8s_client, 'SERVICE_ACCOUNT', str(account))
    monkeypatch.setenv('KUBERNETES_SERVICE_HOST', real_cluster.layout.API_SERVICE_IP)
    monkeypatch.setenv('KUBERNETES_SERVICE_PORT', '443')
    mlmd = kfp_mlmd_server.Server(str(tmp_path / 'mlmd.sqlite')).start()
    cache = kfp_cache_server.Server().start()
    yield {'namespace': space.name, 'mlmd': mlmd, 'cache': cache, 'out': tmp_path / 'out',
           'servers': ['--mlmd_server_address', '127.0.0.1', '--mlmd_server_port',
                       str(mlmd.port), '--ml_pipeline_server_address', '127.0.0.1',
                       '--ml_pipeline_server_port', str(cache.port)]}
    cache.stop()
    mlmd.stop()
    space.delete()


@pytest.mark.cluster
def test_unknown_types_end_as_kfps_driver_ends(cluster, capsys):
    code, err = _run(kfp_driver_cli, ['--type', 'FOO'] + PROXIES + cluster['servers'], capsys)
    # main.go leaves the execution nil for an unknown type; handleExecution dereferences it.
    assert code == 2 and err.splitlines()[-2] == (
        'panic: runtime error: invalid memory address or nil pointer dereference')
    code, err = _run(kfp_driver_cli, ['--type', 'DAG'] + PROXIES + cluster['servers'], capsys)
    assert code == 1 and 'driver.DAG (backend/src/v2/driver/dag.go) is not transcribed' in err


@pytest.mark.cluster
def test_the_launcher_checks_its_options_before_running_anything(cluster, capsys):
    base = ['--executor_input', '{}', '--component_spec', '{}'] + cluster['servers']
    for argv, message in (
            ([], 'failed to create component launcher v2: must specify execution ID'),
            (['--execution_id', '5'] + base,
             'failed to create component launcher v2: command and arguments are empty'),
            (['--execution_id', '5'] + base + ['--', 'true'],
             'failed to create component launcher v2: invalid launcher options: must specify '
             'PodName'),
            (['--executor_type', 'bogus'], 'unsupported executor type bogus')):
        code, err = _run(kfp_launcher_cli, argv, capsys)
        assert code == 1 and err.splitlines()[-1].endswith('] ' + message), err
    assert cluster['mlmd'].calls == {}  # nothing asked of ML Metadata


def test_copy_writes_an_executable_that_runs_this_launcher(tmp_path, capsys):
    target = tmp_path / 'launch'
    assert kfp_launcher_cli.main(['--copy', str(target), '--execution_id', 'ignored?']) == 2
    assert not target.exists()  # flag errors come first
    assert kfp_launcher_cli.main(['--copy', str(target)]) == 0
    assert stat.S_IMODE(target.stat().st_mode) & 0o555 == 0o555
    run = subprocess.run([str(target), '-bogus'], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and 'flag provided but not defined: -bogus' in run.stderr
    assert kfp_launcher_cli.main(['--copy', str(tmp_path / 'no' / 'launch')]) == 1
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        f"] copy this binary to {tmp_path}/no/launch: open {tmp_path}/no/launch: "
        'no such file or directory')


# --- the driver's runs ---------------------------------------------------------------------------
def _root_driver(cluster, run_id, capsys, runtime_config=None):
    out = cluster['out'] / run_id / 'root'
    if runtime_config is None:
        runtime_config = {'gcsOutputDirectory': 's3://bucket/kfp'}
    argv = (['--type', 'ROOT_DAG', '--pipeline_name', 'p', '--run_id', run_id,
             '--runtime_config', json.dumps(runtime_config),
             '--execution_id_path', str(out / 'execution-id'), '--iteration_count_path',
             str(out / 'iteration-count'), '--condition_path', str(out / 'condition')]
            + PROXIES + cluster['servers'])
    code, err = _run(kfp_driver_cli, argv, capsys)
    assert code == 0, err
    return {p.name: p.read_text() for p in out.iterdir()}


def _container_driver(cluster, run_id, dag_id, capsys):
    out = cluster['out'] / run_id / 'A'
    argv = (['--type', 'CONTAINER', '--pipeline_name', 'p', '--run_id', run_id,
             '--dag_execution_id', dag_id, '--component', json.dumps(COMPONENT),
             '--task', json.dumps(TASK), '--task_name', 'A', '--container',
             json.dumps(CONTAINER), '--kubernetes_config', json.dumps(K8S),
             '--cached_decision_path', str(out / 'cached-decision'), '--pod_spec_patch_path',
             str(out / 'pod-spec-patch'), '--condition_path', str(out / 'condition')]
            + PROXIES + cluster['servers'])
    code, err = _run(kfp_driver_cli, argv, capsys)
    assert code == 0, err
    return {p.name: p.read_text() for p in out.iterdir()}


def _store(cluster):
    return metadata_store.MetadataStore(mlmd_pb.MetadataStoreClientConfig(
        host='127.0.0.1', port=cluster['mlmd'].port))


def _props(record):
    return {k: getattr(v, v.WhichOneof('value')) for k, v in record.custom_properties.items()
            if k not in ('inputs', 'outputs')}


@pytest.mark.cluster
def test_root_dag_then_a_container_task_then_its_cache_hit(cluster, capsys):
    namespace = cluster['namespace']
    cluster['cache'].service.add_run('run-1', namespace)
    cluster['cache'].service.add_run('run-2', namespace)
    assert _root_driver(cluster, 'run-1', capsys) == {
        'execution-id': '1', 'iteration-count': '0', 'condition': 'nil'}
    store = _store(cluster)
    pipeline, run = store.get_contexts()
    assert (pipeline.name, pipeline.type, run.name, run.type) == (
        'p', 'system.Pipeline', 'run-1', 'system.PipelineRun')
    assert _props(run) == {'namespace': namespace, 'resource_name': 'run-resource',
                           'pipeline_root': 's3://bucket/kfp/p/run-1',
                           'store_session_info': '{"Provider":"s3","Params":{"fromEnv":"true"}}'}
    [dag] = store.get_executions()
    assert (dag.name, dag.type, dag.last_known_state, _props(dag)) == (
        'run/run-1', 'system.DAGExecution', mlmd_pb.Execution.RUNNING,
        {'display_name': '', 'task_name': ''})
    assert 'inputs' not in dag.custom_properties  # no parameterValues in the runtime config

    files = _container_driver(cluster, 'run-1', '1', capsys)
    assert (files['cached-decision'], files['condition']) == ('false', 'nil')
    [main] = json.loads(files['pod-spec-patch'])['containers']
    assert list(main) == ['name', 'image', 'command', 'args', 'env', 'resources']
    command = main['command']
    assert command[:7] == ['/kfp-launcher/launch', '--pipeline_name', 'p', '--run_id', 'run-1',
                           '--execution_id', '2']
    # (KFP's driver adds --publish_logs twice.)
    assert command[-5:] == ['--publish_logs', 'true', '--publish_logs', 'true', '--']
    executor_input = json.loads(command[command.index('--executor_input') + 1])
    assert executor_input['inputs'] == {'parameterValues': {'n': 7, 's': 'A'}}
    outputs = executor_input['outputs']
    model_uri = outputs['artifacts']['model']['artifacts'][0]['uri']
    assert model_uri.startswith('s3://bucket/kfp/p/run-1/A/') and model_uri.endswith('/model')
    assert outputs['parameters'] == {'count': {'outputFile': '/tmp/kfp/outputs/count'}}
    assert outputs['outputFile'] == '/s3/' + model_uri[len('s3://'):-len('model')] + \
        'output_metadata.json'
    # The driver adds executor-logs to the component's own outputs (a shared Go map).
    component = json.loads(command[command.index('--component_spec') + 1])
    assert set(component['outputDefinitions']['artifacts']) == {'model', 'executor-logs'}
    assert main['args'] == ['python3', '-m', 'task', '{{$}}']
    assert main['env'] == [{'name': 'AWS_REGION', 'value': 'us-east-1'},
                           {'name': 'AWS_ACCESS_KEY_ID', 'valueFrom': {'secretKeyRef': {
                               'name': 'creds', 'key': 'accesskey'}}}]
    assert main['resources'] == {}
    task = store.get_executions_by_id([2])[0]
    props = _props(task)
    fingerprint = props.pop('cache_fingerprint')
    assert (task.type, task.last_known_state, props) == (
        'system.ContainerExecution', mlmd_pb.Execution.RUNNING,
        {'display_name': 'A', 'task_name': 'A', 'parent_dag_id': 1, 'image': '',
         'namespace': '', 'pod_name': '', 'pod_uid': ''})
    [listing] = [c for c in cluster['cache'].service.calls if c[0] == 'ListTasksV1']
    assert json.loads(listing[1]['filter'])['predicates'][0]['stringValue'] == fingerprint

    # What the launcher does when the task succeeds (kfp_mlmd_client, as launcher_v2.go).
    client = kfp_mlmd_client.Client('127.0.0.1', str(cluster['mlmd'].port))
    execution = client.pre_publish_execution(client.get_execution(2), 'pod-a', 'uid-a',
                                             namespace)
    runtime = kfp_mlmd_client.kfp_mlmd.to_runtime_artifact(mlmd_pb.Artifact(uri=model_uri), '')
    runtime.metadata.fields['span'].number_value = 3
    model = client.record_artifact('model', 'title: system.Model', runtime,
                                   mlmd_pb.Artifact.LIVE, 'null')
    logs_uri = outputs['artifacts']['executor-logs']['artifacts'][0]['uri'] + '-0'
    logs = client.record_artifact('executor-logs', 'title: system.Artifact',
                                  kfp_mlmd_client.kfp_mlmd.to_runtime_artifact(
                                      mlmd_pb.Artifact(uri=logs_uri), ''),
                                  mlmd_pb.Artifact.LIVE, 'null')
    client.publish_execution(execution, {'count': struct_pb2.Value(number_value=42)},
                             [model, logs], mlmd_pb.Execution.COMPLETE)
    entry = kfp_task_api.Task(pipelineName='pipeline/p', namespace=namespace, runId='run-1',
                              mlmdExecutionID='2', fingerprint=fingerprint)
    entry.created_at.seconds = entry.finished_at.seconds = 1796450000
    kfp_task_api.Client('127.0.0.1', str(cluster['cache'].port)).create_execution_cache(entry)

    assert _root_driver(cluster, 'run-2', capsys)['execution-id'] == '3'
    files = _container_driver(cluster, 'run-2', '3', capsys)
    assert files == {'cached-decision': 'true', 'condition': 'nil'}  # no pod spec patch
    cached = store.get_executions_by_id([4])[0]
    assert cached.last_known_state == mlmd_pb.Execution.CACHED
    assert _props(cached)['cached_execution_id'] == '2'
    assert _props(cached)['cache_fingerprint'] == fingerprint
    assert _props(cached)['pod_name'] == '' and _props(cached)['namespace'] == ''
    assert cached.custom_properties['outputs'].struct_value['count'] == 42
    events = store.get_events_by_execution_ids([4])
    # Every output of the task, executor-logs too, is the older execution's artifact of that
    # name (driver/cache.go collectOutputArtifactMetadataFromCache: one missing fails the task).
    assert sorted((e.type, e.artifact_id, e.path.steps[0].key) for e in events) == [
        (mlmd_pb.Event.OUTPUT, model.artifact.id, 'model'),
        (mlmd_pb.Event.OUTPUT, logs.artifact.id, 'executor-logs')]


@pytest.mark.cluster
def test_the_root_driver_reads_the_namespace_s_kfp_launcher_config_map(cluster, capsys):
    """A run without a root takes the `kfp-launcher` ConfigMap's defaultPipelineRoot, read from
    the real API server with the service account's token (config.FromConfigMap); without the
    ConfigMap, KFP's default minio root."""
    import real_cluster
    namespace = cluster['namespace']
    _root_driver(cluster, 'run-default', capsys, runtime_config={})
    real_cluster.kubectl('create', 'configmap', 'kfp-launcher', '-n', namespace,
                         '--from-literal=defaultPipelineRoot=s3://from-config-map/root')
    _root_driver(cluster, 'run-mapped', capsys, runtime_config={})
    roots = {c.name: c.custom_properties['pipeline_root'].string_value
             for c in _store(cluster).get_contexts() if c.type == 'system.PipelineRun'}
    assert roots == {'run-default': 'minio://mlpipeline/v2/artifacts/p/run-default',
                     'run-mapped': 's3://from-config-map/root/p/run-mapped'}


@pytest.mark.cluster
def test_a_missing_dag_execution_fails_after_the_contexts_exist(cluster, capsys):
    out = cluster['out'] / 'x'
    argv = (['--type', 'CONTAINER', '--pipeline_name', 'p', '--run_id', 'r', '--task',
             json.dumps(TASK), '--task_name', 'A', '--dag_execution_id', '99',
             '--cached_decision_path', str(out / 'cd'), '--condition_path', str(out / 'c')]
            + PROXIES + cluster['servers'])
    code, err = _run(kfp_driver_cli, argv, capsys)
    assert code == 1
    assert err.splitlines()[-1].endswith(
        '] KFP driver: driver.Container(pipelineName=p, runID=r, taskDisplayName="A", '
        'taskName="A", component="A", dagExecutionID=99, KubernetesExecutorConfig) failed: '
        'failed to get DAG executionID=99: execution ID=99 not found')
    assert not out.exists()  # no execution: no output file
    assert sorted(c.name for c in _store(cluster).get_contexts()) == ['p', 'r']


def test_the_driver_runs_as_a_script():
    run = subprocess.run([sys.executable, kfp_driver_cli.__file__, '-h'], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0 and run.stderr.startswith('Usage of ')


@pytest.mark.cluster
def test_the_fingerprint_and_arguments_are_the_real_drivers(cluster, capsys):
    """KFP 2.17.0's driver, given these flags, recorded cache_fingerprint 1ed5817b... and wrote
    these arguments (run by hand against the same servers): Go's float64 JSON in the cache key
    (7, 0.00001, HTML characters escaped), %g for an argument's placeholder."""
    component = {'executorLabel': 'exec-a', 'inputDefinitions': {'parameters': {
        'n': {'parameterType': 'NUMBER_INTEGER'}, 'x': {'parameterType': 'NUMBER_DOUBLE'},
        'l': {'parameterType': 'LIST'}, 'd': {'parameterType': 'STRUCT'},
        's': {'parameterType': 'STRING'}}}, 'outputDefinitions': {
        'artifacts': {'model': {'artifactType': {'schemaTitle': 'system.Model'}}},
        'parameters': {'count': {'parameterType': 'NUMBER_INTEGER'}}}}
    task = {'taskInfo': {'name': 'A'}, 'componentRef': {'name': 'A'},
            'cachingOptions': {'enableCache': True}, 'inputs': {'parameters': {
                'n': {'runtimeValue': {'constant': 7}},
                'x': {'runtimeValue': {'constant': 0.00001}},
                'l': {'runtimeValue': {'constant': [1, 'a<b', 2.5]}},
                'd': {'runtimeValue': {'constant': {'z': 1.5, 'a': True}}},
                's': {'runtimeValue': {'constant': 'q&r'}}}}}
    container = {'image': 'example.com/x:1', 'command': ['python3', '-m', 'task'],
                 'args': ['{{$}}', "{{$.inputs.parameters['x']}}"]}
    _root_driver(cluster, 'run-1', capsys)
    out = cluster['out'] / 'A'
    code, err = _run(kfp_driver_cli, [
        '--type', 'CONTAINER', '--pipeline_name', 'p', '--run_id', 'run-1',
        '--dag_execution_id', '1', '--component', json.dumps(component), '--task',
        json.dumps(task), '--task_name', 'A', '--container', json.dumps(container),
        '--cached_decision_path', str(out / 'cd'), '--pod_spec_patch_path', str(out / 'p'),
        '--condition_path', str(out / 'c')] + PROXIES + cluster['servers'], capsys)
    assert code == 0, err
    record = _store(cluster).get_executions_by_id([2])[0]
    assert record.custom_properties['cache_fingerprint'].string_value == (
        '1ed5817b4ceb3786e79e82be4730f8599e1e8077296cc622f5f8f35a6676eeda')
    [main] = json.loads((out / 'p').read_text())['containers']
    assert main['args'] == ['python3', '-m', 'task', '{{$}}', '1e-05']
    executor_input = main['command'][main['command'].index('--executor_input') + 1]
    assert executor_input.startswith(
        '{"inputs":{"parameterValues":{"d":{"a":true,"z":1.5},"l":[1,"a<b",2.5],"n":7,'
        '"s":"q&r","x":0.00001}},"outputs":{"parameters":{"count":{"outputFile":')
