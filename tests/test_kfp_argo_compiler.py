"""The transcription of KFP 2.17.0's backend compiler (tests/support/kfp_argo_compiler.py): the
rules it copies, each checked on a small upload, and our own pipeline compiled by runner.py.

Its output was compared by hand with the real compiler (KFP's API server code, built by hand,
never committed): equal Workflows (dict equality) for our pipeline on s3://, minio:// and gs://
roots, with --trainer-workers 2, and for hand-made specs like the ones below; the refusals here
carry the real compiler's messages. These tests pin the rules so that CI, which cannot build KFP,
notices when one changes.
"""
import hashlib
import json
import os

import pytest
import yaml
from google.protobuf import json_format
from kfp import client as kfp_client

import kfp_argo_compiler
import kfp_argo_templates
import kfp_go_json
import kfp_tiny_specs
from kfp_argo_compiler import CompileError, compile_run

SECRET_CONFIG = {'secretAsEnv': [{'secretName': 'store', 'keyToEnv': [
    {'secretKey': 'accesskey', 'envVar': 'AWS_ACCESS_KEY_ID'}]}]}


def _spec(tasks=None, name='tiny') -> dict:
    """A small PipelineSpec dict: A produces `out`, B consumes it (kfp_tiny_specs's shapes)."""
    tasks = tasks or {'A': kfp_tiny_specs.probe('/rec', outputs={'out': kfp_tiny_specs.EXAMPLES}),
                      'B': kfp_tiny_specs.probe('/rec', inputs={'examples': ('A', 'out')})}
    job = kfp_tiny_specs.build('gs://b/r', tasks, name=name)
    return json_format.MessageToDict(job.pipeline_spec)


def _upload(spec: dict, platform: dict = None) -> str:
    """The upload's text: the spec, then the platform spec as a second YAML document."""
    return yaml.safe_dump_all([spec] + ([platform] if platform else []))


def _platform(*labels) -> dict:
    return {'platforms': {'kubernetes': {'deploymentSpec': {'executors': {
        label: SECRET_CONFIG for label in labels}}}}}


def _template(workflow: dict, name: str) -> dict:
    [template] = [t for t in workflow['spec']['templates'] if t['name'] == name]
    return template


def _tasks(workflow: dict, dag: str = 'root') -> dict:
    return {t['name']: t for t in _template(workflow, dag)['dag']['tasks']}


def _arguments(workflow: dict) -> dict:
    return {p['name']: p['value'] for p in workflow['spec']['arguments']['parameters']}


def _params(task: dict) -> dict:
    return {p['name']: p.get('value') for p in task['arguments']['parameters']}


def test_templates_and_the_entrypoint():
    workflow = compile_run(_upload(_spec()), 's3://b/root', 'run-42', name='nightly')
    # dag.go / container.go add each system template on first use; the root DAG after its tasks.
    assert [t['name'] for t in workflow['spec']['templates']] == [
        'system-container-driver', 'system-container-executor', 'system-container-impl', 'root',
        'system-dag-driver', 'entrypoint']
    driver, root = _template(workflow, 'entrypoint')['dag']['tasks']
    assert driver['name'] == 'root-driver' and driver['template'] == 'system-dag-driver'
    assert _params(driver) == {'component': '{{workflow.parameters.components-root}}',
                               'runtime-config': '{"gcsOutputDirectory":"s3://b/root"}',
                               'driver-type': 'ROOT_DAG'}
    assert root['depends'] == 'root-driver.Succeeded'
    assert _params(root) == {
        'parent-dag-id': '{{tasks.root-driver.outputs.parameters.execution-id}}', 'condition': ''}
    assert workflow['metadata'] == {
        'generateName': 'tiny-', 'namespace': 'kubeflow', 'labels': {'pipeline/runid': 'run-42'},
        'annotations': {'pipelines.kubeflow.org/run_name': 'nightly'}}
    spec = workflow['spec']
    assert spec['serviceAccountName'] == 'pipeline-runner'
    assert spec['podMetadata']['labels'] == {'pipeline/runid': 'run-42',
                                             'pipelines.kubeflow.org/v2_component': 'true'}
    # RunWorkflow: the istio sidecar off in every template; {{workflow.uid}} is the run id.
    assert all(t['metadata']['annotations']['sidecar.istio.io/inject'] == 'false'
               for t in spec['templates'])
    assert '{{workflow.uid}}' not in json.dumps(workflow)


def test_each_task_a_driver_then_an_executor_with_enhanced_depends():
    spec = _spec({'A': kfp_tiny_specs.probe('/r', outputs={'out': kfp_tiny_specs.EXAMPLES}),
                  'B': kfp_tiny_specs.probe('/r', outputs={'out': kfp_tiny_specs.EXAMPLES}),
                  'C': kfp_tiny_specs.probe('/r', inputs={'x': ('A', 'out'), 'y': ('B', 'out')})})
    spec['root']['dag']['tasks']['C']['dependentTasks'] = ['B']  # A only implied by its input
    tasks = _tasks(compile_run(_upload(spec), 'gs://b/r', 'r'))
    assert list(tasks) == ['A-driver', 'A', 'B-driver', 'B', 'C-driver', 'C']
    assert 'depends' not in tasks['A-driver']
    # addImplicitDependencies appends the producer; depends() wants each one Succeeded.
    assert tasks['C-driver']['depends'] == 'B.Succeeded && A.Succeeded'
    assert json.loads(_params(tasks['C-driver'])['task'])['dependentTasks'] == ['B', 'A']
    assert tasks['C']['depends'] == 'C-driver.Succeeded'


def test_pod_spec_patch_plumbing():
    workflow = compile_run(_upload(_spec(), _platform('B_executor')), 'gs://b/r', 'r')
    tasks = _tasks(workflow)
    arguments = _arguments(workflow)
    driver = _params(tasks['B-driver'])
    assert driver['task-name'] == 'B' and driver['parent-dag-id'] == \
        '{{inputs.parameters.parent-dag-id}}'
    # The component and container are workflow arguments, keyed by the container's hash.
    component_key = driver['component'][len('{{workflow.parameters.'):-2]
    container_key = driver['container'][len('{{workflow.parameters.'):-2]
    assert component_key.startswith('components-') and container_key.startswith(
        'implementations-') and component_key[11:] == container_key[16:]
    assert json.loads(arguments[container_key])['command'] == kfp_tiny_specs.PROBE
    # Only B has a kubernetes config: its argument is the platform's Struct as JSON.
    assert driver['kubernetes-config'] == '{{workflow.parameters.kubernetes-B_comp}}'
    assert json.loads(arguments['kubernetes-B_comp']) == SECRET_CONFIG
    assert 'kubernetes-config' not in _params(tasks['A-driver'])
    # The driver's outputs feed the executor; the pod is skipped on a cache hit.
    assert tasks['B']['arguments']['parameters'] == [
        {'name': 'pod-spec-patch', 'value': '{{tasks.B-driver.outputs.parameters.pod-spec-patch}}'},
        {'name': 'cached-decision', 'default': 'false',
         'value': '{{tasks.B-driver.outputs.parameters.cached-decision}}'}]
    [executor] = _template(workflow, 'system-container-executor')['dag']['tasks']
    assert executor['when'] == '{{inputs.parameters.cached-decision}} != true'
    impl = _template(workflow, 'system-container-impl')
    assert impl['podSpecPatch'] == '{{inputs.parameters.pod-spec-patch}}'
    [launcher] = impl['initContainers']
    assert launcher['command'] == ['launcher-v2']
    assert launcher['args'] == ['--copy', '/kfp-launcher/launch']
    assert [m['mountPath'] for m in impl['container']['volumeMounts']] == [
        '/kfp-launcher', '/gcs', '/s3', '/minio', '/.local', '/.cache', '/.config']
    outputs = _template(workflow, 'system-container-driver')['outputs']['parameters']
    assert [o['valueFrom']['path'] for o in outputs] == [
        '/tmp/outputs/pod-spec-patch', '/tmp/outputs/cached-decision', '/tmp/outputs/condition']


def _args(template: dict) -> dict:
    args = template['container']['args']
    return dict(zip(args[::2], args[1::2]))


def test_driver_args_bake_the_server_addresses_and_the_run():
    workflow = compile_run(_upload(_spec()), 'gs://b/r', 'run-7', name='my run')
    for name in ('system-container-driver', 'system-dag-driver'):
        args = _args(_template(workflow, name))
        assert args['--ml_pipeline_server_address'] == 'ml-pipeline.kubeflow.svc.cluster.local'
        assert args['--ml_pipeline_server_port'] == '8887'
        assert args['--mlmd_server_address'] == \
            'metadata-grpc-service.kubeflow.svc.cluster.local'
        assert args['--mlmd_server_port'] == '8080'
        assert (args['--run_id'], args['--run_display_name'], args['--pipeline_name']) == (
            'run-7', 'my run', 'tiny')
        assert args['--run_name'] == '{{workflow.name}}'
    assert _args(_template(workflow, 'system-container-driver'))['--type'] == 'CONTAINER'
    assert _args(_template(workflow, 'system-dag-driver'))['--type'] == \
        '{{inputs.parameters.driver-type}}'


def test_server_configuration_moves_the_addresses_and_adds_proxies():
    workflow = compile_run(_upload(_spec()), 'gs://b/r', 'r', cache_disabled=True, server_env={
        'POD_NAMESPACE': 'kfp', 'CLUSTER_DOMAIN': 'corp.local', 'HTTP_PROXY': 'http://proxy:3128',
        'V2_DRIVER_IMAGE': 'registry/driver:2.17.0', 'PIPELINE_LOG_LEVEL': '3'})
    driver = _template(workflow, 'system-container-driver')
    args = driver['container']['args']
    assert _args(driver)['--ml_pipeline_server_address'] == 'ml-pipeline.kfp.svc.corp.local'
    assert driver['container']['image'] == 'registry/driver:2.17.0'
    # proxy/config.go: HTTP_PROXY without NO_PROXY gets the default list, cluster domain in it.
    no_proxy = _args(driver)['--no_proxy']
    assert no_proxy.startswith('localhost,127.0.0.1,.svc.corp.local,')
    assert [e['name'] for e in driver['container']['env']] == [
        'http_proxy', 'HTTP_PROXY', 'no_proxy', 'NO_PROXY', 'KFP_POD_NAME', 'KFP_POD_UID']
    assert args[-3:] == ['--cache_disabled', '--log_level', '3']
    launcher = _template(workflow, 'system-container-impl')['initContainers'][0]
    assert launcher['args'] == ['--copy', '/kfp-launcher/launch', '--cache_disabled',
                                '--log_level', '3']


def test_components_with_the_same_container_share_their_arguments():
    spec = _spec({'A': kfp_tiny_specs.probe('/r', params={'x': ('STRING', 'a')}),
                  'B': kfp_tiny_specs.probe('/r', params={'y': ('STRING', 'b')})})
    spec['deploymentSpec']['executors']['B_executor'] = \
        spec['deploymentSpec']['executors']['A_executor']
    workflow = compile_run(_upload(spec), 'gs://b/r', 'r')
    tasks = _tasks(workflow)
    assert _params(tasks['A-driver'])['component'] == _params(tasks['B-driver'])['component']
    # saveProtoToArguments keeps the first component saved: B's tasks read A's spec.
    key = _params(tasks['B-driver'])['component'][len('{{workflow.parameters.'):-2]
    saved = json.loads(_arguments(workflow)[key])
    assert saved['inputDefinitions']['parameters'] == {'x': {'parameterType': 'STRING'}}


def test_the_container_hash_is_over_go_struct_json():
    # hashValue: encoding/json of the generated struct: proto names, declaration order
    # (image, command, args, lifecycle, resources, env), zero values left out, float64 as Go
    # prints it. (Checked against the real compiler on our pipeline's Trainer, which has
    # resources, and on an accelerator.)
    container = {'image': 'img', 'command': ['python'], 'args': ['-m', 'x'],
                 'env': [{'name': 'N', 'value': 'V'}],
                 'resources': {'cpuLimit': 4.0, 'memoryLimit': 0.5, 'resourceCpuLimit': '4',
                               'accelerator': {'type': 'gpu', 'count': '2'}}}
    from kfp.pipeline_spec import pipeline_spec_pb2
    message = json_format.ParseDict(
        container, pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec())
    text = kfp_go_json.go_struct_json(message)
    assert text == ('{"image":"img","command":["python"],"args":["-m","x"],"resources":'
                    '{"cpu_limit":4,"memory_limit":0.5,"resource_cpu_limit":"4",'
                    '"accelerator":{"type":"gpu","count":2}},"env":[{"name":"N","value":"V"}]}')
    spec = _spec()
    spec['deploymentSpec']['executors']['A_executor']['container'] = container
    tasks = _tasks(compile_run(_upload(spec), 'gs://b/r', 'r'))
    assert _params(tasks['A-driver'])['container'] == (
        '{{workflow.parameters.implementations-%s}}' % hashlib.sha256(text.encode()).hexdigest())


@pytest.mark.parametrize('value, text', [
    (4.0, '4'), (0.3, '0.3'), (1e-07, '1e-7'), (1.5e21, '1.5e+21'), (1e20, '100000000000000000000'),
    (0.000001, '0.000001'), (-2.5e-10, '-2.5e-10'), (12345678901234567890, '12345678901234567000'),
    (0.0, '0'), (-0.0, '-0'), (100.0, '100')])
def test_go_float_formatting(value, text):
    assert kfp_go_json.go_float(float(value)) == text


def test_go_json_escapes_html_and_sorts_keys():
    assert kfp_go_json.dumps({'b': 'a<b>&c é\u2028', 'a': [1, 2.5, None, True]}) == \
        '{"a":[1,2.5,null,true],"b":"a\\u003cb\\u003e\\u0026c é\\u2028"}'


def _root_params(spec: dict) -> dict:
    spec['root']['inputDefinitions'] = {'parameters': {
        'who': {'parameterType': 'STRING', 'defaultValue': 'x'},
        'opt': {'parameterType': 'LIST', 'isOptional': True},
        'n': {'parameterType': 'NUMBER_INTEGER', 'defaultValue': 3},
        'stamp': {'parameterType': 'STRING'}}}
    return spec


def test_runtime_config_formats_macros_and_fills_defaults():
    upload = _upload(_root_params(_spec()))
    workflow = compile_run(upload, 'gs://b/r', 'rid', params={
        'stamp': "[[RunUUID]] [[CurrentTime]] {{$.currentTime.strftime('%Y-%m-%d')}} "
                 "[[ScheduledTime]] [[Index]] {{$.pipeline_job_name}}"}, run_at=86400)
    runtime = json.loads(_params(_template(workflow, 'entrypoint')['dag']['tasks'][0])[
        'runtime-config'])
    # Compile adds the defaults (null when optional); a run not scheduled keeps
    # [[ScheduledTime]], and [[Index]] is for recurring runs only.
    assert runtime == {'gcsOutputDirectory': 'gs://b/r', 'parameterValues': {
        'stamp': 'rid 19700102000000 1970-01-02 [[ScheduledTime]] [[Index]] '
                 '{{$.pipeline_job_name}}',
        'who': 'x', 'n': 3, 'opt': None}}
    scheduled = compile_run(upload, 'gs://b/r', 'rid', params={'stamp': '[[ScheduledTime]]'},
                            scheduled_at=3600)
    assert '"stamp":"19700101010000"' in _params(
        _template(scheduled, 'entrypoint')['dag']['tasks'][0])['runtime-config']


@pytest.mark.parametrize('params, message', [
    ({}, 'parameter stamp is not optional, yet has neither default value nor user provided '
         'value'),
    ({'stamp': 1}, 'input parameter stamp requires type string, but the input parameter is '
                   'not of string value type'),
    ({'stamp': 's', 'n': '3'}, 'input parameter n requires type double or integer, but the '
                               'parameter value is not of number value type'),
    ({'stamp': 's', 'opt': {'a': 1}}, 'input parameter opt requires type list, but the input '
                                      'parameter is not of list value type'),
    ({'stamp': 's', 'zz': 1, 'aa': 2}, 'parameter(s) provided are not required by pipeline: '
                                       'aa, zz'),
])
def test_parameters_kfp_refuses(params, message):
    with pytest.raises(CompileError) as raised:
        compile_run(_upload(_root_params(_spec())), 'gs://b/r', 'r', params=params)
    assert raised.value.message == \
        f'invalid pipeline job inputs: Invalid input error: {message}'
    assert raised.value.code == 'InvalidArgument'


def _broken(change) -> str:
    spec = _spec()
    platform = change(spec)
    return _upload(spec, platform)


@pytest.mark.parametrize('change, message', [
    (lambda s: s['root']['dag']['tasks']['B']['inputs']['artifacts']['examples'][
        'taskOutputArtifact'].update(producerTask='Nope'),
     'compiling DAG "root": failed to add implicit deps: unknown producer task "Nope" in DAG'),
    (lambda s: s['root']['dag']['tasks']['B'].update(
        artifactIterator={'itemInput': 'x', 'items': {'inputArtifact': 'examples'}}),
     'compiling DAG "root": artifact iterator not implemented yet'),
    (lambda s: s['components']['B_comp'].update(executorLabel='missing'),
     'error processing component name="B_comp": executor(label="missing") not found in '
     'deployment config'),
    (lambda s: s['root']['dag']['tasks']['B']['componentRef'].update(name='ghost'),
     'error processing component name="root": cannot find component ref name="ghost"'),
    (lambda s: s['root']['dag'].update(tasks={}),
     'compiling DAG "root": DAG root must contain one or more non-exit tasks'),
    (lambda s: s['deploymentSpec']['executors'].update(B_executor={'resolver': {}}),
     'error processing component name="B_comp": executor(label="B_executor"): non-container '
     'and non-importer executor not implemented'),
    (lambda s: _importer(s)['root']['dag']['tasks']['B'].update(
        triggerPolicy={'condition': 'true'}),
     'compiling DAG "root": compiling task "B": triggerPolicy.condition on importer task is not '
     'supported'),
    (lambda s: {'platforms': {'kubernetes': {'deploymentSpec': {'executors': {
        'B_executor': {'bogus': 1}}}}}},
     'compiling DAG "root": compiling task "B": error creating executor for "B": failed to '
     'unmarshal kubernetes config: proto: unknown field "bogus"'),
])
def test_compiles_kfp_refuses(change, message):
    with pytest.raises(CompileError) as raised:
        compile_run(_broken(change), 'gs://b/r', 'r')
    assert raised.value.message == f'Failed to compile job: {message}'


def test_a_condition_is_the_drivers_and_skips_the_task_behind_it():
    spec = _spec()
    spec['components']['sub'] = {'dag': {'tasks': {'A2': {
        'taskInfo': {'name': 'A2'}, 'componentRef': {'name': 'A_comp'}}}}}
    spec['root']['dag']['tasks']['S'] = {'taskInfo': {'name': 'S'},
                                         'componentRef': {'name': 'sub'},
                                         'triggerPolicy': {'condition': 'true'}}
    spec['root']['dag']['tasks']['B']['triggerPolicy'] = {
        'condition': "inputs.parameter_values['x'] == 'y'"}
    workflow = compile_run(_upload(spec), 'gs://b/r', 'r')
    tasks = _tasks(workflow)
    assert tasks['B']['when'] == '{{tasks.B-driver.outputs.parameters.condition}} != false'
    assert 'when' not in tasks['A']
    # A sub-DAG: its own driver, then the DAG template with the driver's execution as parent.
    assert tasks['S-driver']['template'] == 'system-dag-driver'
    assert _params(tasks['S-driver'])['task-name'] == 'S'
    assert tasks['S']['template'] == 'sub'
    assert tasks['S']['when'] == '{{tasks.S-driver.outputs.parameters.condition}} != false'
    assert _params(tasks['S']) == {
        'parent-dag-id': '{{tasks.S-driver.outputs.parameters.execution-id}}',
        'condition': '{{tasks.S-driver.outputs.parameters.condition}}'}
    assert list(_tasks(workflow, 'sub')) == ['A2-driver', 'A2']


def test_a_retry_policy_reaches_the_pods_retry_strategy():
    spec = _spec()
    tasks = spec['root']['dag']['tasks']
    tasks['B']['retryPolicy'] = {'maxRetryCount': 3, 'backoffDuration': '5s',
                                 'backoffFactor': 1.5, 'backoffMaxDuration': '3600s'}
    spec['components']['sub'] = {'dag': {'tasks': {'A2': {
        'taskInfo': {'name': 'A2'}, 'componentRef': {'name': 'A_comp'}}}}}
    tasks['S'] = {'taskInfo': {'name': 'S'}, 'componentRef': {'name': 'sub'},
                  'retryPolicy': {'maxRetryCount': 2, 'backoffFactor': 2}}
    workflow = compile_run(_upload(spec), 'gs://b/r', 'r')
    assert _tasks(workflow)['A']['template'] == 'system-container-executor'
    b = _tasks(workflow)['B']
    assert b['template'] == 'retry-system-container-executor'
    assert _params(b) == {
        'pod-spec-patch': '{{tasks.B-driver.outputs.parameters.pod-spec-patch}}',
        'cached-decision': '{{tasks.B-driver.outputs.parameters.cached-decision}}',
        'retry-max-count': '3', 'retry-backoff-duration': '5', 'retry-backoff-factor': '1.5',
        'retry-backoff-max-duration': '3600'}
    # visitor.go dfs: a sub-DAG's tasks inherit its retry policy; unset durations are left out.
    assert _params(_tasks(workflow, 'sub')['A2']) == {
        'pod-spec-patch': '{{tasks.A2-driver.outputs.parameters.pod-spec-patch}}',
        'cached-decision': '{{tasks.A2-driver.outputs.parameters.cached-decision}}',
        'retry-max-count': '2', 'retry-backoff-factor': '2'}
    executor = _template(workflow, 'retry-system-container-executor')
    assert executor['inputs']['parameters'][2:] == [
        {'name': n, 'default': '0'} for n in kfp_argo_templates.RETRY_PARAMS]
    impl = _template(workflow, 'retry-system-container-impl')
    assert impl['retryStrategy'] == {'limit': '{{inputs.parameters.retry-max-count}}', 'backoff': {
        'duration': '{{inputs.parameters.retry-backoff-duration}}',
        'factor': '{{inputs.parameters.retry-backoff-factor}}',
        'maxDuration': '{{inputs.parameters.retry-backoff-max-duration}}'}}
    assert impl['container']['env'][-1] == {'name': 'KFP_RETRY_INDEX', 'value': '{{retries}}'}
    assert 'retryStrategy' not in _template(workflow, 'system-container-impl')


def test_pod_metadata_names_its_templates_and_passes_as_parameters():
    spec = _spec()
    spec['root']['dag']['tasks']['B']['retryPolicy'] = {'maxRetryCount': 1}
    platform = {'platforms': {'kubernetes': {'deploymentSpec': {'executors': {
        'A_executor': {'podMetadata': {'labels': {'team': 'ml', 'app': 'x'},
                                       'annotations': {'note': 'n'}}},
        'B_executor': {'podMetadata': {'labels': {'one': '1'}}}}}}}}
    workflow = compile_run(_upload(spec, platform), 'gs://b/r', 'r')
    a, b = _tasks(workflow)['A'], _tasks(workflow)['B']
    assert a['template'] == 'metadata-1-2-system-container-executor'
    assert b['template'] == 'metadata-0-1-retry-system-container-executor'
    # Annotations, then labels, by key; numbered when there are several.
    assert a['arguments']['parameters'][2:] == [
        {'name': 'pod-metadata-annotation-key', 'value': 'note'},
        {'name': 'pod-metadata-annotation-val', 'value': 'n'},
        {'name': 'pod-metadata-label-key-1', 'value': 'app'},
        {'name': 'pod-metadata-label-val-1', 'value': 'x'},
        {'name': 'pod-metadata-label-key-2', 'value': 'team'},
        {'name': 'pod-metadata-label-val-2', 'value': 'ml'}]
    impl = _template(workflow, 'metadata-1-2-system-container-impl')
    assert impl['metadata']['labels'] == {
        '{{inputs.parameters.pod-metadata-label-key-1}}':
            '{{inputs.parameters.pod-metadata-label-val-1}}',
        '{{inputs.parameters.pod-metadata-label-key-2}}':
            '{{inputs.parameters.pod-metadata-label-val-2}}'}
    assert impl['metadata']['annotations'][
        '{{inputs.parameters.pod-metadata-annotation-key}}'] == \
        '{{inputs.parameters.pod-metadata-annotation-val}}'
    assert [p['name'] for p in _template(workflow, 'metadata-0-1-retry-system-container-impl')[
        'inputs']['parameters']] == ['pod-spec-patch', 'pod-metadata-label-key',
                                     'pod-metadata-label-val', *kfp_argo_templates.RETRY_PARAMS]


@pytest.mark.parametrize('value, text', [(2.0, '2'), (1.5, '1.5'), (0.0, '0'), (1e21, '1e+21'),
                                         (1e-05, '1e-05'), (0.0001, '0.0001')])
def test_go_sprint_v_float(value, text):
    assert kfp_go_json.sprint_float(value) == text


def test_loops_count_their_items_in_a_driver_and_iterate_a_sequence():
    spec = _spec({'A': kfp_tiny_specs.probe('/r', outputs={'out': kfp_tiny_specs.EXAMPLES}),
                  'B': kfp_tiny_specs.probe('/r', params={'x': ('STRING', 'v')}),
                  'C': kfp_tiny_specs.probe('/r')})
    tasks = spec['root']['dag']['tasks']
    body = tasks.pop('B')
    body['inputs']['parameters']['x'] = {'componentInputParameter': 'item'}
    spec['components']['for-loop-1'] = {
        'dag': {'tasks': {'B': body}},
        'inputDefinitions': {'parameters': {'item': {'parameterType': 'STRING'}}}}
    tasks['for-loop-1'] = {'taskInfo': {'name': 'for-loop-1'},
                           'componentRef': {'name': 'for-loop-1'}, 'dependentTasks': ['A'],
                           'parameterIterator': {'itemInput': 'item',
                                                 'items': {'raw': '["a", "b"]'}},
                           'iteratorPolicy': {'parallelismLimit': 2}}
    tasks['C']['parameterIterator'] = {'itemInput': 'x', 'items': {'raw': '[1, 2]'}}
    workflow = compile_run(_upload(spec), 'gs://b/r', 'r')
    loop = _tasks(workflow)['for-loop-1']
    assert loop['template'] == 'for-loop-1-for-loop-1-iterator'
    assert loop['depends'] == 'A.Succeeded'
    iterator = _template(workflow, 'for-loop-1-for-loop-1-iterator')
    assert iterator['parallelism'] == 2
    driver, iterations = iterator['dag']['tasks']
    assert driver['name'] == 'iteration-driver' and _params(driver)['task-name'] == 'for-loop-1'
    assert iterations['withSequence'] == {
        'count': '{{tasks.iteration-driver.outputs.parameters.iteration-count}}'}
    assert _params(iterations) == {
        'parent-dag-id': '{{tasks.iteration-driver.outputs.parameters.execution-id}}',
        'iteration-index': '{{item}}'}
    # Each iteration: the component's driver with its index (a DAG driver for a sub-DAG, a
    # container driver for a container), no depends inside.
    item_driver = _tasks(workflow, 'for-loop-1-iteration')['iteration-item-driver']
    assert item_driver['template'] == 'system-dag-driver' and 'depends' not in item_driver
    assert _params(item_driver)['iteration-index'] == '{{inputs.parameters.iteration-index}}'
    c_driver = _tasks(workflow, 'C_comp-iteration')['iteration-item-driver']
    assert c_driver['template'] == 'system-container-driver'
    assert (_params(c_driver)['task-name'], _params(c_driver)['iteration-index']) == (
        'C', '{{inputs.parameters.iteration-index}}')
    assert 'parallelism' not in _template(workflow, 'C_comp-C-iterator')


def test_an_exit_handler_runs_as_the_exit_hook_of_what_it_follows():
    spec = _spec({'A': kfp_tiny_specs.probe('/r'), 'X': kfp_tiny_specs.probe('/r'),
                  'F': kfp_tiny_specs.probe('/r')})
    tasks = spec['root']['dag']['tasks']
    spec['components']['exit-handler-1'] = {'dag': {'tasks': {'X': tasks.pop('X')}}}
    tasks['exit-handler-1'] = {'taskInfo': {'name': 'exit-handler-1'},
                               'componentRef': {'name': 'exit-handler-1'}}
    tasks['F'].update(triggerPolicy={'strategy': 'ALL_UPSTREAM_TASKS_COMPLETED'},
                      dependentTasks=['exit-handler-1', 'A'])
    workflow = compile_run(_upload(spec), 'gs://b/r', 'r')
    hook = {'exit': {'template': 'exit-hook-root-F', 'arguments': {'parameters': [
        {'name': 'parent-dag-id', 'value': '{{inputs.parameters.parent-dag-id}}'}]}}}
    root = _tasks(workflow)
    assert 'F' not in root and 'F-driver' not in root
    assert root['exit-handler-1']['hooks'] == hook and root['A']['hooks'] == hook
    assert 'hooks' not in root['A-driver']
    exit_tasks = _tasks(workflow, 'exit-hook-root-F')
    assert list(exit_tasks) == ['F-driver', 'F'] and 'depends' not in exit_tasks['F-driver']
    only_exit = _spec({'F': kfp_tiny_specs.probe('/r')})
    only_exit['root']['dag']['tasks']['F']['triggerPolicy'] = {
        'strategy': 'ALL_UPSTREAM_TASKS_COMPLETED'}
    with pytest.raises(CompileError, match='DAG root must contain one or more non-exit tasks'):
        compile_run(_upload(only_exit), 'gs://b/r', 'r')


def _importer(spec: dict) -> dict:
    spec['deploymentSpec']['executors']['B_executor'] = {'importer': {
        'artifactUri': {'constant': 'gs://x'}, 'typeSchema': {'schemaTitle': 'system.Artifact'}}}
    return spec


def test_an_importer_is_one_launcher_task_without_depends():
    workflow = compile_run(_upload(_importer(_spec())), 'gs://b/r', 'run-3')
    importer = _tasks(workflow)['B']
    assert importer['template'] == 'system-importer' and 'depends' not in importer
    assert _params(importer)['importer'] == '{{workflow.parameters.implementations-B_comp}}'
    args = _args(_template(workflow, 'system-importer'))
    assert args['--executor_type'] == 'importer' and args['--run_id'] == 'run-3'
    assert (args['--pod_name'], args['--pod_uid']) == ('$(KFP_POD_NAME)', '$(KFP_POD_UID)')
    assert json.loads(_arguments(workflow)['implementations-B_comp'])['artifactUri'] == {
        'constant': 'gs://x'}


@pytest.mark.parametrize('upload, message', [
    (_upload({**_spec(), 'schemaVersion': '2.0.0'}),
     'KFP only supports schema version 2.1.0, but the pipeline spec has version 2.0.0: '
     'pipeline spec is invalid'),
    (_upload({**_spec(), 'bogusField': 1}), 'unknown template format: pipeline spec is invalid'),
    (_upload(_spec(), {'platforms': {'kubernetes': {}}}) + '---\n'
     + yaml.safe_dump({'platforms': {'kubernetes': {}}}),
     'multiple platform specs provided: platform spec is invalid'),
], ids=['schema-version', 'unknown-field', 'two-platform-specs'])
def test_uploads_kfp_refuses(upload, message):
    with pytest.raises(CompileError) as raised:
        compile_run(upload, 'gs://b/r', 'r')
    assert raised.value.message == f'InvalidInputError: {message}'


@pytest.mark.parametrize('change, named', [
    (lambda s: s['root'].update(inputDefinitions={'parameters': {'p': {
        'parameterType': 'STRING', 'literals': ['a']}}}), 'literals'),
    (lambda s: {'platforms': {'kubernetes': {'pipelineConfig': {'activeDeadlineSeconds': 60}}}},
     'PipelineConfig.activeDeadlineSeconds'),
    (lambda s: {'platforms': {'kubernetes': {'deploymentSpec': {'executors': {
        'B_executor': {'secretAsEnv': [{'secretName': 'x', 'optional': True}]}}}}}},
     'SecretAsEnv.optional'),
])
def test_what_is_not_transcribed_is_refused_by_name(change, named):
    with pytest.raises(NotImplementedError, match=named):
        compile_run(_broken(change), 'gs://b/r', 'r')


def test_an_upload_that_is_not_yaml_is_refused_saying_kfp_hangs_on_it():
    with pytest.raises(CompileError, match='isV2Spec loops forever'):
        compile_run('a: [1,\n', 'gs://b/r', 'r')


def test_a_pvc_task_is_its_driver_alone():
    spec = _spec()
    spec['deploymentSpec']['executors']['B_executor']['container']['image'] = \
        'argostub/createpvc'
    tasks = _tasks(compile_run(_upload(spec), 'gs://b/r', 'r'))
    assert list(tasks) == ['A-driver', 'A', 'B']
    assert tasks['B']['template'] == 'system-container-driver'
    assert tasks['B']['depends'] == 'A.Succeeded'


def test_a_go_time_layout_in_a_parameter_is_refused_by_name():
    with pytest.raises(NotImplementedError, match='Go time layout'):
        compile_run(_upload(_root_params(_spec())), 'gs://b/r', 'r',
                    params={'stamp': '[[CurrentTime.2006-01-02]]'})


def test_server_settings_not_transcribed_are_refused():
    with pytest.raises(NotImplementedError, match='ApplyWorkflowSpecPatch'):
        compile_run(_upload(_spec()), 'gs://b/r', 'r',
                    server_env={'COMPILED_PIPELINE_SPEC_PATCH': '{"parallelism": 2}'})


@pytest.fixture(scope='module')
def our_upload(tmp_path_factory):
    """runner.py --kubeflow on an s3:// root with two training workers: the upload file."""
    import runner
    from pipeline.runs import logs
    folder = tmp_path_factory.mktemp('compiled')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(logs, 'configure', lambda verbose: None)
        patch.setattr(kfp_client.Client, '_LOCAL_KFP_CONTEXT', str(folder / 'context.json'))
        assert runner.main(['--kubeflow', '--image', 'registry/pipe:1', '--pipeline-root',
                            's3://mlpipeline/kfp', '--trainer-workers', '2',
                            '--output', str(folder / 'pipeline.json')]) == 0
    return str(folder / 'pipeline.spec.yaml')


def test_our_pipeline_compiles_task_for_task(our_upload):
    spec, platform = kfp_argo_compiler.parse_upload(open(our_upload, 'rb').read())
    workflow = compile_run(our_upload, 's3://mlpipeline/kfp', 'run-1')
    tasks = _tasks(workflow)
    dag = spec.root.dag.tasks
    assert list(tasks) == [n for name in sorted(dag) for n in (f'{name}-driver', name)]
    configs = platform.platforms['kubernetes'].deployment_spec.executors
    arguments = _arguments(workflow)
    for name, task in dag.items():
        driver = tasks[f'{name}-driver']
        assert driver.get('depends', '') == kfp_argo_compiler.depends(task.dependent_tasks)
        assert json.loads(_params(driver)['task'])['taskInfo']['name'] == name
        # Every task reads the store's Secret through its kubernetes config.
        component = task.component_ref.name
        assert spec.components[component].executor_label in configs
        assert json.loads(arguments[f'kubernetes-{component}'])['secretAsEnv'][0][
            'secretName'] == 'mlpipeline-minio-artifact'
    assert os.path.basename(our_upload) == 'pipeline.spec.yaml'


def test_the_command_line_takes_handcompiles_flags(tmp_path, capsys):
    upload = tmp_path / 'pipeline.spec.yaml'
    upload.write_text(_upload(_spec()))
    assert kfp_argo_compiler.main(['--upload', str(upload), '--root', 'gs://b/r',
                                   '--run_id', 'run-5', '--name', 'cli']) == 0
    workflow = json.loads(capsys.readouterr().out)
    # The command line is the server: its environment is the server's (proxies, images).
    assert workflow == compile_run(str(upload), 'gs://b/r', 'run-5', name='cli',
                                   server_env=dict(os.environ))
    upload.write_text(_upload({**_spec(), 'schemaVersion': '2.0.0'}))
    assert kfp_argo_compiler.main(['--upload', str(upload)]) == 1
    assert capsys.readouterr().err.startswith('template: InvalidInputError: KFP only supports')
