"""End-to-end stops during training, and the same command run again (e2e).

One output, one command (`runner.py --local --steps 300`), three runs:
  1. Ctrl-C (SIGINT to the process group, as a terminal sends it) once the first checkpoint is
     complete: one line says where it stopped, exit code 130, nothing left running or served;
  2. the same command resumes from that checkpoint; SIGKILL to the whole group once it has
     saved a later one, as a crash would: nothing served;
  3. the same command serves the finished stages from the cache, resumes the trainer from the
     last checkpoint (saying so in the log), finishes the 300 steps and pushes version 1.
The two stops were two scenarios of their own before (each with a full run after it); one run
to the end after both shows the same.
"""
import glob
import os
import re
import signal

import pytest

from helpers import copy_digits, run_command, run_log, runner_command, stop_group_when

pytestmark = pytest.mark.e2e
STEPS = 300  # checkpoints every 100: one for each stop, and steps after the second


def _checkpoint_step(out: str) -> int:
    """The step of the checkpoint the trainer's `checkpoint` index names, 0 for none. TensorFlow
    rewrites the index (atomically) only once a checkpoint's files are complete; a
    ckpt-N.index alone can exist mid-save, and a kill then leaves nothing at N to resume from."""
    steps = [0]
    for path in glob.glob(os.path.join(out, 'pipeline_root', '_checkpoints', 'ImageTrainer', '*',
                                       'checkpoint')):
        try:
            with open(path) as handle:
                found = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', handle.read(), re.M)
        except OSError:  # replaced between the glob and the open
            continue
        steps.append(int(found[1]) if found else 0)
    return max(steps)


@pytest.fixture(scope='module')
def stopped_twice(tmp_path_factory):
    base = tmp_path_factory.mktemp('resume')
    data, out = copy_digits(str(base / 'data')), str(base / 'out')
    command = runner_command(data, out, '--steps', str(STEPS))
    interrupted = stop_group_when(command, lambda: _checkpoint_step(out) > 0, signal.SIGINT)
    served_after_interrupt = os.path.exists(os.path.join(out, 'serving'))
    from_step = _checkpoint_step(out)
    killed = stop_group_when(command, lambda: _checkpoint_step(out) > from_step,
                             signal.SIGKILL)
    served_after_kill = os.path.exists(os.path.join(out, 'serving'))
    finished = run_command(command, timeout=600)  # the warm interpreter: no signal to send
    return dict(out=out, interrupted=interrupted, killed=killed, finished=finished,
                served=(served_after_interrupt, served_after_kill))


def test_ctrl_c_in_training_prints_one_line_and_exits_130(stopped_twice):
    process, stdout, stderr = stopped_twice['interrupted']
    assert process.returncode == 130 and stderr == ''
    assert 'Traceback' not in stdout and 'KeyboardInterrupt' not in stdout
    match = re.fullmatch(r'interrupted at step (\d+); checkpoints kept; run the same command '
                         r'to resume \(from step (\d+)\)', stdout.splitlines()[-1])
    assert match and 100 <= int(match[2]) <= int(match[1]) < STEPS, stdout
    assert stopped_twice['served'][0] is False


def test_the_run_after_ctrl_c_resumes_where_it_said(stopped_twice):
    said = re.search(r'\(from step (\d+)\)$', stopped_twice['interrupted'][1].strip())[1]
    killed, killed_stdout, _ = stopped_twice['killed']
    assert killed.returncode == -signal.SIGKILL
    assert f'  training: resuming at step {said} of {STEPS}' in killed_stdout.splitlines()
    assert f'at step {said}' in run_log(killed_stdout).split('Resuming from checkpoint', 1)[1]
    assert stopped_twice['served'][1] is False  # killed mid-training: nothing pushed


def test_killed_trainer_resumes_when_the_pipeline_runs_again(stopped_twice):
    second = stopped_twice['finished']
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    log = run_log(second.stdout)  # the trainer's own lines are in the run's log
    assert 'Resuming from checkpoint' in log and 'at step ' in log
    resumed_at = int(log.split('Resuming from checkpoint', 1)[1].split('at step ')[1].split()[0])
    said = int(re.search(r'\(from step (\d+)\)$', stopped_twice['interrupted'][1].strip())[1])
    assert said < resumed_at < STEPS  # from the checkpoint the killed run saved, not the first
    assert f'step {STEPS}/{STEPS}' in log
    assert f'step {resumed_at - 50}/{STEPS}' not in log.split('Resuming from checkpoint', 1)[1]
    assert f'training: resuming at step {resumed_at} of {STEPS}' in second.stdout
    assert 'ImageTrainer        complete' in second.stdout
    summary = second.stdout[second.stdout.index('\nRun '):]
    assert 'ImageExampleGen cached' in summary and 'ImageTrainer complete' in summary
    assert 'pushed: version 1' in summary
    out = stopped_twice['out']
    assert glob.glob(os.path.join(out, 'pipeline_root', '_checkpoints', 'ImageTrainer', '*',
                                  '*.index')) == []  # cleaned up after the export
