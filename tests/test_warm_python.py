"""The warm interpreter (tests/support/warm_python.py) ends a command as a fresh `python` would:
its exit status, its output, its own working directory and environment, and a fresh process."""
import os
import sys

import warm_python

SCRIPT = '''import os, sys
print('out', os.getcwd(), os.environ.get('ONLY_HERE'), sys.argv[1:], os.getpid())
print('err', file=sys.stderr)
if sys.argv[1] == 'raise':
    raise ValueError('from the script')
sys.exit(int(sys.argv[1]))
'''


def _run(tmp_path, *args):
    script = tmp_path / 'script.py'
    script.write_text(SCRIPT)
    env = dict(os.environ, ONLY_HERE='yes')
    return warm_python.run_captured([str(script), *args], str(tmp_path), timeout=300, env=env)


def test_a_script_runs_in_a_child_with_its_cwd_env_argv_and_exit_status(tmp_path):
    assert warm_python.takes(['script.py']) and warm_python.takes(['-m', 'pipeline.local'])
    result = _run(tmp_path, '3')
    assert result.returncode == 3
    out, cwd, env, argv, pid = result.stdout.split(' ', 4)
    assert (out, cwd, env, argv) == ('out', str(tmp_path), 'yes', "['3']")
    assert int(pid) != os.getpid()
    assert result.stderr == 'err\n'
    assert 'ONLY_HERE' not in os.environ  # the child's environment, not this process's


def test_an_uncaught_exception_ends_it_with_status_1_and_its_traceback(tmp_path):
    result = _run(tmp_path, 'raise')
    assert result.returncode == 1
    assert result.stderr.startswith('err\nTraceback (most recent call last):')
    assert result.stderr.endswith('ValueError: from the script\n')


def test_each_command_is_a_new_process_and_other_forms_start_a_fresh_interpreter(tmp_path):
    pids = {_run(tmp_path, '0').stdout.split()[-1] for _ in range(2)}
    assert len(pids) == 2
    assert not warm_python.takes(['-c', 'pass'])
    fresh = warm_python.run_captured(['-c', 'import sys; sys.exit(4)'], str(tmp_path), 60)
    assert fresh.returncode == 4 and fresh.args == [sys.executable, '-c', 'import sys; sys.exit(4)']
