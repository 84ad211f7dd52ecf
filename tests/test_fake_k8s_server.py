"""The fake Kubernetes cluster's own rules (tests/support/fake_k8s_server.py and the modules behind
it), each one a behaviour of Training Operator v1.9.0 or Kubernetes that launch/tfjob.py
must survive. Pods run tiny Python commands here: training is not the point.
"""
import json
import os
import signal
import time

import pytest
from kubernetes.client.exceptions import ApiException

from launch import k8s, tfjob
import fake_k8s_operator
import fake_k8s_server

# Each worker prints its environment; worker 1 exits with FAIL (if set), the worker whose index
# is DONE exits 0, the others sleep (SIGTERM ends them, as Python's default handler does).
_WORKER = ('import json, os, sys, time\n'
           'print(json.dumps(dict(os.environ)), flush=True)\n'
           'index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]\n'
           'if os.environ.get("FAIL") and index == 1:\n'
           '    sys.exit(int(os.environ["FAIL"]))\n'
           'if os.environ.get("DONE") == str(index):\n'
           '    sys.exit(0)\n'
           'time.sleep(600)\n')


def _job(name, replicas=2, env=(), **run_policy):
    container = {'name': 'tensorflow', 'image': 'local', 'command': ['python', '-c', _WORKER],
                 'env': [{'name': k, 'value': v} for k, v in env]}
    return {'apiVersion': 'kubeflow.org/v1', 'kind': 'TFJob', 'metadata': {'name': name},
            'spec': {'runPolicy': dict(cleanPodPolicy='None', **run_policy),
                     'tfReplicaSpecs': {'Worker': {'replicas': replicas, 'restartPolicy': 'Never',
                                                   'template': {'spec': {
                                                       'containers': [container]}}}}}}


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp('cluster')
    server, state = fake_k8s_server.start(str(log_dir), grace_seconds=1)
    os.environ['KUBECONFIG'] = fake_k8s_server.write_kubeconfig(
        str(log_dir / 'kubeconfig'), server, 'ml-team')
    yield state
    del os.environ['KUBECONFIG']
    server.shutdown()
    state.shutdown()
    assert state.errors == []


def _create(cluster, body):
    with cluster.lock:
        return cluster.start('ml-team', body)


def _status(cluster, name):
    return fake_k8s_operator.finished(cluster.jobs[name].get('status') or {})


def _phases(cluster, name):
    return {n: p['status'].get('phase') for (_, n), p in cluster.pods.items()
            if n.startswith(name + '-')}


def test_admission_refuses_what_the_crd_and_the_webhook_refuse(cluster):
    objects, _, namespace = k8s.clients()
    bad = _job('Train_1')
    bad['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0]['name'] = 'tf'
    cases = [(bad, 403, 'admission webhook "validator.tfjob.training-operator.kubeflow.org" '
              'denied the request: [metadata.name: Invalid value: "Train_1": should match: a '
              'DNS-1035 label'),
             (bad, 403, 'spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: '
              'must have at least one container with name tensorflow]'),
             (dict(_job('x'), spec={}), 422, 'TFJob.kubeflow.org "x" is invalid: '
              'spec.tfReplicaSpecs: Required value')]
    for body, code, message in cases:
        with pytest.raises(ApiException) as error:
            objects.create_namespaced_custom_object('kubeflow.org', 'v1', namespace, 'tfjobs',
                                                    body)
        assert error.value.status == code and message in json.loads(error.value.body)['message']
    objects.create_namespaced_custom_object('kubeflow.org', 'v1', namespace, 'tfjobs',
                                            _job('twice', env=[('DONE', '0')]))
    with pytest.raises(ApiException) as error:
        objects.create_namespaced_custom_object('kubeflow.org', 'v1', namespace, 'tfjobs',
                                                _job('twice'))
    assert error.value.status == 409
    assert json.loads(error.value.body)['message'] == 'tfjobs.kubeflow.org "twice" already exists'


def test_pods_get_the_operator_tf_config_and_only_the_image_and_template_env(cluster, tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv('TEST_ONLY_MARKER', '1')  # the test's environment must not leak
    job = _create(cluster, _job('env', env=[('DONE', '0'), ('FROM_TEMPLATE', 'yes')]))
    cluster.wait(lambda: _status(cluster, 'env') == 'Succeeded')
    with cluster.lock:
        pod = cluster.pod('env-worker-0')
        with open(cluster.kubelet.log_path(pod, 'tensorflow')) as handle:
            env = json.loads(handle.readline())
    assert sorted(env) == ['DONE', 'FROM_TEMPLATE', 'HOME', 'HOSTNAME', 'LANG', 'PATH',
                           'TF_CONFIG']
    assert (env['HOSTNAME'], env['HOME']) == ('env-worker-0', '/home/pipeline')  # Dockerfile
    # tensorflow.go genTFConfigJSONStr, byte for byte.
    assert env['TF_CONFIG'] == (
        '{"cluster":{"worker":["env-worker-0.ml-team.svc:2222","env-worker-1.ml-team.svc:2222"]'
        '},"task":{"type":"worker","index":0},"environment":"cloud"}')
    assert job['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0][
        'ports'] == [{'name': 'tfjob-port', 'containerPort': 2222}]  # defaulted


def test_backoff_limit_deletes_every_pod_before_failing_the_job(cluster):
    """job.go ReconcileJobs (kubeflow/trainer#3419): past backoffLimit, DeletePodsAndServices
    runs before the Failed condition, whatever cleanPodPolicy; without it, the job fails from
    UpdateJobStatus and cleanPodPolicy None keeps the failed pod and its log."""
    _create(cluster, _job('limited', env=[('FAIL', '3')], backoffLimit=0))
    _create(cluster, _job('kept', env=[('FAIL', '3')]))
    cluster.wait(lambda: _status(cluster, 'limited') == 'Failed' and _status(
        cluster, 'kept') == 'Failed')
    with cluster.lock:
        [failed] = [c for c in cluster.jobs['limited']['status']['conditions']
                    if c['type'] == 'Failed']
        assert failed['message'] == ('Job limited has failed because it has reached the '
                                     'specified backoff limit')
        [kept] = [c for c in cluster.jobs['kept']['status']['conditions']
                  if c['type'] == 'Failed']
        assert kept['message'] == 'TFJob ml-team/kept has failed because 1 Worker replica(s) ' \
                                  'failed.'
    cluster.wait(lambda: _phases(cluster, 'limited') == {})  # all deleted, the failed one too
    assert _phases(cluster, 'kept') == {'kept-worker-0': 'Running', 'kept-worker-1': 'Failed'}


def test_a_finished_job_is_frozen_and_cleaned_by_its_policy(cluster):
    """Worker 0 done = Succeeded (default success policy); then only cleanPodPolicy acts:
    None keeps the other worker running, Running deletes it; a later failure changes nothing."""
    for name, policy in (('keep', 'None'), ('clean', 'Running')):
        body = _job(name, env=[('DONE', '0')])
        body['spec']['runPolicy']['cleanPodPolicy'] = policy
        _create(cluster, body)
    cluster.wait(lambda: _status(cluster, 'keep') == _status(cluster, 'clean') == 'Succeeded')
    cluster.wait(lambda: 'clean-worker-1' not in _phases(cluster, 'clean'))
    assert _phases(cluster, 'keep') == {'keep-worker-0': 'Succeeded', 'keep-worker-1': 'Running'}
    with cluster.lock:
        os.killpg(cluster.kubelet.running[cluster.pod('keep-worker-1')['metadata']['uid']][
            'containers']['tensorflow']['process'].pid, signal.SIGKILL)
    cluster.wait(lambda: _phases(cluster, 'keep')['keep-worker-1'] == 'Failed')
    time.sleep(0.5)  # a few more passes of the loop
    assert _status(cluster, 'keep') == 'Succeeded'


def test_a_missing_pod_is_recreated_while_the_job_runs(cluster):
    _create(cluster, _job('lost'))
    cluster.wait(lambda: _phases(cluster, 'lost') == {'lost-worker-0': 'Running',
                                                      'lost-worker-1': 'Running'})
    _, core, namespace = k8s.clients()
    first = core.read_namespaced_pod('lost-worker-1', namespace).metadata.uid
    core.delete_namespaced_pod('lost-worker-1', namespace)
    cluster.wait(lambda: 'lost-worker-1' in _phases(cluster, 'lost') and cluster.pod(
        'lost-worker-1')['metadata']['uid'] != first and _phases(cluster, 'lost')[
        'lost-worker-1'] == 'Running')


def test_deletion_is_asynchronous_and_foreground_keeps_the_job_until_its_pods_are_gone(
        cluster):
    objects, core, namespace = k8s.clients()
    for name in ('fore', 'back'):
        body = _job(name)
        body['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0][
            'command'] = ['python', '-c', 'import signal, time; signal.signal('
                          'signal.SIGTERM, signal.SIG_IGN); time.sleep(600)']
        _create(cluster, body)
    cluster.wait(lambda: set(_phases(cluster, 'fore').values()) == set(
        _phases(cluster, 'back').values()) == {'Running'})
    objects.delete_namespaced_custom_object('kubeflow.org', 'v1', namespace, 'tfjobs', 'fore',
                                            propagation_policy='Foreground')
    objects.delete_namespaced_custom_object('kubeflow.org', 'v1', namespace, 'tfjobs', 'back')
    fore = objects.get_namespaced_custom_object('kubeflow.org', 'v1', namespace, 'tfjobs',
                                                'fore')
    assert fore['metadata']['deletionTimestamp'] and fore['metadata']['finalizers'] == [
        'foregroundDeletion']
    with pytest.raises(ApiException) as error:  # background: gone at once...
        objects.get_namespaced_custom_object('kubeflow.org', 'v1', namespace, 'tfjobs', 'back')
    assert error.value.status == 404
    cluster.wait(lambda: all(cluster.pod(f'{n}-worker-0')['metadata'].get('deletionTimestamp')
                             for n in ('fore', 'back')))  # ...its pods terminating, SIGTERM
    assert len(k8s.pods(core, namespace, 'back')) == 2  # ignored for the grace period
    # A same-name job meets them: the operator's pod creation is refused and retried
    # (pod_control.go createPods: a FailedCreatePod event), until the old pods are gone.
    old = {p.metadata.uid for p in k8s.pods(core, namespace, 'back')}
    job = _create(cluster, _job('back', env=[('DONE', '0')]))
    cluster.wait(lambda: any(e['reason'] == 'FailedCreatePod' and e['involvedObject'][
        'uid'] == job['metadata']['uid'] for e in cluster.events))
    [refused] = [e for e in cluster.events if e['reason'] == 'FailedCreatePod']
    assert refused['message'].startswith('Error creating: pods "back-worker-')
    assert refused['message'].endswith('" already exists')
    cluster.wait(lambda: 'fore' not in cluster.jobs and _status(cluster, 'back'), 10)
    assert _status(cluster, 'back') == 'Succeeded'  # its own pods, once the old ones went
    assert not old & {p.metadata.uid for p in k8s.pods(core, namespace, 'back')}


def test_istio_sidecar_keeps_pods_running_unless_the_template_opts_out(tmp_path):
    server, cluster = fake_k8s_server.start(str(tmp_path), istio=True)
    try:
        ours = tfjob.manifest('ours', tfjob.TFJobSpec(workers=1, image='local'), [])
        ours['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0][
            'command'] = ['python', '-c', 'print("trained")']
        plain = json.loads(json.dumps(ours))
        plain['metadata']['name'] = 'plain'
        del plain['spec']['tfReplicaSpecs']['Worker']['template']['metadata']
        _create(cluster, ours), _create(cluster, plain)
        cluster.wait(lambda: _status(cluster, 'ours') == 'Succeeded')
        cluster.wait(lambda: [s['state'].get('terminated', {}).get('exitCode') for s in
                              cluster.pod('plain-worker-0')['status'].get(
                                  'containerStatuses', [])] == [0, None])
        assert [c['name'] for c in cluster.pod('ours-worker-0')['spec']['containers']] == [
            'tensorflow']
        assert [c['name'] for c in cluster.pod('plain-worker-0')['spec']['containers']] == [
            'tensorflow', 'istio-proxy']
        time.sleep(0.5)
        # training exited 0, but the proxy runs on: the pod stays Running, the job never ends
        assert _phases(cluster, 'plain') == {'plain-worker-0': 'Running'}
        assert _status(cluster, 'plain') is None
    finally:
        server.shutdown()
        cluster.shutdown()
    assert cluster.errors == []
