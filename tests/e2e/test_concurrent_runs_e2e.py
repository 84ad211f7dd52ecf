"""End-to-end: two runs into one output (e2e). The second waits for the first (or, with
--no-wait, exits 2 naming it), and each summary reports its own run and pushed version.
"""
import os
import re
import subprocess
import time

import pytest

from helpers import REPO_ROOT, copy_digits, run_command, runner_command

pytestmark = pytest.mark.e2e


def test_a_second_run_waits_and_each_summary_names_its_own_run_and_version(tmp_path):
    data, out = copy_digits(str(tmp_path / 'data')), str(tmp_path / 'out')

    def command(steps, *flags):  # different step counts: two different models, both pushed
        return runner_command(data, out, '--config', 'smoke', '--steps', steps,
                              *flags)

    first = subprocess.Popen(command('30'), cwd=REPO_ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lock = os.path.join(out, 'run.lock')
    while not (os.path.exists(lock) and open(lock).read()):  # the first run holds the output
        assert first.poll() is None, first.communicate()
        time.sleep(0.05)
    holder = f'run {open(lock).read().split()[1]} (pid {first.pid})'

    # The two later runs in the warm interpreter (helpers.run_command); the first is a fresh one.
    busy = run_command(command('40', '--no-wait'), timeout=120)
    assert busy.returncode == 2 and busy.stdout == ''
    assert busy.stderr.startswith(f'error: {out} is in use by {holder}')

    second = run_command(command('40'))
    first_out, first_err = first.communicate(timeout=900)
    assert first.returncode == 0 and second.returncode == 0, first_err + second.stderr
    assert second.stdout.splitlines()[0] == (f'{out} is in use by {holder}; waiting for it to '
                                             'finish')
    runs = []
    for stdout, version in ((first_out, 1), (second.stdout, 2)):
        header = re.search(r'^Run (\S+)\n', stdout, re.MULTILINE)  # "Run <id>", not "Run <id>;"
        runs.append(header[1])
        summary = stdout[header.start():]
        assert f'pushed: version {version} at {os.path.join(out, "serving", str(version))}' \
            in summary, summary
    assert runs[0] != runs[1] and holder == f'run {runs[0]} (pid {first.pid})'
    assert sorted(os.listdir(os.path.join(out, 'serving'))) == ['1', '2']
