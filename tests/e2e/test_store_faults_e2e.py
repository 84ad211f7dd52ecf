"""When the store fails during a run (docs/storage.md, "When the store fails"): a local run on a
SeaweedFS of its own (tests/support/seaweedfs.py) whose processes this test kills (SIGKILL: a
crash or an evicted pod, connections refused), stops (SIGSTOP: hung, connections accepted and
never answered) and starts again, at several points of the run. Its S3 gateway is a process of
its own, so that the first two crashes kill only the gateway: a run sees the same refused
endpoint, and the gateway restarted is ready in a second, where a whole restarted SeaweedFS
fails writes for 15 s (its master's warm-up) before the next run may start. The whole store is
restarted once, under the last run's Pusher, where riding out that warm-up is the point.

One chain of runs into one output, each the next one's "after", so that every fault is followed
by the run that must recover from it:
  1. SIGKILL (the gateway) during ImageExampleGen: the run ends within the bound, exit 75, one
     line naming the store, bucket and stage; ML Metadata shows the stage FAILED; nothing left
     running; the lock is free; nothing in serving/.
  2. the store back, `--steps 80`: SIGKILL (the gateway) during training (after checkpoints):
     the same, for ImageTrainer.
  3. the same command, the store back, and a blip (SIGSTOP for ~5 s) during the Evaluator: the
     run completes: it ingests again (the failed Examples are never used), resumes training
     from run 2's checkpoints, and pushes version 1.
  4. `--steps 90`: the store hung for good during the Pusher: exit 75, the Pusher named;
     version 1 untouched and the only one models.config names.
  5. the same command once the store answers: Trainer and Evaluator cached (nothing trained
     again), version 2 pushed and loadable, although the store is restarted under the Pusher
     (connections refused for a few seconds, then writes failing through its master's 15-s
     warm-up: a blip the clients ride out).
The bound here is `--store-timeout 12s` (each fault that ends a run waits for it, three times:
short enough to keep the test short, long enough over the blips the runs must ride out, a 5-s
pause and a restart of the store); the assertion allows a generous margin for a busy
machine (the product's contract is the bound plus a probe, not a figure of this machine).
"""
import json
import os
import re
import subprocess
import tempfile
import time

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2
import pytest
import tensorflow as tf

import seaweedfs as seaweedfs_lib
import warm_python
from core import store_watch
from pipeline.runs import runlock
from helpers import REPO_ROOT, copy_digits, runner_command

pytestmark = pytest.mark.e2e

BOUND = 12            # s, --store-timeout
# The watch's probe (interval + timeout), the end's own bound, and a loaded 2-core machine.
MARGIN = 120


@pytest.fixture(scope='module')
def store():
    """A SeaweedFS of this file's own: the session's is shared by other tests."""
    server = seaweedfs_lib.Server(gateway_apart=True)
    yield server
    server.stop()


def _run(command, env, when=None, fault=None, timeout=900):
    """Runs command in a session of its own; once when(stdout, log) is true, applies fault();
    returns (exit code, stdout, seconds from the fault to the exit). Checks that nothing of the
    session is left alive."""
    with tempfile.TemporaryDirectory(prefix='fault-') as folder:
        out, err = os.path.join(folder, 'stdout'), os.path.join(folder, 'stderr')
        child = warm_python.start(command[1:], REPO_ROOT, env, out, err, new_session=True)
        faulted = None
        deadline = time.monotonic() + timeout
        while child.poll() is None:
            assert time.monotonic() < deadline, open(out).read()
            if fault is not None and faulted is None and when(_read(out), _log(_read(out))):
                fault()
                faulted = time.monotonic()
            time.sleep(0.1)
        code = child.wait(timeout=60)
        ended = time.monotonic()
        stdout, stderr = _read(out), _read(err)
    listed = subprocess.run(['ps', '-s', str(child.pid), '-o', 'stat=,args='],
                            capture_output=True, text=True).stdout.splitlines()
    alive = [line for line in listed if not line.lstrip().startswith('Z')]
    assert alive == [], f'processes of the run are still alive: {alive}'
    assert fault is None or faulted is not None, f'the fault point never came:\n{stdout}'
    # The figures of docs/benchmarks.md, "When the store fails" (pytest -s shows them).
    print(f'\nFAULT {getattr(fault, "__name__", None)}: exit {code} '
          f'{"" if faulted is None else f"{ended - faulted:.1f} s after the fault"}; '
          f'last line: {stdout.strip().splitlines()[-1] if stdout.strip() else ""}')
    return code, stdout + stderr, (ended - faulted if faulted else None)


def _read(path):
    """The file's text; '' until the run has created it."""
    try:
        with open(path, errors='replace') as handle:
            return handle.read()
    except FileNotFoundError:
        return ''


def _log(stdout):
    """The run log's text, once the console named it."""
    first = stdout.split('\n', 1)[0]
    if '; log: ' not in first or not os.path.exists(first.split('; log: ', 1)[1]):
        return ''
    return _read(first.split('; log: ', 1)[1])


def _states(out, stdout):
    """{stage: state} of the run the console names, read from ML Metadata."""
    run_id = stdout.split('\n', 1)[0].split(';')[0][len('Run '):]
    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = os.path.join(out, 'metadata.sqlite')
    config.sqlite.connection_mode = metadata_store_pb2.SqliteMetadataSourceConfig.READONLY
    mlmd = metadata_store.MetadataStore(config)
    context = mlmd.get_context_by_type_and_name('pipeline_run', run_id)
    names = {t.id: t.name.rsplit('.', 1)[-1] for t in mlmd.get_execution_types()}
    states = {v: k for k, v in metadata_store_pb2.Execution.State.items()}
    return {names[e.type_id]: states[e.last_known_state]
            for e in mlmd.get_executions_by_context(context.id)}


def _assert_ended_by_the_store(code, stdout, seconds, store, bucket, stage, out):
    assert code == store_watch.EXIT_STORE_DOWN, stdout[-3000:]
    assert seconds < BOUND + MARGIN, (seconds, stdout[-3000:])
    line = f'{stage}: the store at {store.endpoint} (bucket {bucket}) did not answer for '
    said = [text for text in stdout.splitlines() if line in text]
    assert len(said) == 1, stdout[-3000:]
    assert 'Traceback' not in stdout
    states = _states(out, stdout)
    assert states[stage] == 'FAILED', states
    assert not {'NEW', 'RUNNING'} & set(states.values()), states
    summary = json.loads(_read(stdout.split('; log: ', 1)[1].split('\n')[0].replace(
        '.log', '.summary.json')))
    assert summary['exit_code'] == 75 and summary['failed_stage'] == stage
    assert summary['error'] == said[0]
    lock = runlock.OutputLock(out)
    lock.acquire(wait=False)   # released: the next scheduled run is not blocked
    lock.release()


def _serving(store, bucket):
    """{version: has saved_model.pb} in serving/, and the versions models.config names."""
    keys = store.keys(bucket, 'serving/')
    found = {}
    for key in keys:
        part = key.split('/')[1]
        if part.isdigit():
            found[int(part)] = found.get(int(part), False) or key.endswith('/saved_model.pb')
    config = store.client().get_object(Bucket=bucket, Key='serving/models.config')[
        'Body'].read().decode() if 'serving/models.config' in keys else ''
    return found, config


def _labelled(config):
    """The versions models.config names (its version labels and any specific versions)."""
    return {int(v) for v in re.findall(r'(?:value|versions):\s*(\d+)', config)}


def test_store_faults_end_the_run_in_one_line_and_the_next_run_recovers(store, tmp_path):
    bucket = store.new_bucket()
    env = dict(os.environ, **store.env())
    data, out = copy_digits(str(tmp_path / 'data'), per_class=20), str(tmp_path / 'out')
    base = runner_command(data, out, '--config', 'smoke', '--pipeline-root',
                          f's3://{bucket}/root', '--serving-dir', f's3://{bucket}/serving',
                          '--store-timeout', f'{BOUND}s')

    def running(stage):
        return lambda stdout, log: f'Component {stage} is running.' in log

    # 1. SIGKILL during ingestion.
    code, stdout, seconds = _run(base, env, running('ImageExampleGen'), store.kill_gateway)
    _assert_ended_by_the_store(code, stdout, seconds, store, bucket, 'ImageExampleGen', out)
    store.start()
    assert _serving(store, bucket) == ({}, '')

    # 2. SIGKILL during training, after its first checkpoints (every 10 steps in smoke).
    training = base + ['--steps', '80']
    code, stdout, seconds = _run(training, env, lambda stdout, log: 'training: step' in stdout,
                                 store.kill_gateway)
    _assert_ended_by_the_store(code, stdout, seconds, store, bucket, 'ImageTrainer', out)
    store.start()
    assert _serving(store, bucket) == ({}, '')

    # 3. The next run, with a blip of ~5 s in the Evaluator: it completes and pushes.
    def blip():
        store.pause()
        time.sleep(5)
        store.resume()
    code, stdout, _ = _run(training, env, running('Evaluator'), blip)
    assert code == 0, stdout[-4000:]
    assert 'training: resuming at step' in stdout, stdout   # from run 2's checkpoints
    assert f'pushed: version 1 at s3://{bucket}/serving/1' in stdout, stdout
    assert _serving(store, bucket)[0] == {1: True}

    # 4. The store hung for good during the Pusher.
    pushing = base + ['--steps', '90']
    try:
        code, stdout, seconds = _run(pushing, env, running('Pusher'), store.pause)
    finally:
        store.resume()
    _assert_ended_by_the_store(code, stdout, seconds, store, bucket, 'Pusher', out)
    versions, config = _serving(store, bucket)
    complete = [v for v, whole in versions.items() if whole]
    assert complete == [1], versions   # a partial version 2 at most, never loadable
    assert _labelled(config) == {1}, config

    # 5. The next run: nothing trained or evaluated again, version 2 pushed; and the store
    # restarted under the Pusher (refused for a few seconds, then its writes failing through the
    # 15 s of its master's warm-up) is ridden out.
    def restart():
        store.kill()
        store.start()
    code, stdout, _ = _run(pushing, env, running('Pusher'), restart)
    assert code == 0, stdout[-4000:]
    cached = [line.split()[0] for line in stdout.splitlines() if ' cached ' in line]
    assert {'ImageTrainer', 'ServedModelBaseline', 'Evaluator'} <= set(cached), stdout
    assert f'pushed: version 2 at s3://{bucket}/serving/2' in stdout, stdout
    versions, config = _serving(store, bucket)
    assert versions == {1: True, 2: True}
    assert _labelled(config) == {2}, config
    # Loaded from a download: this process's tensorflow-io may be bound to another server.
    local = tmp_path / 'v2'
    for key in store.keys(bucket, 'serving/2/'):
        target = local / key[len('serving/2/'):]
        target.parent.mkdir(parents=True, exist_ok=True)
        store.client().download_file(bucket, key, str(target))
    assert tf.saved_model.load(str(local)).signatures
