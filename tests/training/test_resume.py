"""Crash safety: SIGKILL a training process after a checkpoint, rerun it, and compare (slow)."""
import json
import os
import signal
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from helpers import DIGITS, REPO_ROOT, run_command
import warm_python

pytestmark = pytest.mark.slow
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'resume_worker.py')


def _write_split(path, per_class, offset):
    from core import features
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path, options='GZIP') as writer:
        for label, name in enumerate(('0', '1', '2')):
            names = sorted(os.listdir(os.path.join(DIGITS, name)))[offset:offset + per_class]
            for file_name in names:
                with open(os.path.join(DIGITS, name, file_name), 'rb') as handle:
                    example = features.make_example(handle.read(), label, name, 8, 8, file_name)
                writer.write(example.SerializeToString())


def _latest_step(checkpoints):
    latest = tf.train.latest_checkpoint(checkpoints)
    return int(latest.rsplit('-', 1)[1]) if latest else 0


def _weights(model_dir):
    loaded = tf.saved_model.load(model_dir)
    return {v.name: v.numpy() for v in loaded.variables}


def test_killed_training_resumes_from_its_checkpoint_and_ends_like_an_uninterrupted_run(
        tmp_path):
    data = str(tmp_path / 'data')
    _write_split(os.path.join(data, 'train', 'part.gz'), per_class=40, offset=0)
    _write_split(os.path.join(data, 'eval', 'part.gz'), per_class=10, offset=40)

    # Each run a child of the warm interpreter (TensorFlow imported, no runtime started), as a
    # fresh `python` would run it.
    straight = run_command([sys.executable, WORKER, data, str(tmp_path / 'straight'),
                            str(tmp_path / 'ckpt_straight'), '--unhurried'], timeout=300)
    assert straight.returncode == 0, straight.stderr[-2000:]

    checkpoints = str(tmp_path / 'ckpt')
    first = warm_python.start([WORKER, data, str(tmp_path / 'killed'), checkpoints], REPO_ROOT,
                              dict(os.environ), os.devnull, str(tmp_path / 'killed.log'))
    deadline = time.time() + 240
    # Wait on the checkpoint state file, not on ckpt-40.index: the manager writes the index
    # before it atomically updates the state file, so a kill between the two leaves the state
    # naming the previous checkpoint (seen in CI as a resume from step 20).
    while _latest_step(checkpoints) < 40:
        assert first.poll() is None and time.time() < deadline, 'no checkpoint appeared'
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    assert first.wait(timeout=60) == -signal.SIGKILL
    assert not os.path.exists(tmp_path / 'killed' / 'model')  # nothing half-exported
    saved_step = _latest_step(checkpoints)
    assert 40 <= saved_step < 150

    second = run_command([sys.executable, WORKER, data, str(tmp_path / 'killed'), checkpoints,
                          '--unhurried'], timeout=300)
    log = second.stderr
    assert second.returncode == 0, log[-2000:]
    assert f'Resuming from checkpoint {checkpoints}/ckpt-{saved_step} at step {saved_step}' in log
    assert 'step 150/150' in log
    with open(tmp_path / 'killed' / 'logs' / 'metrics.json') as handle:
        assert json.load(handle)['start_step'] == saved_step
    assert not os.path.exists(checkpoints)  # deleted once the model is exported

    resumed, uninterrupted = (_weights(str(tmp_path / 'killed' / 'model')),
                              _weights(str(tmp_path / 'straight' / 'model')))
    assert resumed.keys() == uninterrupted.keys()
    for name in resumed:
        np.testing.assert_array_equal(resumed[name], uninterrupted[name], err_msg=name)
