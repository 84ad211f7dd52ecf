"""End-to-end crash safety: SIGKILL `runner.py --local` during training, run it again (e2e).

The rerun must serve the finished stages from the cache, resume the trainer from its last
checkpoint (saying so in the log), finish the configured steps, and push a model.
"""
import glob
import os
import signal
import subprocess
import time

import pytest

from helpers import REPO_ROOT, copy_digits, run_log, runner_command

pytestmark = pytest.mark.e2e


def _command(data, out):
    return runner_command(data, out, '--steps', '400')


def _read(path):
    try:
        with open(path) as file:
            return file.read()
    except OSError:  # replaced between the glob and the open
        return ''


def test_killed_trainer_resumes_when_the_pipeline_runs_again(tmp_path):
    data = copy_digits(str(tmp_path / 'data'), per_class=30)
    out = str(tmp_path / 'out')
    # The `checkpoint` index names a checkpoint only once its files are complete (loop.py);
    # ckpt-100.index alone can exist mid-save, and a kill then leaves nothing to resume from.
    pattern = os.path.join(out, 'pipeline_root', '_checkpoints', 'ImageTrainer', '*',
                           'checkpoint')
    first = subprocess.Popen(_command(data, out), cwd=REPO_ROOT, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not any('ckpt-' in _read(path) for path in glob.glob(pattern)):
        assert first.poll() is None, 'the run ended before its first checkpoint'
        assert time.time() < deadline, 'no checkpoint within 300 s'
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)  # the whole process group, as a crash would
    first.wait()
    assert not os.path.exists(os.path.join(out, 'serving'))

    second = subprocess.run(_command(data, out), cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=600)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    log = run_log(second.stdout)  # the trainer's own lines are in the run's log
    assert 'Resuming from checkpoint' in log and 'at step ' in log
    resumed_at = int(log.split('Resuming from checkpoint', 1)[1].split('at step ')[1].split()[0])
    assert 100 <= resumed_at < 400
    assert 'step 400/400' in log
    assert f'step {resumed_at - 50}/400' not in log.split('Resuming from checkpoint', 1)[1]
    assert f'training: resuming at step {resumed_at} of 400' in second.stdout
    summary = second.stdout[second.stdout.index('\nRun '):]
    assert 'ImageExampleGen cached' in summary and 'ImageTrainer complete' in summary
    assert 'pushed: version' in summary
    assert glob.glob(os.path.join(out, 'pipeline_root', '_checkpoints', 'ImageTrainer', '*',
                                  '*.index')) == []  # cleaned up after the export
