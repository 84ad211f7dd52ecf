"""The trainer as a Kubernetes TFJob (components/trainer/tfjob.py) against a local fake Kubernetes
API server (tests/fake_k8s_server.py) with a transcribed Training Operator v1.9.0, scheduler and
kubelet: each Worker "pod" is a local process in its own network namespace, with only the
operator's TF_CONFIG (`<job>-worker-<i>.<ns>.svc:2222`) and its image's environment. The
`kubernetes` client calls, the executor's path and the 2-worker MultiWorkerMirroredStrategy
training are real; the cluster is not. The fake's own rules are tested in
tests/test_fake_k8s_server.py.
"""
import dataclasses
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf
from tfx.types import artifact_utils, standard_artifacts

from components.common import inputs as inputs_lib
from components.trainer import executor, job as job_lib, loop, tfjob, tfjob_k8s, workers
import fake_k8s_operator
import fake_k8s_server
from helpers import REPO_ROOT, write_digit_examples

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
    assert container['command'] == ['python', '-m', 'components.trainer.workers', '/r/job.json',
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


def _start(tmp_path, monkeypatch, **options):
    """The fake API server, and a kubeconfig naming it (what the task reads outside a pod)."""
    server, state = fake_k8s_server.start(str(tmp_path), **options)
    monkeypatch.setenv('KUBECONFIG', fake_k8s_server.write_kubeconfig(
        str(tmp_path / 'kubeconfig'), server, 'ml-team'))
    return server, state


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    server, state = _start(tmp_path, monkeypatch, grace_seconds=2)
    yield state
    server.shutdown()
    state.shutdown()
    assert state.errors == []


def _pod_log(tmp_path, pod: str) -> str:
    """A container's log as the node keeps it (/var/log/pods/<ns>_<pod>_<uid>/<container>/)."""
    [path] = glob.glob(str(tmp_path / 'pods' / f'ml-team_{pod}_*' / 'tensorflow' / '0.log'))
    with open(path) as handle:
        return handle.read()


def _artifacts(tmp_path, train_files=2):
    examples = standard_artifacts.Examples()
    examples.uri = str(tmp_path / 'examples')
    examples.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    for index in range(train_files):  # one file per worker: FILE sharding
        write_digit_examples(os.path.join(examples.uri, 'Split-train', f'part-{index}.gz'),
                             ('0', '1'), 16, offset=16 * index)
    write_digit_examples(os.path.join(examples.uri, 'Split-eval', 'part-0.gz'), ('0', '1'), 8,
                         offset=40)
    examples.set_string_custom_property('class_names', json.dumps(['0', '1']))
    examples.set_int_custom_property('num_written_train', 32 * train_files)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / '5')
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / '5')
    return {'examples': [examples]}, {'model': [model], 'model_run': [model_run]}


def _properties(**overrides):
    props = dict(model_builder='models.resnet.build_model', image_height=8, image_width=8,
                 channels=1, train_steps=6, train_epochs=0.0, eval_steps=0,
                 global_batch_size=8, accumulation_steps=1, mixed_precision='float32',
                 optimizer='adam', learning_rate=3e-3, warmup_steps=0, checkpoint_interval=100,
                 seed=1, devices='[]', tfjob=tfjob.TFJobSpec(workers=2, image='local').to_json())
    props.update(overrides)
    return props


def _calls(state):
    """(method, last path segment) of every request: a job name, 'tfjobs', 'pods', 'log'."""
    return [(r['method'], r['path'].rsplit('/', 1)[-1]) for r in state.requests]


def _check_lifecycle(state, name):
    """Nothing left of an earlier job was found, the job was created, polled, deleted in the
    foreground, and waited for until it and its pods were gone."""
    calls = _calls(state)
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
    inputs, outputs = _artifacts(tmp_path)
    executor.Executor().Do(inputs, outputs, _properties())
    [model], [model_run] = outputs['model'], outputs['model_run']
    [created] = cluster.created
    name = created['metadata']['name']
    assert created['spec']['tfReplicaSpecs']['Worker']['replicas'] == 2
    # Both pods ran the job on the 2-worker cluster their TF_CONFIG described.
    for index in range(2):
        text = _pod_log(tmp_path, f'{name}-worker-{index}')
        assert 'Training models.resnet.build_model on 2 replica(s)' in text, text[-2000:]
        assert 'FILE sharding of the train split' in text
    serving = os.path.join(model.uri, 'Format-Serving')
    assert 'serving_default' in tf.saved_model.load(serving).signatures
    recorded = {key: model.get_float_custom_property(key)
                for key in ('num_workers', 'num_replicas', 'steps_run')}
    assert recorded == {'num_workers': 2.0, 'num_replicas': 2.0, 'steps_run': 6.0}
    assert model.get_string_custom_property('input_sharding') == 'FILE'
    assert json.load(open(os.path.join(model_run.uri, 'metrics.json')))['num_workers'] == 2
    # Created in the kubeconfig's namespace, polled until it ended, then deleted.
    _check_lifecycle(cluster, name)


@pytest.mark.slow
def test_a_failing_pod_fails_the_task_with_its_log_and_the_job_is_deleted(cluster, tmp_path):
    inputs, outputs = _artifacts(tmp_path, train_files=1)
    for name in os.listdir(os.path.join(inputs['examples'][0].uri, 'Split-train')):
        os.remove(os.path.join(inputs['examples'][0].uri, 'Split-train', name))
    with pytest.raises(RuntimeError) as error:
        executor.Executor().Do(inputs, outputs, _properties())
    message = str(error.value)
    name = cluster.created[0]['metadata']['name']
    assert message.startswith(f'TFJob ml-team/{name} failed; --- pod {name}-worker-')
    assert '(Failed), last lines:' in message
    missing = os.path.join(inputs['examples'][0].uri, 'Split-train', '*')
    assert f'No files matched pattern: {missing}' in message  # the pod's own error
    assert ('GET', 'log') in _calls(cluster)
    _check_lifecycle(cluster, name)
    left = subprocess.run(['pgrep', '-f', os.path.join(outputs['model_run'][0].uri, 'tfjob')],
                          capture_output=True, text=True)
    assert left.stdout == ''
    assert not os.path.exists(os.path.join(outputs['model'][0].uri, 'Format-Serving'))


def _failing_job(tmp_path):
    """A job whose workers fail at once (no train files): cheap to start and end."""
    return job_lib.TrainJob(
        train_pattern=str(tmp_path / 'missing' / '*'), eval_pattern=str(tmp_path / 'e' / '*'),
        class_names=('0', '1'), image_shape=(8, 8, 1), model_builder='models.resnet.build_model',
        options=loop.LoopOptions(train_steps=5, global_batch_size=8, learning_rate=1e-3),
        input_spec=inputs_lib.InputSpec())


def _paths(tmp_path):
    return dict(serving_dir=str(tmp_path / 'serving'), log_dir=str(tmp_path / 'logs'),
                checkpoint_dir=str(tmp_path / 'ckpt'))


# A pod that outlives SIGTERM (a worker finishing a step or a checkpoint): it goes only when the
# kubelet kills it at the end of its grace period (the fixture's 2 s).
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
        _STUBBORN[:3], ['python', '-m', 'components.trainer.workers']]
    calls = _calls(cluster)
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
    objects, core, namespace = tfjob_k8s.clients()
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
    server, cluster = _start(tmp_path, monkeypatch, unpullable=['registry/missing:1'])
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
        options=loop.LoopOptions(train_steps=100_000, global_batch_size=8, learning_rate=1e-3,
                                 checkpoint_interval=100_000))
    job_file = tmp_path / 'job.json'
    job_file.write_text(workers.job_to_json(job))
    script = ('import sys\n'
              'from components.trainer import tfjob, workers\n'
              'job = workers.job_from_json(open(sys.argv[1]).read())\n'
              'tfjob.run(job, spec=tfjob.TFJobSpec(workers=2, image="i"), name="train-cancel",'
              ' serving_dir=sys.argv[2] + "/s", log_dir=sys.argv[2] + "/logs",'
              ' checkpoint_dir=sys.argv[2] + "/c", poll_seconds=0.2)\n')
    task = subprocess.Popen([sys.executable, '-c', script, str(job_file), str(tmp_path)],
                            cwd=REPO_ROOT)
    deadline = time.time() + 120
    while not any(r['method'] == 'POST' for r in cluster.requests):  # created, now waiting
        assert time.time() < deadline and task.poll() is None, 'the task never waited'
        time.sleep(0.2)
    cluster.wait(lambda: [p['status'].get('phase') for p in cluster.pods.values()] ==
                 ['Running', 'Running'])
    task.send_signal(signal.SIGTERM)
    assert task.wait(timeout=60) != 0
    delete = [r for r in cluster.requests if r['method'] == 'DELETE']
    assert [r['path'].rsplit('/', 1)[-1] for r in delete] == ['train-cancel']
    cluster.wait(lambda: cluster.jobs == {} and cluster.pods == {})  # asynchronous
