"""The TrainJob the trainer creates (pipeline/kubeflow/jobs/trainjob.py), the runtime the project
ships (deploy/tensorflow-runtime.yaml), the TF_CONFIG a TrainJob pod builds (launch/worker.py), and
discovery's choice and sentences for every answer the API can give
(pipeline/kubeflow/jobs/launcher.py). The same on the real Trainer v2, JobSet, Training Operator
and API server: tests/cluster/test_trainjob.py, test_cluster.py.
"""
import dataclasses
import json
import os

import pytest
import yaml
from absl import logging

from helpers import REPO_ROOT
from launch import worker
from pipeline.kubeflow.jobs import k8s, launcher, tfjob, trainjob

RUNTIME_FILE = os.path.join(REPO_ROOT, 'deploy', 'tensorflow-runtime.yaml')
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


class _Api:
    """What discovery asks of the cluster (pipeline/kubeflow/jobs/k8s.py served,
    trainjob.runtime_exists), answered as the API server answers: which APIs it serves, whether
    the runtime exists. The real server's answers, for the same questions:
    tests/cluster/test_trainjob.py."""

    def __init__(self, monkeypatch, trainer, tfjob_served, runtime):
        served = {k8s.TRAINJOB.plural: trainer, k8s.TFJOB.plural: tfjob_served}
        monkeypatch.setattr(k8s, 'clients', lambda: (object(), object(), 'ml-team'))
        monkeypatch.setattr(k8s, 'served', lambda objects, api: served[api.plural])
        monkeypatch.setattr(trainjob, 'runtime_exists', lambda objects, name: runtime)


@pytest.mark.parametrize('installed, runtime, expected, said', [
    (dict(trainer=True, tfjob_served=False), True, 'TrainJob', 'Training API: TrainJob '
     '(Kubeflow Trainer v2, trainer.kubeflow.org/v1alpha1) with the ClusterTrainingRuntime '
     'image-pipeline-tensorflow, in ml-team'),
    (dict(trainer=True, tfjob_served=True), True, 'TrainJob', 'Training API: TrainJob'),
    (dict(trainer=False, tfjob_served=True), False, 'TFJob', 'Training API: TFJob (Kubeflow '
     'Training Operator v1, kubeflow.org/v1, deprecated), in ml-team'),
    (dict(trainer=True, tfjob_served=True), False, 'TFJob', 'Training API: TFJob (Kubeflow '
     'Training Operator v1, kubeflow.org/v1, deprecated); the cluster serves TrainJob but has '
     'no ClusterTrainingRuntime image-pipeline-tensorflow, in ml-team'),
])
def test_discovery_picks_trainjob_first_then_tfjob(monkeypatch, installed, runtime, expected,
                                                   said):
    _Api(monkeypatch, runtime=runtime, **installed)
    said_lines = []
    monkeypatch.setattr(logging, 'info', lambda fmt, *args: said_lines.append(fmt % args))
    assert launcher.discover(SPEC).kind == expected
    assert [line for line in said_lines if line.startswith('Training API')][0].startswith(said)


@pytest.mark.parametrize('installed, message', [
    (dict(trainer=True, tfjob_served=False), "the cluster serves Kubeflow Trainer v2 (TrainJob, "
     "trainer.kubeflow.org/v1alpha1) but has no ClusterTrainingRuntime "
     "'image-pipeline-tensorflow', and no Training Operator v1 (TFJob): apply the runtime "
     "once, `kubectl apply -f deploy/tensorflow-runtime.yaml`"),
    (dict(trainer=False, tfjob_served=False), '--trainer-workers 2: the cluster serves neither '
     'Kubeflow Trainer v2 (TrainJob, trainer.kubeflow.org/v1alpha1) nor the Training Operator '
     'v1 (TFJob, kubeflow.org/v1)'),
])
def test_discovery_fails_clearly_when_neither_is_usable(monkeypatch, installed, message):
    _Api(monkeypatch, runtime=False, **installed)
    with pytest.raises(RuntimeError) as error:
        launcher.discover(SPEC)
    assert str(error.value).startswith(message)
