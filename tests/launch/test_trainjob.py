"""The trainer as a Kubeflow Trainer v2 TrainJob (launch/trainjob.py, chosen by
launch/cluster.py's discovery) against the fake cluster with Trainer v2.3, JobSet and the Job
controller transcribed (tests/support/fake_k8s_trainjob.py, fake_k8s_jobset.py,
fake_k8s_batchjob.py; their own rules: tests/test_fake_k8s_trainer.py). Each node "pod" is a
local process in its own network namespace with only what the cluster gives it: no TF_CONFIG
(Trainer writes none), JOB_COMPLETION_INDEX from the Job controller and the JobSet labels
through the shipped runtime's downward API (deploy/tensorflow-runtime.yaml), from which
launch/worker.py builds TF_CONFIG. The `kubernetes` client calls, the executor's path and the
2-worker MultiWorkerMirroredStrategy training are real.
"""
import dataclasses
import glob
import json
import os

import pytest
import yaml
from absl import logging

from components.trainer import executor
from launch import cluster as cluster_lib, k8s, tfjob, trainjob, worker
import tfjob_helpers

RUNTIME_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'deploy', 'tensorflow-runtime.yaml')
SPEC = tfjob.TFJobSpec(workers=2, image='registry/image-pipeline:1', cpu=8.0, memory_gb=30.0,
                       gpus=2, gpu_resource='nvidia.com/gpu')


def _runtime():
    with open(RUNTIME_FILE) as handle:
        return yaml.safe_load(handle)


def test_the_trainjob_is_built_with_the_typed_models_and_names_the_runtime():
    body = trainjob.manifest('train-abc', SPEC, ['/r/job.json', '/r/serving', '/r/logs', '/r/c'])
    assert (body['apiVersion'], body['kind']) == ('trainer.kubeflow.org/v1alpha1', 'TrainJob')
    assert body['metadata'] == {'name': 'train-abc', 'labels': {'app': 'image-pipeline-trainer'}}
    assert body['spec']['runtimeRef'] == {'name': 'image-pipeline-tensorflow',
                                          'apiGroup': 'trainer.kubeflow.org',
                                          'kind': 'ClusterTrainingRuntime'}
    trainer = body['spec']['trainer']
    assert trainer['numNodes'] == 2 and trainer['image'] == SPEC.image
    assert trainer['command'] == ['python', '-m', 'launch.worker', '/r/job.json', '/r/serving',
                                  '/r/logs', '/r/c']
    expected = {'cpu': '8', 'memory': '30G', 'nvidia.com/gpu': '2'}
    assert trainer['resourcesPerNode'] == {'requests': expected, 'limits': expected}
    assert trainer['env'] == [{'name': 'TRAINJOB_NUM_NODES', 'value': '2'}]
    assert 'runtimePatches' not in body['spec']
    bucket = dataclasses.replace(SPEC, service_account='trainer',
                                 env=(('AWS_REGION', 'eu'),),
                                 secret_env=(('AWS_ACCESS_KEY_ID', 'store', 'access'),))
    body = trainjob.manifest('x', bucket, [])
    assert body['spec']['trainer']['env'][1:] == [
        {'name': 'AWS_REGION', 'value': 'eu'},
        {'name': 'AWS_ACCESS_KEY_ID', 'valueFrom': {'secretKeyRef': {'name': 'store',
                                                                     'key': 'access'}}}]
    [patch] = body['spec']['runtimePatches']
    assert patch['manager'] == 'image-pipeline.io/trainer'
    [rjob] = patch['trainingRuntimeSpec']['template']['spec']['replicatedJobs']
    assert rjob == {'name': 'node', 'template': {'spec': {'template': {'spec': {
        'serviceAccountName': 'trainer'}}}}}
    # The typed model reads it back: nothing hand-written that the API would not take.
    from kubeflow_trainer_api import models
    assert models.TrainerV1alpha1TrainJob.from_dict(body).to_dict() == body


def test_the_shipped_runtime_is_a_valid_cluster_runtime_giving_what_the_worker_reads():
    from kubeflow_trainer_api import models
    body = _runtime()
    runtime = models.TrainerV1alpha1ClusterTrainingRuntime.from_dict(body)
    assert runtime.metadata.name == SPEC.runtime == 'image-pipeline-tensorflow'
    assert runtime.spec.ml_policy.num_nodes == 1 and runtime.spec.ml_policy.torch is None
    [rjob] = body['spec']['template']['spec']['replicatedJobs']
    assert rjob['name'] == trainjob.REPLICATED_JOB
    assert rjob['template']['metadata']['labels'] == {
        'trainer.kubeflow.org/trainjob-ancestor-step': 'trainer'}
    assert rjob['template']['spec']['backoffLimit'] == 0
    pod = rjob['template']['spec']['template']
    assert pod['metadata']['annotations'] == {'sidecar.istio.io/inject': 'false'}
    assert pod['spec']['restartPolicy'] == 'Never'
    [container] = pod['spec']['containers']
    assert container['name'] == 'node' and container['ports'][0]['containerPort'] == worker.PORT
    assert {v['name']: v['valueFrom']['fieldRef']['fieldPath'] for v in container['env']} == {
        worker.JOBSET_ENV: "metadata.labels['jobset.sigs.k8s.io/jobset-name']",
        worker.REPLICATED_JOB_ENV: "metadata.labels['jobset.sigs.k8s.io/replicatedjob-name']",
        worker.JOB_INDEX_ENV: "metadata.labels['jobset.sigs.k8s.io/job-index']"}


def test_the_worker_builds_tf_config_from_the_jobset_index_and_hostnames():
    env = {'JOB_COMPLETION_INDEX': '1', 'JOBSET_NAME': 'train-ab', 'REPLICATED_JOB_NAME': 'node',
           'JOB_INDEX': '0', 'TRAINJOB_NUM_NODES': '3'}
    assert json.loads(worker.trainjob_tf_config(env)) == {
        'cluster': {'worker': ['train-ab-node-0-0.train-ab:2222', 'train-ab-node-0-1.train-ab:2222',
                               'train-ab-node-0-2.train-ab:2222']},
        'task': {'type': 'worker', 'index': 1}}
    assert worker.trainjob_tf_config({}) == ''   # a local process
    assert worker.trainjob_tf_config(dict(env, TF_CONFIG='{"task": {}}')) == ''   # a TFJob's
    with pytest.raises(RuntimeError, match='without JOBSET_NAME, JOB_INDEX: is the TrainJob'):
        worker.trainjob_tf_config({k: v for k, v in env.items()
                                   if k not in ('JOBSET_NAME', 'JOB_INDEX')})


def _start(tmp_path, monkeypatch, runtime=True, **options):
    server, state = tfjob_helpers.start(tmp_path, monkeypatch, grace_seconds=2, **options)
    if runtime:
        objects, _, _ = k8s.clients()
        objects.create_cluster_custom_object('trainer.kubeflow.org', 'v1alpha1',
                                             'clustertrainingruntimes', _runtime())
    return server, state


@pytest.mark.parametrize('installed, runtime, expected, said', [
    (dict(trainer=True, tfjob=False), True, 'TrainJob', 'Training API: TrainJob (Kubeflow '
     'Trainer v2, trainer.kubeflow.org/v1alpha1) with the ClusterTrainingRuntime '
     'image-pipeline-tensorflow, in ml-team'),
    (dict(trainer=True, tfjob=True), True, 'TrainJob', 'Training API: TrainJob'),
    (dict(trainer=False, tfjob=True), False, 'TFJob', 'Training API: TFJob (Kubeflow Training '
     'Operator v1, kubeflow.org/v1, deprecated), in ml-team'),
    (dict(trainer=True, tfjob=True), False, 'TFJob', 'Training API: TFJob (Kubeflow Training '
     'Operator v1, kubeflow.org/v1, deprecated); the cluster serves TrainJob but has no '
     'ClusterTrainingRuntime image-pipeline-tensorflow, in ml-team'),
])
def test_discovery_picks_trainjob_first_then_tfjob(tmp_path, monkeypatch, installed, runtime,
                                                   expected, said):
    server, state = _start(tmp_path, monkeypatch, runtime, **installed)
    said_lines = []
    monkeypatch.setattr(logging, 'info', lambda fmt, *args: said_lines.append(fmt % args))
    try:
        assert cluster_lib.discover(SPEC).kind == expected
    finally:
        server.shutdown()
        state.shutdown()
    assert [line for line in said_lines if line.startswith('Training API')][0].startswith(said)
    assert state.discoveries[0]['path'] == '/apis/trainer.kubeflow.org/v1alpha1'


@pytest.mark.parametrize('installed, message', [
    (dict(trainer=True, tfjob=False), "the cluster serves Kubeflow Trainer v2 (TrainJob, "
     "trainer.kubeflow.org/v1alpha1) but has no ClusterTrainingRuntime "
     "'image-pipeline-tensorflow', and no Training Operator v1 (TFJob): apply the runtime "
     "once, `kubectl apply -f deploy/tensorflow-runtime.yaml`"),
    (dict(trainer=False, tfjob=False), '--trainer-workers 2: the cluster serves neither '
     'Kubeflow Trainer v2 (TrainJob, trainer.kubeflow.org/v1alpha1) nor the Training Operator '
     'v1 (TFJob, kubeflow.org/v1)'),
])
def test_discovery_fails_clearly_when_neither_is_usable(tmp_path, monkeypatch, installed,
                                                        message):
    server, state = _start(tmp_path, monkeypatch, runtime=False, **installed)
    try:
        with pytest.raises(RuntimeError) as error:
            cluster_lib.discover(SPEC)
    finally:
        server.shutdown()
        state.shutdown()
    assert str(error.value).startswith(message)


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    server, state = _start(tmp_path, monkeypatch, trainer=True, tfjob=False)
    yield state
    server.shutdown()
    state.shutdown()
    assert state.errors == []


def _pod_log(tmp_path, hostname: str) -> str:
    """A container's log as the node keeps it; the pod name is the hostname and a suffix."""
    [path] = glob.glob(str(tmp_path / 'pods' / f'ml-team_{hostname}-?????_*' / 'node' / '0.log'))
    with open(path) as handle:
        return handle.read()


def _check_lifecycle(state, name):
    """Discovery (TrainJob served, the runtime there), nothing left of an earlier job, the
    TrainJob created, polled, deleted in the background (launch/k8s.py TRAINJOB says why) and
    waited for until it and its pods were gone."""
    assert [r['path'] for r in state.discoveries] == ['/apis/trainer.kubeflow.org/v1alpha1']
    calls = tfjob_helpers.calls(state)
    assert calls[:2] == [('POST', 'clustertrainingruntimes'),   # the test's kubectl apply
                         ('GET', 'image-pipeline-tensorflow')]  # the task: the runtime exists
    post, delete = calls.index(('POST', 'trainjobs')), calls.index(('DELETE', name))
    assert set(calls[2:post]) == {('GET', name), ('GET', 'pods')}
    assert {c for c in calls[post + 1:delete]} <= {('GET', name), ('GET', 'pods'),
                                                   ('GET', 'log')}
    assert state.requests[delete]['query']['propagationPolicy'] == ['Background']
    assert set(calls[delete + 1:]) == {('GET', name), ('GET', 'pods')}
    assert all('/namespaces/ml-team/' in r['path'] for r in state.requests[2:])
    assert sorted(k for k, _, _ in state.objects) == ['ClusterTrainingRuntime']
    assert state.pods == {} and state.services == {}


@pytest.mark.slow
def test_two_nodes_train_with_tf_config_from_the_jobset_and_the_chief_exports(cluster, tmp_path):
    inputs, outputs = tfjob_helpers.artifacts(tmp_path)
    executor.Executor().Do(inputs, outputs, tfjob_helpers.properties(
        tfjob.TFJobSpec(workers=2, image='local'), pipeline_root=str(tmp_path / 'root')))
    [model], [model_run] = outputs['model'], outputs['model_run']
    [created] = cluster.created
    name = created['metadata']['name']
    assert created['kind'] == 'TrainJob' and created['spec']['trainer']['numNodes'] == 2
    hosts = [f'{name}-node-0-{i}.{name}:2222' for i in range(2)]
    for index in range(2):   # each pod trained on the cluster its JobSet index placed it in
        text = _pod_log(tmp_path, f'{name}-node-0-{index}')
        config = {'cluster': {'worker': hosts}, 'task': {'type': 'worker', 'index': index}}
        assert f'TrainJob pod: TF_CONFIG={json.dumps(config)}' in text, text[-2000:]
        assert 'Training models.resnet.build_model on 2 replica(s)' in text, text[-2000:]
        assert 'FILE sharding of the train split' in text
    tfjob_helpers.assert_two_workers_trained(model, model_run)
    assert model.get_string_custom_property('training_api') == 'TrainJob'
    assert os.path.exists(os.path.join(model_run.uri, 'trainjob', 'job.json'))
    _check_lifecycle(cluster, name)


@pytest.mark.slow
def test_a_failing_node_fails_the_task_with_its_log_and_the_trainjob_is_deleted(cluster,
                                                                                tmp_path):
    inputs, outputs = tfjob_helpers.artifacts(tmp_path, train_files=1)
    train = os.path.join(inputs['examples'][0].uri, 'Split-train')
    for name in os.listdir(train):
        os.remove(os.path.join(train, name))
    with pytest.raises(RuntimeError) as error:
        executor.Executor().Do(inputs, outputs, tfjob_helpers.properties(
            tfjob.TFJobSpec(workers=2, image='local'), pipeline_root=str(tmp_path / 'root')))
    message = str(error.value)
    name = cluster.created[0]['metadata']['name']
    assert message.startswith(f'TrainJob ml-team/{name} failed; --- pod {name}-node-0-')
    assert '(Failed), last lines:' in message
    assert f'No files matched pattern: {os.path.join(train, "*")}' in message  # the pod's own
    assert ('GET', 'log') in tfjob_helpers.calls(cluster)
    _check_lifecycle(cluster, name)
    assert not os.path.exists(os.path.join(outputs['model'][0].uri, 'Format-Serving'))
