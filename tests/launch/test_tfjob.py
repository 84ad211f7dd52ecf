"""The trainer as a Kubernetes TFJob (launch/tfjob.py) against a local fake Kubernetes
API server (tests/support/fake_k8s_server.py) with a transcribed Training Operator v1.9.0, scheduler
and kubelet: each Worker "pod" is a local process in its own network namespace, with only the
operator's TF_CONFIG (`<job>-worker-<i>.<ns>.svc:2222`) and its image's environment. The
`kubernetes` client calls, the executor's path and the 2-worker MultiWorkerMirroredStrategy
training are real; the cluster is not. The fake's own rules are tested in
tests/test_fake_k8s_server.py, what the task survives in test_tfjob_survival.py.
"""
import dataclasses
import glob
import json
import os
import subprocess

import pytest

from components.trainer import executor
from launch import tfjob
import tfjob_helpers

SPEC = tfjob.TFJobSpec(workers=2, image='registry/image-pipeline:1', cpu=8.0, memory_gb=30.0,
                       gpus=2, gpu_resource='nvidia.com/gpu')


def test_the_manifest_has_n_identical_workers_with_the_trainer_resources():
    body = tfjob.manifest('train-abc', SPEC, ['/r/job.json', '/r/serving', '/r/logs', '/r/ckpt'])
    assert (body['apiVersion'], body['kind']) == ('kubeflow.org/v1', 'TFJob')
    assert body['metadata']['name'] == 'train-abc'
    # No backoffLimit: past it, the operator deletes every pod before marking the job Failed.
    assert body['spec']['runPolicy'] == {'cleanPodPolicy': 'None'}
    assert list(body['spec']['tfReplicaSpecs']) == ['Worker']  # worker 0 is the chief
    worker = body['spec']['tfReplicaSpecs']['Worker']
    assert (worker['replicas'], worker['restartPolicy']) == (2, 'Never')
    assert worker['template']['metadata'] == {'annotations': {'sidecar.istio.io/inject': 'false'}}
    assert 'serviceAccountName' not in worker['template']['spec']
    [container] = worker['template']['spec']['containers']
    assert container['name'] == 'tensorflow' and container['image'] == SPEC.image
    assert container['command'] == ['python', '-m', 'launch.worker', '/r/job.json',
                                    '/r/serving', '/r/logs', '/r/ckpt']
    expected = {'cpu': '8', 'memory': '30G', 'nvidia.com/gpu': '2'}
    assert container['resources'] == {'requests': expected, 'limits': expected}
    cpu_only = tfjob.manifest('x', tfjob.TFJobSpec(workers=3, image='i', cpu=0.5, memory_gb=2),
                              [])['spec']['tfReplicaSpecs']['Worker']
    assert cpu_only['replicas'] == 3
    assert cpu_only['template']['spec']['containers'][0]['resources']['limits'] == {
        'cpu': '0.5', 'memory': '2G'}
    runner = tfjob.manifest('x', dataclasses.replace(SPEC, service_account='trainer'), [])
    assert runner['spec']['tfReplicaSpecs']['Worker']['template']['spec'][
        'serviceAccountName'] == 'trainer'


def test_the_spec_round_trips_through_the_execution_property():
    assert tfjob.TFJobSpec.from_json(SPEC.to_json()) == SPEC
    old = json.loads(SPEC.to_json())  # a spec compiled before the newer fields still loads
    del old['service_account'], old['start_timeout_s']
    assert tfjob.TFJobSpec.from_json(json.dumps(old)) == SPEC


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    yield from tfjob_helpers.cluster(tmp_path, monkeypatch)


def _pod_log(tmp_path, pod: str) -> str:
    """A container's log as the node keeps it (/var/log/pods/<ns>_<pod>_<uid>/<container>/)."""
    [path] = glob.glob(str(tmp_path / 'pods' / f'ml-team_{pod}_*' / 'tensorflow' / '0.log'))
    with open(path) as handle:
        return handle.read()


def _properties(**overrides):
    return tfjob_helpers.properties(tfjob.TFJobSpec(workers=2, image='local'), **overrides)


def _check_lifecycle(state, name):
    """Nothing left of an earlier job was found, the job was created, polled, deleted in the
    foreground, and waited for until it and its pods were gone."""
    calls = tfjob_helpers.calls(state)
    post, delete = calls.index(('POST', 'tfjobs')), calls.index(('DELETE', name))
    assert set(calls[:post]) == {('GET', name), ('GET', 'pods')}
    assert {c for c in calls[post + 1:delete]} <= {('GET', name), ('GET', 'pods'),
                                                   ('GET', 'log')}
    assert state.requests[delete]['query']['propagationPolicy'] == ['Foreground']
    assert set(calls[delete + 1:]) == {('GET', name), ('GET', 'pods')}
    assert all('/namespaces/ml-team/' in r['path'] for r in state.requests)
    assert state.jobs == {} and state.pods == {}


@pytest.mark.slow
def test_two_pods_train_and_the_chief_export_becomes_the_model(cluster, tmp_path):
    inputs, outputs = tfjob_helpers.artifacts(tmp_path)
    executor.Executor().Do(inputs, outputs, _properties(pipeline_root=str(tmp_path / 'root')))
    [model], [model_run] = outputs['model'], outputs['model_run']
    [created] = cluster.created
    name = created['metadata']['name']
    assert created['spec']['tfReplicaSpecs']['Worker']['replicas'] == 2
    # Both pods ran the job on the 2-worker cluster their TF_CONFIG described.
    for index in range(2):
        text = _pod_log(tmp_path, f'{name}-worker-{index}')
        assert 'Training models.resnet.build_model on 2 replica(s)' in text, text[-2000:]
        assert 'FILE sharding of the train split' in text
    tfjob_helpers.assert_two_workers_trained(model, model_run)
    assert model.get_string_custom_property('input_sharding') == 'FILE'
    # Created in the kubeconfig's namespace, polled until it ended, then deleted.
    _check_lifecycle(cluster, name)


@pytest.mark.slow
def test_a_failing_pod_fails_the_task_with_its_log_and_the_job_is_deleted(cluster, tmp_path):
    inputs, outputs = tfjob_helpers.artifacts(tmp_path, train_files=1)
    for name in os.listdir(os.path.join(inputs['examples'][0].uri, 'Split-train')):
        os.remove(os.path.join(inputs['examples'][0].uri, 'Split-train', name))
    with pytest.raises(RuntimeError) as error:
        executor.Executor().Do(inputs, outputs, _properties(pipeline_root=str(tmp_path / 'root')))
    message = str(error.value)
    name = cluster.created[0]['metadata']['name']
    assert message.startswith(f'TFJob ml-team/{name} failed; --- pod {name}-worker-')
    assert '(Failed), last lines:' in message
    missing = os.path.join(inputs['examples'][0].uri, 'Split-train', '*')
    assert f'No files matched pattern: {missing}' in message  # the pod's own error
    assert ('GET', 'log') in tfjob_helpers.calls(cluster)
    _check_lifecycle(cluster, name)
    left = subprocess.run(['pgrep', '-f', os.path.join(outputs['model_run'][0].uri, 'tfjob')],
                          capture_output=True, text=True)
    assert left.stdout == ''
    assert not os.path.exists(os.path.join(outputs['model'][0].uri, 'Format-Serving'))
