"""The parts of the KFP harness (tests/support/kfp_*.py) against the behaviour of the systems they
transcribe: the ml-pipeline task service (the driver's cache), the Kubernetes API over HTTPS,
Argo's DAG and parameter rules, and pods as processes in their own mount namespaces."""
import json
import os
import ssl
import urllib.error
import urllib.request

import grpc
import pytest

import kfp_cache_server
import kfp_k8s_api
import kfp_pods
import kfp_task_api
import kfp_workflow


def _task(run_id='run-1', fingerprint='f1', execution='7', seconds=100, pipeline='pipeline/p',
          namespace='kubeflow'):
    task = kfp_task_api.Task(pipelineName=pipeline, namespace=namespace, runId=run_id,
                             mlmdExecutionID=execution, fingerprint=fingerprint)
    task.created_at.seconds = seconds
    return task


def test_the_cache_finds_the_newest_task_of_a_fingerprint_per_pipeline_and_namespace():
    with kfp_cache_server.Server() as server:
        client = kfp_task_api.Client(server.host, str(server.port))
        assert client.get_execution_cache('f1', 'pipeline/p', 'kubeflow') == ''
        # resource_manager.go CreateTask: the run must exist.
        with pytest.raises(kfp_task_api.CacheError, match='code = NotFound .*run-1'):
            client.create_execution_cache(_task())
        server.service.add_run('run-1')
        server.service.add_run('run-2')
        client.create_execution_cache(_task(execution='7', seconds=100))
        client.create_execution_cache(_task(run_id='run-2', execution='9', seconds=200))
        client.create_execution_cache(_task(execution='8', seconds=150, pipeline='pipeline/q'))
        client.create_execution_cache(_task(execution='6', seconds=300, namespace='other'))
        assert client.get_execution_cache('f1', 'pipeline/p', 'kubeflow') == '9'
        assert client.get_execution_cache('f1', 'pipeline/q', 'kubeflow') == '8'
        assert client.get_execution_cache('f2', 'pipeline/p', 'kubeflow') == ''
        # task_server.go validateCreateTaskRequest.
        with pytest.raises(kfp_task_api.CacheError,
                           match='code = InvalidArgument .*must specify FingerPrint'):
            client.create_execution_cache(_task(fingerprint=''))
        no_time = _task()
        no_time.ClearField('created_at')
        with pytest.raises(kfp_task_api.CacheError, match='must specify CreatedAt'):
            client.create_execution_cache(no_time)
        client.close()


def test_the_task_list_refuses_an_unknown_filter_key_and_pages_in_order():
    service = kfp_cache_server.TaskService()
    service.add_run('r')
    for second in (5, 3, 9):
        service.create_task(kfp_task_api.CreateTaskRequest(task=_task('r', seconds=second)))
    with pytest.raises(kfp_cache_server.ApiError, match='no support for key "color"') as raised:
        service.list_tasks(kfp_task_api.ListTasksRequest(filter=json.dumps(
            {'predicates': [{'op': 'EQUALS', 'key': 'color', 'stringValue': 'x'}]})))
    assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
    first = service.list_tasks(kfp_task_api.ListTasksRequest(page_size=2))
    assert [t.created_at.seconds for t in first.tasks] == [3, 5] and first.total_size == 3
    rest = service.list_tasks(kfp_task_api.ListTasksRequest(page_size=2,
                                                            page_token=first.next_page_token))
    assert [t.created_at.seconds for t in rest.tasks] == [9] and not rest.next_page_token


def _get(api, path, token=True):
    context = ssl.create_default_context(cafile=api.ca_file)
    request = urllib.request.Request(f'https://{api.host}:{api.port}{path}')
    if token:
        request.add_header('Authorization', f'Bearer {api.token}')
    try:
        with urllib.request.urlopen(request, context=context) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_kubernetes_api_answers_as_the_api_server(tmp_path):
    with kfp_k8s_api.Server(str(tmp_path), namespace='kubeflow') as api:
        api.secrets['s'] = {'accesskey': 'k'}
        api.pods['p'] = {'kind': 'Pod', 'metadata': {'name': 'p', 'annotations': {'a': 'b'}}}
        code, body = _get(api, '/api/v1/namespaces/kubeflow/configmaps/kfp-launcher')
        assert code == 404 and body['reason'] == 'NotFound' and body['kind'] == 'Status'
        assert body['message'] == 'configmaps "kfp-launcher" not found'
        assert body['details'] == {'name': 'kfp-launcher', 'kind': 'configmaps'}
        code, body = _get(api, '/api/v1/namespaces/kubeflow/secrets/s')
        assert code == 200 and body['data'] == {'accesskey': 'aw=='}  # base64, as served
        assert _get(api, '/api/v1/namespaces/kubeflow/pods/p')[1]['metadata']['annotations'] \
            == {'a': 'b'}
        assert _get(api, '/api/v1/namespaces/other/secrets/s')[0] == 404
        assert _get(api, '/api/v1/namespaces/kubeflow/secrets/s', token=False)[0] == 401
        assert _get(api, '/apis/batch/v1/jobs')[1]['message'] == \
            'the server could not find the requested resource'
        with open(os.path.join(api.service_account, 'namespace')) as handle:
            assert handle.read() == 'kubeflow'


def test_depends_and_when_evaluate_as_argo_does():
    phases = {'A': 'Succeeded', 'B-driver': 'Skipped', 'C': 'Failed'}
    assert kfp_workflow.evaluate_depends('A.Succeeded && B-driver', phases)
    assert not kfp_workflow.evaluate_depends('A && C', phases)
    assert kfp_workflow.evaluate_depends('!(C.Succeeded) || A.Failed', phases)
    with pytest.raises(kfp_workflow.WorkflowError, match="task result 'Done'"):
        kfp_workflow.depends_tasks('A.Done')
    assert kfp_workflow.evaluate_when('false != true')
    assert not kfp_workflow.evaluate_when('true != true')
    assert kfp_workflow.evaluate_when('abc == abc') and not kfp_workflow.evaluate_when('1 > 2')


def test_the_pod_spec_patch_merges_containers_by_name_and_env_by_name():
    spec = {'containers': [{'name': 'main', 'image': 'x', 'command': ['a'],
                            'env': [{'name': 'A', 'value': '1'}, {'name': 'B', 'value': '2'}]}],
            'volumes': [{'name': 'v', 'emptyDir': {}}]}
    patch = {'containers': [{'name': 'main', 'image': 'y', 'command': ['b', 'c'],
                             'env': [{'name': 'B', 'value': '3'}, {'name': 'C', 'value': '4'}]}]}
    merged = kfp_workflow.strategic_merge(spec, patch)
    [main] = merged['containers']
    assert main['image'] == 'y' and main['command'] == ['b', 'c']
    assert main['env'] == [{'name': 'A', 'value': '1'}, {'name': 'B', 'value': '3'},
                           {'name': 'C', 'value': '4'}]
    assert merged['volumes'] == spec['volumes']


def _container(name, script, outputs=(), inputs=()):
    template = {'name': name, 'container': {'image': 'shell', 'command': ['sh', '-c', script]},
                'inputs': {'parameters': [dict(p) for p in inputs]},
                'outputs': {'parameters': [
                    {'name': o, 'valueFrom': {'path': f'/tmp/outputs/{o}', **d}}
                    for o, d in outputs]}}
    return template


def test_a_workflow_runs_its_pods_as_processes_with_argo_s_rules(tmp_path):
    """Outputs from files (or their default), `{{tasks...}}` references, a `when` false
    (Skipped), a depends not met (Omitted), a failed pod failing the DAG; each pod's env from the
    API's Secret, its service account and /etc/hosts in their absolute paths."""
    workflow = {
        'metadata': {'generateName': 'wf-', 'labels': {'pipeline/runid': 'r'}},
        'spec': {'entrypoint': 'main', 'arguments': {'parameters': [{'name': 'g', 'value': 'G'}]},
                 'templates': [
            {'name': 'main', 'dag': {'tasks': [
                {'name': 'a', 'template': 'write'},
                {'name': 'b', 'template': 'echo', 'depends': 'a.Succeeded',
                 'arguments': {'parameters': [
                     {'name': 'x', 'value': '{{tasks.a.outputs.parameters.out}}'}]}},
                {'name': 'c', 'template': 'echo', 'depends': 'a',
                 'when': '{{tasks.a.outputs.parameters.missing}} != none',
                 'arguments': {'parameters': [{'name': 'x', 'value': 'c'}]}},
                {'name': 'd', 'template': 'fail', 'depends': 'b'},
                {'name': 'e', 'template': 'echo', 'depends': 'd.Succeeded',
                 'arguments': {'parameters': [{'name': 'x', 'value': 'e'}]}}]}},
            _container('write', 'mkdir -p /tmp/outputs && printf "hello\\n" > /tmp/outputs/out',
                       outputs=[('out', {}), ('missing', {'default': 'none'})]),
            _container('echo', 'echo "{{inputs.parameters.x}} {{workflow.parameters.g}} $KEY"'
                       ' $(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)'
                       ' $(grep -c svc.example /etc/hosts) > /tmp/said; cat /tmp/said',
                       inputs=[{'name': 'x'}]),
            _container('fail', 'exit 3')]}}
    for template in workflow['spec']['templates'][1:]:
        template['container']['env'] = [{'name': 'KEY', 'valueFrom': {'secretKeyRef': {
            'name': 'sec', 'key': 'k'}}}]
    with kfp_k8s_api.Server(str(tmp_path / 'api')) as api:
        api.secrets['sec'] = {'k': 'secret-value'}
        pods = kfp_pods.PodRunner(str(tmp_path / 'pods'), api, {'svc.example': '127.0.0.9'},
                                  {'shell': kfp_pods.Image()}, log=lambda m: None)
        run = kfp_workflow.Workflow(workflow, pods, namespace='kubeflow')
        assert run.run() == kfp_workflow.FAILED
    nodes = {n[len(run.name) + 1:]: node for n, node in run.nodes.items() if n != run.name}
    assert nodes['a'].outputs == {'out': 'hello', 'missing': 'none'}
    assert nodes['b'].phase == 'Succeeded' and nodes['c'].phase == 'Skipped'
    assert nodes['c'].message == "when 'none != none' evaluated false"
    assert nodes['d'].phase == 'Failed' and nodes['d'].message == 'Error (exit code 3)'
    assert nodes['e'].phase == 'Omitted'
    said = pods.read_file(pods.pods[nodes['b'].pod], 'main', '/tmp/said')
    assert said == 'hello G secret-value kubeflow 1\n'
    b_pod = pods.pods[nodes['b'].pod]
    assert b_pod['metadata']['annotations'][kfp_workflow.ANNOTATION_NODE_NAME] == \
        f'{run.name}.b'
    assert nodes['b'].pod == kfp_workflow.pod_name(run.name, f'{run.name}.b', 'echo')
    # The host's /tmp saw nothing of the pods' private /tmp.
    assert not os.path.exists('/tmp/said')


def test_a_missing_secret_keeps_the_container_from_starting(tmp_path):
    workflow = {'metadata': {'name': 'wf'}, 'spec': {'entrypoint': 'echo', 'templates': [
        dict(_container('echo', 'true'))]}}
    workflow['spec']['templates'][0]['container']['env'] = [
        {'name': 'KEY', 'valueFrom': {'secretKeyRef': {'name': 'absent', 'key': 'k'}}}]
    with kfp_k8s_api.Server(str(tmp_path / 'api')) as api:
        pods = kfp_pods.PodRunner(str(tmp_path / 'pods'), api, {}, {'shell': kfp_pods.Image()})
        run = kfp_workflow.Workflow(workflow, pods)
        assert run.run() == kfp_workflow.FAILED
    assert run.nodes['wf'].message == 'CreateContainerConfigError: secret "absent" not found'
