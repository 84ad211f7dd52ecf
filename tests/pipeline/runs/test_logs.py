"""Unit tests of the run log: everything a process prints goes to the file, the console keeps
only what is written to it (and, verbose, the log too). In a subprocess: it moves fds 1 and 2."""
import os
import subprocess
import sys

from helpers import REPO_ROOT

_SCRIPT = '''
import logging, os, subprocess, sys
from pipeline.runs import logs
logs.configure(verbose=sys.argv[2] == "verbose")
with logs.to_file(sys.argv[1], logs.is_verbose()) as console:
    print("from print")
    logging.info("from logging")
    os.write(2, b"from fd 2, as C++ logging writes\\n")
    subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('from a child\\\\n')"])
    console.write("for people\\n")
print("after the run")
'''
_NOISE = ('from print', 'from logging', 'from fd 2, as C++ logging writes', 'from a child')


def _run(tmp_path, mode):
    log = tmp_path / 'logs' / 'run.log'
    result = subprocess.run([sys.executable, '-c', _SCRIPT, str(log), mode], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    assert result.returncode == 0, result.stderr
    return result, log.read_text()


def test_the_console_gets_only_its_lines_and_the_log_gets_the_rest(tmp_path):
    result, log = _run(tmp_path, 'quiet')
    assert result.stdout == 'for people\nafter the run\n' and result.stderr == ''
    for line in _NOISE:
        assert line in log
    assert 'for people' not in log and 'after the run' not in log


def test_verbose_streams_the_log_to_the_console_too(tmp_path):
    result, log = _run(tmp_path, 'verbose')
    for line in _NOISE:
        assert line in log and line in result.stdout
    assert 'for people' in result.stdout and result.stdout.endswith('after the run\n')
