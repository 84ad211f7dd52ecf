"""The warm interpreter (tests/support/warm_python.py) ends a command as a fresh `python` would:
its exit status, its output, its own working directory and environment, a fresh process, and
(start()) a session of its own that a signal to its group ends."""
import os
import signal
import sys
import time

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



def test_the_environments_pythonpath_comes_after_the_scripts_folder_as_in_python(tmp_path):
    lib = tmp_path / 'lib'
    lib.mkdir()
    (lib / 'only_on_its_path.py').write_text("NAME = 'found'\n")
    script = tmp_path / 'imports.py'
    script.write_text('import sys, only_on_its_path\nprint(only_on_its_path.NAME, sys.path[1])\n')
    env = dict(os.environ, PYTHONPATH=str(lib))
    result = warm_python.run_captured([str(script)], str(tmp_path), timeout=300, env=env)
    assert (result.returncode, result.stdout) == (0, f'found {lib}\n'), result.stderr[-2000:]


SLEEPER = '''import os, sys, time
print('started', flush=True)
try:
    time.sleep(300)
except KeyboardInterrupt:
    print('interrupted', flush=True)
    sys.exit(130)
'''


def _started(tmp_path, name, new_session=True):
    """A SLEEPER child (start()) once it has printed that it started."""
    script = tmp_path / 'sleeper.py'
    script.write_text(SLEEPER)
    out = tmp_path / f'{name}.out'
    child = warm_python.start([str(script)], str(tmp_path), dict(os.environ), str(out),
                              str(tmp_path / f'{name}.err'), new_session=new_session)
    deadline = time.time() + 120
    while 'started' not in (out.read_text() if out.exists() else ''):
        assert child.poll() is None and time.time() < deadline, 'the child never started'
        time.sleep(0.05)
    assert child.poll() is None
    return child, out


def test_a_started_child_has_its_own_session_and_ends_as_its_group_is_signalled(tmp_path):
    child, out = _started(tmp_path, 'interrupted')
    assert os.getsid(child.pid) == child.pid != os.getsid(0)  # killpg reaches it alone
    os.killpg(child.pid, signal.SIGINT)  # Ctrl-C: KeyboardInterrupt, as in `python`
    assert child.wait(timeout=60) == 130 and out.read_text() == 'started\ninterrupted\n'
    killed, _ = _started(tmp_path, 'killed')
    os.killpg(killed.pid, signal.SIGKILL)
    assert killed.wait(timeout=60) == -signal.SIGKILL
    fresh = warm_python.start(['-c', 'import sys; sys.exit(5)'], str(tmp_path), dict(os.environ),
                              os.devnull, os.devnull)  # a form the server does not take
    assert fresh.wait(timeout=60) == 5


MEETING = '''import os, sys, time
mine, theirs = sys.argv[1:3]
open(mine, 'w').close()
deadline = time.time() + 60
while not os.path.exists(theirs):  # each waits for the other: both must run at once
    if time.time() > deadline:
        sys.exit(9)
    time.sleep(0.01)
sys.exit(int(sys.argv[3]))
'''


def test_children_run_at_once_and_each_gets_its_own_status(tmp_path):
    """Two commands that each wait for the other (as a cluster's workers do) both end, and each
    wait() returns its own child's status, in whichever order they end."""
    script = tmp_path / 'meeting.py'
    script.write_text(MEETING)
    a, b = str(tmp_path / 'a'), str(tmp_path / 'b')
    first = warm_python.start([str(script), a, b, '3'], str(tmp_path), dict(os.environ),
                              os.devnull, os.devnull)
    second = warm_python.start([str(script), b, a, '4'], str(tmp_path), dict(os.environ),
                               os.devnull, os.devnull)
    assert first.pid != second.pid
    assert second.wait(timeout=120) == 4 and first.wait(timeout=120) == 3
    assert first.poll() == 3 and second.poll() == 4
