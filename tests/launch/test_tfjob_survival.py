"""How the TFJob task (launch/tfjob.py) survives what a cluster does to it, against
the fake Kubernetes cluster (tests/support/fake_k8s_server.py): a same-name job left by a killed
attempt or still terminating, pods that never start, and the task itself being cancelled.
"""
import dataclasses
import os
import signal
import time

import pytest

from launch import k8s, tfjob, worker
from training import loop
import fake_k8s_operator
from helpers import REPO_ROOT, write_digit_examples
import tfjob_helpers
import warm_python
from tfjob_helpers import failing_job as _failing_job, paths as _paths


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    yield from tfjob_helpers.cluster(tmp_path, monkeypatch)


_STUBBORN = ['python', '-c', 'import signal, time; signal.signal(signal.SIGTERM, '
             'signal.SIG_IGN); time.sleep(600)']


def _stale(cluster, name):
    """A running job of this name whose pods outlive SIGTERM; returns when both run."""
    stale = tfjob.manifest(name, tfjob.TFJobSpec(workers=2, image='local'), [])
    stale['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0][
        'command'] = _STUBBORN
    with cluster.lock:
        cluster.start('ml-team', stale)
    cluster.wait(lambda: [p['status'].get('phase') for p in cluster.pods.values()] ==
                 ['Running', 'Running'])
    with cluster.lock:
        return {p['metadata']['uid'] for p in cluster.pods.values()}


def _gone_before_created(cluster, old_pods):
    """The old pods had been removed (end of their grace) before the new job was created."""
    removed = {uid: t for t, ns, pod, uid in cluster.removed}
    [created] = [r['time'] for r in cluster.requests if r['method'] == 'POST']
    assert created > max(removed[uid] for uid in old_pods)


@pytest.mark.slow
def test_a_job_left_by_a_killed_attempt_is_deleted_and_waited_for(cluster, tmp_path):
    old_pods = _stale(cluster, 'train-same')
    spec = tfjob.TFJobSpec(workers=2, image='local')
    with pytest.raises(RuntimeError, match='No files matched pattern'):
        tfjob.run(_failing_job(tmp_path), spec=spec, name='train-same', poll_seconds=0.2,
                  **_paths(tmp_path))
    assert [c['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0]
            ['command'][:3] for c in cluster.created] == [
        _STUBBORN[:3], ['python', '-m', 'launch.worker']]
    calls = tfjob_helpers.calls(cluster)
    assert calls[:3] == [('GET', 'train-same'), ('GET', 'pods'), ('DELETE', 'train-same')]
    _gone_before_created(cluster, old_pods)
    # Foreground: the job stayed visible, being deleted, while its pods terminated.
    assert any(r['method'] == 'GET' and r['path'].endswith('/train-same') and r['status'] == 200
               for r in cluster.requests[3:calls.index(('POST', 'tfjobs'))])
    assert cluster.jobs == {} and cluster.pods == {}


def test_a_same_name_job_waits_for_the_terminating_pods_of_a_deleted_one(cluster):
    """Deleted in the background (kubectl's default): the job is gone at once, its pods are
    still terminating, and a same-name job would meet them (the operator's pod creation gets
    409 and retries while the old pods run on). The task waits for them first."""
    old_pods = _stale(cluster, 'train-bg')
    with cluster.lock:
        cluster.delete_job('train-bg', 'Background')
    body = tfjob.manifest('train-bg', tfjob.TFJobSpec(workers=2, image='local'), [])
    body['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0][
        'command'] = ['python', '-c', 'print("new")']
    objects, core, namespace = k8s.clients()
    tfjob._create(objects, core, namespace, body, poll_seconds=0.1)
    _gone_before_created(cluster, old_pods)
    cluster.wait(lambda: fake_k8s_operator.finished(cluster.jobs['train-bg'].get('status') or {})
                 == 'Succeeded')


@pytest.mark.parametrize('trouble, expected', [
    ('gpu', ['pod train-stuck-worker-0: Pending',
             'PodScheduled=False Unschedulable: 0/1 nodes are available: 1 Insufficient '
             'nvidia.com/gpu.', 'Warning FailedScheduling: 0/1 nodes are available']),
    ('image', ['pod train-stuck-worker-1: Pending', 'container tensorflow waiting: '
               'ImagePullBackOff: Back-off pulling image "registry/missing:1"',
               'Warning Failed: Failed to pull image "registry/missing:1"',
               'Warning ImagePullBackOff: Error pod train-stuck-worker-0 container tensorflow '
               'waiting message: Back-off pulling image'])])
def test_a_job_whose_pods_never_start_fails_after_the_deadline_with_their_state(
        tmp_path, monkeypatch, trouble, expected):
    server, cluster = tfjob_helpers.start(tmp_path, monkeypatch, unpullable=['registry/missing:1'])
    spec = tfjob.TFJobSpec(workers=2, image='registry/missing:1' if trouble == 'image' else 'i',
                           gpus=int(trouble == 'gpu'), start_timeout_s=2)
    try:
        began = time.time()
        with pytest.raises(RuntimeError) as error:
            tfjob.run(_failing_job(tmp_path), spec=spec, name='train-stuck', poll_seconds=0.2,
                      **_paths(tmp_path))
        assert 2 <= time.time() - began < 20
        message = str(error.value)
        assert message.startswith('TFJob ml-team/train-stuck: its 2 workers had not all '
                                  'started after 2 s (start_timeout_s)')
        for text in expected:
            assert text in message, message
        assert cluster.jobs == {} and cluster.pods == {}  # deleted, and waited for
    finally:
        server.shutdown()
        cluster.shutdown()
    assert cluster.errors == []


@pytest.mark.slow
def test_terminating_the_task_deletes_the_job(cluster, tmp_path):
    """KFP cancels a run by deleting the task's pod: SIGTERM. The job, whose workers would
    train for a very long time, must not train on."""
    for split, offset in (('train', 0), ('eval', 40)):
        write_digit_examples(str(tmp_path / split / 'part.gz'), ('0', '1'), 16, offset)
    job = dataclasses.replace(
        _failing_job(tmp_path), train_pattern=str(tmp_path / 'train' / '*'),
        eval_pattern=str(tmp_path / 'eval' / '*'),
        options=loop.LoopOptions.of(train_steps=100_000, global_batch_size=8, learning_rate=1e-3,
                                    checkpoint_interval=100_000,
                                    model_builder='models.resnet.build_model'))
    job_file = tmp_path / 'job.json'
    job_file.write_text(worker.job_to_json(job))
    script = tmp_path / 'task.py'
    script.write_text('import sys\n'
                      'from launch import tfjob, worker\n'
                      'job = worker.job_from_json(open(sys.argv[1]).read())\n'
                      'tfjob.run(job, spec=tfjob.TFJobSpec(workers=2, image="i"), '
                      'name="train-cancel", serving_dir=sys.argv[2] + "/s", '
                      'log_dir=sys.argv[2] + "/logs", checkpoint_dir=sys.argv[2] + "/c", '
                      'poll_seconds=0.2)\n')
    # The task in the warm interpreter, with the environment the cluster fixture set up.
    task = warm_python.start([str(script), str(job_file), str(tmp_path)], REPO_ROOT,
                             dict(os.environ), os.devnull, str(tmp_path / 'task.log'))
    deadline = time.time() + 120
    while not any(r['method'] == 'POST' for r in cluster.requests):  # created, now waiting
        assert time.time() < deadline and task.poll() is None, 'the task never waited'
        time.sleep(0.2)
    cluster.wait(lambda: [p['status'].get('phase') for p in cluster.pods.values()] ==
                 ['Running', 'Running'])
    os.kill(task.pid, signal.SIGTERM)
    assert task.wait(timeout=60) != 0
    delete = [r for r in cluster.requests if r['method'] == 'DELETE']
    assert [r['path'].rsplit('/', 1)[-1] for r in delete] == ['train-cancel']
    cluster.wait(lambda: cluster.jobs == {} and cluster.pods == {})  # asynchronous


def test_the_failed_worker_log_is_reported_and_backoff_limit_would_delete_it(cluster):
    """One worker fails, the other waits in its collectives: the task reports the failed pod's
    own log. With backoffLimit 0 (why launch/tfjob.py sets none) the operator deletes every pod
    before marking the job Failed (kubeflow/trainer#3419): there is no log left to report."""
    fails = ['python', '-c', 'import json, os, sys, time\n'
             'if json.loads(os.environ["TF_CONFIG"])["task"]["index"] == 1:\n'
             '    sys.exit("worker 1: bad record in shard 1")\n'
             'print("worker 0 waiting"); time.sleep(600)\n']
    for name, run_policy in (('train-kept', {}), ('train-limited', {'backoffLimit': 0})):
        body = tfjob.manifest(name, tfjob.TFJobSpec(workers=2, image='local'), [])
        body['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0][
            'command'] = fails
        body['spec']['runPolicy'].update(run_policy)
        with cluster.lock:
            cluster.start('ml-team', body)
    objects, core, namespace = k8s.clients()
    spec = tfjob.TFJobSpec(workers=2, image='local')
    for name in ('train-kept', 'train-limited'):
        assert tfjob._wait(objects, core, namespace, name, spec, poll_seconds=0.1) == 'Failed'
    kept = k8s.failed_pod_logs(core, namespace, 'train-kept')
    assert kept.startswith('--- pod train-kept-worker-1 (Failed), last lines:\n')
    assert 'worker 1: bad record in shard 1' in kept and 'worker 0' not in kept
    cluster.wait(lambda: not [n for _, n in cluster.pods if n.startswith('train-limited')])
    assert k8s.failed_pod_logs(core, namespace, 'train-limited') == '(no pods found)'
