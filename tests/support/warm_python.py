"""A warm `python`: one interpreter that has imported TFX, TF, Beam and the pipeline once and
forks a child per command, instead of a fresh interpreter per command.

Why: a fresh interpreter spends 5-15 s importing TFX before it does anything. The KFP launcher
stand-in starts one per task (`python -m pipeline.kubeflow.entrypoint ...`, 10-30 per scenario), and
the scenario tests start `python runner.py ...` once per scheduled day. The child is a process
of its own as those commands are: its own argv, working directory, environment (replaced by the
one given), stdin from /dev/null, stdout and stderr into the given files, and an exit status
(an uncaught exception: its traceback and status 1, as `python` ends; SystemExit as `python`;
SIGINT raises KeyboardInterrupt, as in `python`).
Only the imports are shared, made before any command ran: the server does nothing else, so no
thread and no TF runtime exists when it forks, and every child runs the command's own code
afresh (runpy, as `python -m` and `python FILE` do). What a child cannot show is what happens
while those modules are imported: a test of that (TF's start-up lines on the console, import
order) starts a fresh interpreter. Several commands may run at once (start() returns at once),
e.g. the workers of one cluster.

    code = warm_python.run(['-m', 'pipeline.kubeflow.entrypoint', ...], cwd, env, log_file, 900)
    result = warm_python.run_captured(['runner.py', '--local', ...], cwd, timeout=900)
    child = warm_python.start(['runner.py', ...], cwd, env, out, err, new_session=True)
    ... os.killpg(child.pid, signal.SIGINT); child.wait(120)

Commands other than `-m MODULE` or `SCRIPT.py` are not taken: run() returns None and
run_captured() starts a fresh interpreter. WARM_PYTHON=0 in the environment turns it off
everywhere (every command then starts a fresh interpreter). Test support only.
"""
import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'warm_python_server.py')
_server: Optional[subprocess.Popen] = None


def enabled() -> bool:
    return os.environ.get('WARM_PYTHON', '1') != '0'


def run(argv: List[str], cwd: str, env: Dict[str, str], log_file: str,
        timeout: float) -> Optional[int]:
    """Runs `python *argv` in a child of the warm server, stdout and stderr appended to log_file;
    its exit status (negative: killed by that signal, as subprocess reports it), or None if argv
    is not a form it takes."""
    if not takes(argv):
        return None
    return _request(argv, cwd, env, log_file, log_file, timeout)


def run_captured(argv: List[str], cwd: str, timeout: float,
                 env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True,
    timeout=timeout, env=env), in a child of the warm server when it takes argv."""
    command = [sys.executable, *argv]
    if not takes(argv):
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    with tempfile.TemporaryDirectory(prefix='warm-python-') as folder:
        out, err = os.path.join(folder, 'stdout'), os.path.join(folder, 'stderr')
        code = _request(argv, cwd, dict(os.environ if env is None else env), out, err, timeout)
        with open(out, errors='replace') as stdout, open(err, errors='replace') as stderr:
            return subprocess.CompletedProcess(command, code, stdout.read(), stderr.read())


def takes(argv: List[str]) -> bool:
    """`-m MODULE ...` or `SCRIPT.py ...`, unless WARM_PYTHON=0."""
    return enabled() and bool(argv) and (argv[0] == '-m' and len(argv) > 1
                                         or argv[0].endswith('.py'))


def _request(argv, cwd, env, stdout, stderr, timeout) -> int:
    return start(argv, cwd, env, stdout, stderr).wait(timeout)


class Child:
    """A command running in a child of the warm server (start())."""

    def __init__(self, argv, pid: int):
        self.argv, self.pid, self.returncode = argv, pid, None

    def poll(self) -> Optional[int]:
        """Its exit status once it has ended, else None (without waiting)."""
        while self.returncode is None and self.pid not in _ended and _readable(0):
            _read_reply()
        return self._status()

    def wait(self, timeout: float) -> int:
        """Its exit status (negative: killed by that signal, as subprocess reports it); past
        timeout it is killed and TimeoutExpired raised, as subprocess.run(timeout=) does."""
        deadline = time.time() + timeout
        while self.returncode is None and self.pid not in _ended:
            if not _readable(max(0.0, deadline - time.time())):
                os.kill(self.pid, signal.SIGKILL)
                while self.pid not in _ended:
                    _read_reply()
                self._status()
                raise subprocess.TimeoutExpired(self.argv, timeout)
            _read_reply()
        return self._status()

    def _status(self) -> Optional[int]:
        if self.returncode is None and self.pid in _ended:
            self.returncode = _ended.pop(self.pid)
        return self.returncode


# The server's replies, one JSON object a line: {"started": pid} after each request (in request
# order), {"ended": pid, "status": code} when a child ends (in any order). Read unbuffered, as
# select() sees only what the pipe holds, not what a reader has buffered.
_pending = b''
_ended: Dict[int, int] = {}


def _readable(timeout: float) -> bool:
    return b'\n' in _pending or bool(select.select([_server.stdout], [], [], timeout)[0])


def _read_reply() -> dict:
    """The next reply (blocking); an ended child's status is kept in _ended."""
    global _pending
    while b'\n' not in _pending:
        chunk = os.read(_server.stdout.fileno(), 65536)
        if not chunk:
            raise RuntimeError('the warm python server ended')
        _pending += chunk
    line, _pending = _pending.split(b'\n', 1)
    reply = json.loads(line)
    if 'ended' in reply:
        _ended[int(reply['ended'])] = int(reply['status'])
    return reply


class _Fresh(Child):
    """start() in a fresh interpreter: the same poll() and wait() over a Popen."""

    def __init__(self, argv, cwd, env, stdout, stderr, new_session):
        with open(stdout, 'a') as out, open(stderr, 'a') as err:
            self._process = subprocess.Popen(
                [sys.executable, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=err, start_new_session=new_session,
                # SIGINT as a terminal delivers it, whatever this process ignores.
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        super().__init__(argv, self._process.pid)

    def poll(self) -> Optional[int]:
        self.returncode = self._process.poll()
        return self.returncode

    def wait(self, timeout: float) -> int:
        try:
            self.returncode = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            raise
        return self.returncode


def start(argv: List[str], cwd: str, env: Dict[str, str], stdout: str, stderr: str,
          new_session: bool = False) -> Child:
    """Starts `python *argv` in a child of the warm server (a fresh interpreter for a form
    takes() refuses), stdout and stderr appended to those files, and returns at once.
    new_session: the child starts a session (and process group) of its own, as
    Popen(start_new_session=True) does, so a test can signal the whole group."""
    if not takes(argv):
        return _Fresh(argv, cwd, env, stdout, stderr, new_session)
    server = _start()
    server.stdin.write(json.dumps({'argv': argv, 'cwd': cwd, 'env': env, 'stdout': stdout,
                                   'stderr': stderr, 'new_session': new_session}) + '\n')
    server.stdin.flush()
    while 'started' not in (reply := _read_reply()):
        pass  # another child ended meanwhile: kept for its wait()
    return Child(argv, int(reply['started']))


def _start() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        # Without this process's object-store variables (AWS_*, S3_*): with them, importing
        # `components` would configure S3 in the server (core/storage.py
        # enable_from_env) and every child would inherit "already enabled" with the server's
        # settings instead of configuring S3 from its own environment, as a fresh `python` does.
        env = {k: v for k, v in os.environ.items() if not k.startswith(('AWS_', 'S3_'))}
        env.update(PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2')
        _server = subprocess.Popen([sys.executable, SERVER], cwd=REPO,
                                   env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
        _ended.clear()
        atexit.register(_stop, _server)
    return _server


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.stdin.close()
        server.wait(timeout=30)
