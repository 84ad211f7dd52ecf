"""End-to-end Ctrl-C: SIGINT to the process group of `runner.py --local`, as a terminal sends
it (e2e). One line says where the run stopped, exit code 130, nothing left running; the same
command then resumes.
"""
import glob
import os
import re
import signal
import subprocess
import time

import pytest

from pipeline import beam_mode
from pipeline import config as config_lib

from helpers import REPO_ROOT, copy_digits, runner_command

pytestmark = pytest.mark.e2e


def _interrupt_when(command, pattern):
    """Starts command in its own process group, sends the group SIGINT once a file matching
    pattern exists; returns the ended process, its stdout and stderr."""
    # SIGINT as a terminal delivers it: a test session started in the background by a
    # non-interactive shell (`make test &`) ignores SIGINT, and a child would inherit that.
    process = subprocess.Popen(command, cwd=REPO_ROOT, start_new_session=True, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 300
    while not glob.glob(pattern):
        assert process.poll() is None, process.communicate()
        assert time.time() < deadline, f'no {pattern} within 300 s'
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    leftover = subprocess.run(['pgrep', '-s', str(process.pid)], capture_output=True, text=True)
    assert leftover.stdout == '', 'processes of the run are still alive'
    return process, stdout, stderr


def test_ctrl_c_in_training_prints_one_line_exits_130_and_the_rerun_resumes(tmp_path):
    data, out = copy_digits(str(tmp_path / 'data')), str(tmp_path / 'out')
    command = runner_command(data, out, '--steps', '400')
    # TensorFlow writes the `checkpoint` index last: then the first checkpoint is complete.
    process, stdout, stderr = _interrupt_when(command, os.path.join(
        out, 'pipeline_root', '_checkpoints', 'ImageTrainer', '*', 'checkpoint'))
    assert process.returncode == 130 and stderr == ''
    assert 'Traceback' not in stdout and 'KeyboardInterrupt' not in stdout
    last = stdout.splitlines()[-1]
    match = re.fullmatch(r'interrupted at step (\d+); checkpoints kept; run the same command '
                         r'to resume \(from step (\d+)\)', last)
    assert match and 100 <= int(match[2]) <= int(match[1]) < 400, stdout
    assert not os.path.exists(os.path.join(out, 'serving'))

    rerun = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert f'  training: resuming at step {match[2]} of 400' in rerun.stdout
    assert 'ImageTrainer        complete' in rerun.stdout and 'pushed: version 1' in rerun.stdout


def test_ctrl_c_in_a_beam_stage_with_worker_processes_names_the_stage(tmp_path):
    data, out = copy_digits(str(tmp_path / 'data')), str(tmp_path / 'out')
    # Beam's worker processes (what a large input gets by default), which get the SIGINT too.
    beam_args = ' '.join(beam_mode.MULTI_PROCESSING + (config_lib.SETUP_FILE_ARG,))
    process, stdout, stderr = _interrupt_when(
        runner_command(data, out, f'--beam-args={beam_args}'),
        os.path.join(out, 'pipeline_root', 'StatisticsGen', '*', '*'))
    assert process.returncode == 130 and stderr == '' and 'Traceback' not in stdout
    assert stdout.splitlines()[-1] == ('interrupted in StatisticsGen; finished stages are '
                                       'cached; run the same command to resume')
