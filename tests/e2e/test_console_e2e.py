"""End-to-end console: `runner.py --local` shows a line per stage and the summary, the run's log
keeps the rest, and a failed stage is named with its reason (e2e).

The default run uses the default Beam settings (worker processes): their relayed logs, TFX's
INFO chatter and TensorFlow's start-up lines are what used to flood the console.
"""
import os
import subprocess

import pytest

from helpers import REPO_ROOT, copy_digits, run_command, run_log, runner_command

pytestmark = pytest.mark.e2e

STAGES = ('ImageExampleGen', 'ImportSchemaGen', 'StatisticsGen', 'ExampleValidator',
          'AnomalyGate', 'ImageTrainer', 'ServedModelBaseline', 'DriftCheck', 'Evaluator',
          'Pusher')
NOISE = ('Worker:', 'Using Any for unsupported type', 'cuDNN', 'cuBLAS', 'Traceback',
         'Assets written', 'Component ', 'MetadataStore', ' I ', ' W ')


def _run(command):
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    return result, result.stdout.splitlines()


def _assert_quiet(result, lines, state):
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stderr == ''
    assert len(lines) <= 40, result.stdout
    for stage in STAGES:  # "<stage> <state> <seconds> s [figure]", in order
        assert sum(line.split()[:2] == [stage, state] for line in lines) == 1, result.stdout
    for noise in NOISE:
        assert noise not in result.stdout, noise


def test_a_default_run_prints_a_line_per_stage_and_the_summary_and_logs_the_rest(tmp_path):
    data, out = copy_digits(str(tmp_path / 'data')), str(tmp_path / 'out')
    first, lines = _run(runner_command(data, out, '--steps', '100'))
    _assert_quiet(first, lines, 'complete')
    assert lines[0].startswith('Run ') and '; log: ' + os.path.join(out, 'logs') in lines[0]
    assert [line for line in lines if line.startswith('ImageExampleGen')][0].endswith(
        's  90 examples, 0 rejected')
    assert [line.split(',')[0] for line in lines if line.startswith('  training: step')] == [
        '  training: step 25/100', '  training: step 50/100', '  training: step 75/100']
    # The summary says how long training ran and why it stopped.
    assert '  training: fixed length: 100 steps (train_steps / --steps)' in lines
    # No --beam-args: 90 small files run Beam in-process, and the summary says why.
    beam = [line for line in lines if line.startswith('  beam: ')]
    assert len(beam) == 1 and beam[0].startswith(
        '  beam: in-process (DirectRunner in_memory): 90 files, 0.0 MB < '), first.stdout
    assert 'pushed: version 1 at' in first.stdout and lines[-1].startswith('Report: ')
    log = run_log(first.stdout)  # the detail the console no longer shows
    for detail in ('Beam: in-process (DirectRunner in_memory)',
                   'Component ImageTrainer is running.', 'step 100/100',
                   'Using Any for unsupported type', 'Model pushed as version 1',
                   'pushed: version 1'):
        assert detail in log, detail

    # The rerun in the warm interpreter: TensorFlow's start-up lines were checked on the first.
    rerun = run_command(runner_command(data, out, '--steps', '100'))
    lines = rerun.stdout.splitlines()
    _assert_quiet(rerun, lines, 'cached')
    # One log per run, each with its JSON summary beside it (pipeline/notify.py).
    logs = os.listdir(os.path.join(out, 'logs'))
    assert run_log(rerun.stdout) != log
    assert sorted(name.split('.', 2)[-1] for name in logs) == [
        'log', 'log', 'summary.json', 'summary.json'], logs


def test_a_failed_ingestion_names_the_stage_and_the_reason_and_nothing_after_it(tmp_path):
    data = copy_digits(str(tmp_path / 'data'), classes=('0', '1'), per_class=3)
    for folder, _, files in os.walk(data):
        for name in files:  # cut every PNG short, as an interrupted copy leaves it
            path = os.path.join(folder, name)
            with open(path, 'rb') as image:
                head = image.read(20)
            with open(path, 'wb') as image:
                image.write(head)
    result = run_command(runner_command(data, str(tmp_path / 'out'), '--config', 'smoke'))
    lines = result.stdout.splitlines()
    assert result.returncode == 1 and result.stderr == '', result.stderr[-3000:]
    assert lines[1].split()[:2] == ['ImageExampleGen', 'failed'], result.stdout
    summary = result.stdout[result.stdout.index('\nRun '):]
    assert '  steps: ImageExampleGen failed' in summary
    assert '  failed: ImageExampleGen' in summary and 'every record was rejected' in summary
    assert 'rejected 6' in summary
    for absent in ('anomalies:', 'ImageTrainer', 'blessed:', 'pushed:', 'Traceback'):
        assert absent not in result.stdout, absent
    assert lines[-1].startswith('Run stopped in ImageExampleGen; details in ')
    assert 'Traceback' in run_log(result.stdout)  # the whole story is in the log
