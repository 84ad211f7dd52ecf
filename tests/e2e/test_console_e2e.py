"""End-to-end console: `runner.py --local` shows a line per stage and the summary, the run's log
keeps the rest, and a failed stage is named with its reason (e2e). Two runs into one output: the
second waits for the first (or, with --no-wait, exits 2 naming it), and each summary reports its
own run and pushed version (the run lock, pipeline/runs/runlock.py).

The default run takes every default but --steps: TFX's INFO chatter, TensorFlow's start-up lines
and Beam's logs are what would flood the console, so this is where they must stay out of it.
"""
import os
import re
import subprocess
import time

import pytest

from helpers import REPO_ROOT, copy_digits, run_command, run_log, runner_command, version_folders

pytestmark = pytest.mark.e2e

STAGES = ('ImageExampleGen', 'ImportSchemaGen', 'StatisticsGen', 'ExampleValidator',
          'AnomalyGate', 'ImageTrainer', 'ServedModelBaseline', 'DriftCheck', 'Evaluator',
          'Pusher')
NOISE = ('Worker:', 'Using Any for unsupported type', 'cuDNN', 'cuBLAS', 'Traceback',
         'Assets written', 'Component ', 'MetadataStore', ' I ', ' W ')


def _assert_quiet(result, lines, state):
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stderr == ''
    assert len(lines) <= 40, result.stdout
    for stage in STAGES:  # "<stage> <state> <seconds> s [figure]", in order
        assert sum(line.split()[:2] == [stage, state] for line in lines) == 1, result.stdout
    for noise in NOISE:
        assert noise not in result.stdout, noise


@pytest.fixture(scope='module')
def two_runs(tmp_path_factory):
    """A default run in a fresh interpreter (TensorFlow's start-up lines are among what it must
    keep off the console) into a new output; while it holds the output, the same command with
    --no-wait, then with another step count (another model), which waits for it."""
    base = tmp_path_factory.mktemp('console')
    data, out = copy_digits(str(base / 'data')), str(base / 'out')
    first = subprocess.Popen(runner_command(data, out, '--steps', '100'), cwd=REPO_ROOT,
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lock = os.path.join(out, 'run.lock')
    while not (os.path.exists(lock) and open(lock).read()):  # the first run holds the output
        assert first.poll() is None, first.communicate()
        time.sleep(0.05)
    holder = f'run {open(lock).read().split()[1]} (pid {first.pid})'
    # The later runs in the warm interpreter (helpers.run_command).
    busy = run_command(runner_command(data, out, '--steps', '40', '--no-wait'), timeout=120)
    second = run_command(runner_command(data, out, '--steps', '40'))
    stdout, stderr = first.communicate(timeout=900)
    pid, first = first.pid, subprocess.CompletedProcess(first.args, first.returncode, stdout,
                                                        stderr)
    return data, out, first, (holder, pid), busy, second


def test_a_default_run_prints_a_line_per_stage_and_the_summary_and_logs_the_rest(two_runs):
    _, out, first, _, _, _ = two_runs
    lines = first.stdout.splitlines()
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


def test_a_second_run_waits_and_each_summary_names_its_own_run_and_version(two_runs):
    """Two runs into one output: the second waits for the first (with --no-wait it exits 2
    naming it), and each summary reports its own run and pushed version."""
    _, out, first, (holder, pid), busy, second = two_runs
    assert busy.returncode == 2 and busy.stdout == ''
    assert busy.stderr.startswith(f'error: {out} is in use by {holder}')
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert second.stdout.splitlines()[0] == (f'{out} is in use by {holder}; waiting for it to '
                                             'finish')
    runs = []
    for stdout, version in ((first.stdout, 1), (second.stdout, 2)):
        header = re.search(r'^Run (\S+)\n', stdout, re.MULTILINE)  # "Run <id>", not "Run <id>;"
        runs.append(header[1])
        summary = stdout[header.start():]
        assert f'pushed: version {version} at {os.path.join(out, "serving", str(version))}' \
            in summary, summary
    assert runs[0] != runs[1] and holder == f'run {runs[0]} (pid {pid})'
    assert version_folders(os.path.join(out, 'serving')) == ['1', '2']


def test_the_same_command_again_is_cached_and_every_run_keeps_its_log(two_runs):
    data, out, first, _, _, _ = two_runs
    # In the warm interpreter: TensorFlow's start-up lines were checked on the first run.
    rerun = run_command(runner_command(data, out, '--steps', '100'))
    lines = rerun.stdout.splitlines()
    _assert_quiet(rerun, lines, 'cached')
    # One log per run, each with its JSON summary beside it (pipeline/runs/notify.py); the run that
    # found the output busy started none.
    logs = os.listdir(os.path.join(out, 'logs'))
    assert run_log(rerun.stdout) != run_log(first.stdout)
    assert sorted(name.split('.', 2)[-1] for name in logs) == [
        'log'] * 3 + ['summary.json'] * 3, logs


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
