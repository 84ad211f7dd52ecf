"""The fake cluster's Kubeflow Trainer v2.3, JobSet and Job controller (tests/support/
fake_k8s_trainjob.py, fake_k8s_jobset.py, fake_k8s_batchjob.py behind fake_k8s_server.py), each
test a behaviour of the real controllers that launch/trainjob.py relies on. The TrainJobs use
the project's runtime (deploy/tensorflow-runtime.yaml) and launch/trainjob.py's manifest, with
a tiny Python command instead of training.
"""
import copy
import dataclasses
import json
import os

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from launch import k8s, tfjob, trainjob, worker
from helpers import REPO_ROOT
import fake_k8s_server

RUNTIME_FILE = os.path.join(REPO_ROOT, 'deploy', 'tensorflow-runtime.yaml')
# Each node prints its environment. Node 0 listens on the TF port and exits 0 once node 1
# connected; node 1 exits with FAIL if set, else connects to node 0 by the name TF_CONFIG
# gives it (`<trainjob>-node-0-0.<trainjob>:2222`) and exits 0.
_NODE = ('import json, os, socket, sys, time\n'
         'print(json.dumps(dict(os.environ)), flush=True)\n'
         'index = int(os.environ["JOB_COMPLETION_INDEX"])\n'
         'if index == 0:\n'
         '    server = socket.create_server(("", 2222))\n'
         '    server.accept()\n'
         '    sys.exit(0)\n'
         'if os.environ.get("FAIL"):\n'
         '    sys.exit(int(os.environ["FAIL"]))\n'
         'host = os.environ["JOBSET_NAME"] + "-node-0-0." + os.environ["JOBSET_NAME"]\n'
         'for _ in range(300):\n'
         '    try:\n'
         '        socket.create_connection((host, 2222), timeout=1).close()\n'
         '        sys.exit(0)\n'
         '    except OSError:\n'
         '        time.sleep(0.1)\n'
         'sys.exit(9)\n')


def _runtime(**changes):
    with open(RUNTIME_FILE) as handle:
        body = yaml.safe_load(handle)
    body['spec']['template']['spec'].update(changes)
    return body


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    server, state = fake_k8s_server.start(str(tmp_path), grace_seconds=1, tfjob=False,
                                          trainer=True)
    monkeypatch.setenv('KUBECONFIG', fake_k8s_server.write_kubeconfig(
        str(tmp_path / 'kubeconfig'), server, 'ml-team'))
    yield state
    server.shutdown()
    state.shutdown()
    assert state.errors == []


def _apply(objects, body):
    """kubectl apply -f of the runtime (a create: the cluster has none yet)."""
    return objects.create_cluster_custom_object('trainer.kubeflow.org', 'v1alpha1',
                                                'clustertrainingruntimes', body)


def _trainjob(name, env=(), workers=2):
    spec = tfjob.TFJobSpec(workers=workers, image='local', cpu=1, memory_gb=1, env=tuple(env))
    body = trainjob.manifest(name, spec, [])
    body['spec']['trainer']['command'] = ['python', '-c', _NODE]
    return body


def _create(objects, body):
    return objects.create_namespaced_custom_object('trainer.kubeflow.org', 'v1alpha1',
                                                   'ml-team', 'trainjobs', body)


def _conditions(cluster, kind, name):
    with cluster.lock:
        obj = cluster.objects.get((kind, 'ml-team', name))
        return {c['type']: (c['status'], c['reason'], c['message'])
                for c in (obj or {}).get('status', {}).get('conditions') or []}


def _ended(cluster, name):
    obj = cluster.objects.get(('TrainJob', 'ml-team', name))
    return any(c['type'] in ('Complete', 'Failed') and c['status'] == 'True'
               for c in obj.get('status', {}).get('conditions') or [])


def _env(cluster, pod):
    with open(cluster.kubelet.log_path(pod, 'node')) as handle:
        return json.loads(handle.readline())


def test_admission_refuses_what_the_crds_and_webhooks_refuse(cluster):
    objects, _, _ = k8s.clients()
    with pytest.raises(ApiException) as error:   # no runtime yet: ValidateObjects
        _create(objects, _trainjob('early'))
    assert error.value.status == 403
    assert 'specified clusterTrainingRuntime must be created before the TrainJob is created' in \
        error.value.body
    bad = _runtime()
    bad['spec']['template']['spec']['replicatedJobs'][0]['replicas'] = 2
    bad['spec']['template']['spec']['replicatedJobs'][0]['template']['spec']['template'][
        'spec']['containers'][0]['name'] = 'tensorflow'
    with pytest.raises(ApiException) as error:   # validateReplicatedJobs
        _apply(objects, bad)
    assert error.value.status == 403
    assert 'replicas: Invalid value: 2: always must be 1' in error.value.body
    assert 'must contain the required container for the ancestor: trainer' in error.value.body
    _apply(objects, _runtime())
    with pytest.raises(ApiException) as error:   # the CRD's CEL rule on the name
        _create(objects, _trainjob('Train_1'))
    assert error.value.status == 422 and 'RFC 1035' in error.value.body
    long = _trainjob('t' * 60)   # the JobSet's pod names would exceed 63 characters
    _create(objects, long)
    cluster.wait(lambda: any(e['reason'] == 'TrainJobResourcesCreationFailed'
                             for e in cluster.events))
    [event] = [e for e in cluster.events if e['reason'] == 'TrainJobResourcesCreationFailed']
    assert 'admission webhook "vjobset.kb.io" denied the request' in event['message']
    assert 'pod names generated for this JobSet will exceed 63 characters' in event['message']
    assert ('JobSet', 'ml-team', 't' * 60) not in cluster.objects
    with pytest.raises(ApiException) as error:
        _create(objects, long)
    assert error.value.status == 409


def test_a_trainjob_runs_as_an_indexed_job_of_the_jobset_and_completes(cluster):
    objects, core, _ = k8s.clients()
    _apply(objects, _runtime())
    _create(objects, _trainjob('run', env=[('EXTRA', 'x')]))
    cluster.wait(lambda: _ended(cluster, 'run'), timeout=60)
    assert _conditions(cluster, 'TrainJob', 'run')['Complete'] == (
        'True', 'AllJobsCompleted', 'jobset completed successfully')   # jobset.go Status
    assert _conditions(cluster, 'JobSet', 'run')['Completed'][0] == 'True'
    assert _conditions(cluster, 'Job', 'run-node-0')['Complete'] == (
        'True', 'CompletionsReached', 'Reached expected number of succeeded pods')
    with cluster.lock:
        jobset = cluster.objects[('JobSet', 'ml-team', 'run')]
        job = cluster.objects[('Job', 'ml-team', 'run-node-0')]
        status = cluster.objects[('TrainJob', 'ml-team', 'run')]['status']
        pods = {p['spec']['hostname']: p for p in cluster.pods.values()}
    assert jobset['metadata']['ownerReferences'][0]['kind'] == 'TrainJob'
    assert (job['spec']['parallelism'], job['spec']['completions']) == (2, 2)   # numNodes
    assert job['spec']['backoffLimit'] == 0   # the runtime's
    assert status['jobsStatus'] == [dict(name='node', ready=0, succeeded=1, failed=0, active=0,
                                         suspended=0)]
    assert sorted(pods) == ['run-node-0-0', 'run-node-0-1']
    for index, hostname in enumerate(sorted(pods)):
        pod = pods[hostname]
        assert pod['metadata']['name'].startswith(f'run-node-0-{index}-')
        assert pod['spec']['subdomain'] == 'run' and pod['status']['phase'] == 'Succeeded'
        assert pod['spec']['restartPolicy'] == 'Never'
        [container] = pod['spec']['containers']
        assert container['resources']['limits'] == {'cpu': '1', 'memory': '1G'}
        env = _env(cluster, pod)
        assert {k: env[k] for k in ('JOB_COMPLETION_INDEX', 'JOBSET_NAME', 'REPLICATED_JOB_NAME',
                                    'JOB_INDEX', 'TRAINJOB_NUM_NODES', 'EXTRA', 'HOSTNAME')} == {
            'JOB_COMPLETION_INDEX': str(index), 'JOBSET_NAME': 'run',
            'REPLICATED_JOB_NAME': 'node', 'JOB_INDEX': '0', 'TRAINJOB_NUM_NODES': '2',
            'EXTRA': 'x', 'HOSTNAME': hostname}
        assert 'TF_CONFIG' not in env   # PlainML writes none
        assert json.loads(worker.trainjob_tf_config(env)) == {
            'cluster': {'worker': ['run-node-0-0.run:2222', 'run-node-0-1.run:2222']},
            'task': {'type': 'worker', 'index': index}}
    assert [p.metadata.name for p in k8s.pods(core, 'ml-team', 'run', k8s.TRAINJOB)] == [
        pods[h]['metadata']['name'] for h in sorted(pods)]


def test_a_failed_node_fails_the_job_the_jobset_and_the_trainjob_and_keeps_its_log(cluster):
    objects, core, _ = k8s.clients()
    _apply(objects, _runtime())
    _create(objects, _trainjob('fails', env=[('FAIL', '3')]))
    cluster.wait(lambda: _ended(cluster, 'fails'), timeout=60)
    assert _conditions(cluster, 'Job', 'fails-node-0')['Failed'] == (
        'True', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit')
    expected = ('True', 'FailedJobs', 'jobset failed due to one or more job failures '
                '(first failed job: fails-node-0)')
    assert _conditions(cluster, 'JobSet', 'fails')['Failed'] == expected
    assert _conditions(cluster, 'TrainJob', 'fails')['Failed'] == expected
    # Node 0, waiting for its peer, was deleted by the Job controller; node 1's pod and log stay.
    cluster.wait(lambda: len(cluster.pods) == 1)
    [pod] = k8s.pods(core, 'ml-team', 'fails', k8s.TRAINJOB)
    assert pod.status.phase == 'Failed' and pod.spec.hostname == 'fails-node-0-1'
    assert "'FAIL': '3'" in k8s.failed_pod_logs(core, 'ml-team', 'fails', k8s.TRAINJOB)


def test_max_restarts_recreates_every_job_then_fails(cluster):
    objects, _, _ = k8s.clients()
    _apply(objects, _runtime(failurePolicy={'maxRestarts': 1}))
    _create(objects, _trainjob('again', env=[('FAIL', '3')]))
    cluster.wait(lambda: _ended(cluster, 'again'), timeout=90)
    with cluster.lock:
        status = copy.deepcopy(cluster.objects[('JobSet', 'ml-team', 'again')]['status'])
        restarted = [e for e in cluster.events if e['reason'] ==
                     'RestartJobSetFailurePolicyAction']
    assert (status['restarts'], status['restartsCountTowardsMax']) == (1, 1)
    assert len(restarted) == 1
    assert _conditions(cluster, 'TrainJob', 'again')['Failed'] == (
        'True', 'ReachedMaxRestarts', 'jobset failed due to reaching max number of restarts '
        '(first failed job: again-node-0)')
    with cluster.lock:   # the Job of the first attempt was deleted, the second one's is here
        [job] = [o for (k, _, _), o in cluster.objects.items() if k == 'Job']
    assert job['metadata']['labels']['jobset.sigs.k8s.io/restart-attempt'] == '1'


def test_a_foreground_delete_removes_the_jobset_jobs_pods_service_and_snapshot_first(cluster):
    objects, _, _ = k8s.clients()
    _apply(objects, _runtime())
    _create(objects, _trainjob('gone'))
    cluster.wait(lambda: _ended(cluster, 'gone'), timeout=60)
    with cluster.lock:
        kinds = sorted(k for k, _, _ in cluster.objects)
        assert ('ml-team', 'gone') in cluster.services   # JobSet's headless Service
    assert kinds == ['ClusterTrainingRuntime', 'ConfigMap', 'Job', 'JobSet', 'TrainJob']
    foreground = dataclasses.replace(k8s.TRAINJOB, propagation='Foreground')
    assert k8s.delete(objects, 'ml-team', 'gone', foreground)
    with cluster.lock:   # still there, being deleted
        assert cluster.objects[('TrainJob', 'ml-team', 'gone')]['metadata']['finalizers'] == [
            'foregroundDeletion']
    cluster.wait(lambda: ('TrainJob', 'ml-team', 'gone') not in cluster.objects)
    with cluster.lock:
        assert sorted(k for k, _, _ in cluster.objects) == ['ClusterTrainingRuntime']
        assert cluster.pods == {} and cluster.services == {}
    assert not k8s.delete(objects, 'ml-team', 'gone', k8s.TRAINJOB)   # 404: already gone


def test_a_background_delete_removes_the_trainjob_at_once_and_the_rest_after(cluster):
    """What the task does (launch/k8s.py TRAINJOB): the TrainJob goes at once, so its
    controller cannot apply its JobSet again; the collector removes the JobSet, Jobs, pods,
    Service and snapshot, whose owner is gone."""
    objects, _, _ = k8s.clients()
    _apply(objects, _runtime())
    _create(objects, _trainjob('bg'))
    cluster.wait(lambda: _ended(cluster, 'bg'), timeout=60)
    assert k8s.delete(objects, 'ml-team', 'bg', k8s.TRAINJOB)
    with cluster.lock:
        assert ('TrainJob', 'ml-team', 'bg') not in cluster.objects
    cluster.wait(lambda: sorted(k for k, _, _ in cluster.objects) == ['ClusterTrainingRuntime']
                 and not cluster.pods and not cluster.services)


def test_discovery_serves_only_the_installed_apis(cluster):
    objects, _, _ = k8s.clients()
    assert k8s.served(objects, k8s.TRAINJOB) and not k8s.served(objects, k8s.TFJOB)
    assert [r['path'] for r in cluster.discoveries] == [
        '/apis/trainer.kubeflow.org/v1alpha1', '/apis/kubeflow.org/v1']
    assert cluster.requests == []
