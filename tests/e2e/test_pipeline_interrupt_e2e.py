"""End-to-end Ctrl-C in a Beam stage: SIGINT to the process group of `runner.py --local`, as a
terminal sends it (e2e). One line names the stage, exit code 130, nothing left running. Ctrl-C
during training, and the run that resumes after it: test_pipeline_resume_e2e.py.
"""
import glob
import os
import signal

import pytest

from pipeline.definition import beam_mode
from pipeline.definition import config as config_lib

from helpers import copy_digits, runner_command, stop_group_when

pytestmark = pytest.mark.e2e


def test_ctrl_c_in_a_beam_stage_with_worker_processes_names_the_stage(tmp_path):
    data, out = copy_digits(str(tmp_path / 'data')), str(tmp_path / 'out')
    # Beam's worker processes (what a large input gets by default), which get the SIGINT too.
    beam_args = ' '.join(beam_mode.MULTI_PROCESSING + (config_lib.SETUP_FILE_ARG,))
    stage_started = os.path.join(out, 'pipeline_root', 'StatisticsGen', '*', '*')
    process, stdout, stderr = stop_group_when(
        runner_command(data, out, f'--beam-args={beam_args}'), lambda: glob.glob(stage_started),
        signal.SIGINT)
    assert process.returncode == 130 and stderr == '' and 'Traceback' not in stdout
    assert stdout.splitlines()[-1] == ('interrupted in StatisticsGen; finished stages are '
                                       'cached; run the same command to resume')
