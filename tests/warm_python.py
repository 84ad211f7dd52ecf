"""A warm `python` for the KFP launcher stand-in's pods: one interpreter that has imported TFX
once and forks a child per task command, instead of a fresh interpreter per task.

Why: every task of a compiled spec is `python -m pipeline.kfp_entrypoint ...`, and a fresh
interpreter spends 5-10 s importing TFX and TensorFlow before the task does anything; a launcher
scenario runs 10-30 tasks. The child is a process of its own as a pod's command is: its own
argv, working directory, environment (replaced by the one given), stdout and stderr into the
pod's log, and an exit status (an uncaught exception: its traceback and status 1, as `python`
ends). Only the imports are shared, made before any task ran (the server does nothing else, so
no thread or TF runtime exists when it forks). What would differ from a fresh interpreter is
module state a task changes at import time of a module the server preloaded; the entry point's
own code runs afresh in every child (runpy, as `python -m` does).

    code = warm_python.run(['-m', 'pipeline.kfp_entrypoint', ...], cwd, env, log_file, 900)

Commands other than `-m MODULE` or `SCRIPT.py` are not taken (run() returns None): the caller
starts a fresh interpreter. WARM_PYTHON=0 in the environment turns it off everywhere.
Test support only.
"""
import atexit
import json
import os
import select
import signal
import subprocess
import sys
from typing import Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the server imports before it forks: the task entry point and what it imports (TFX, TF).
PRELOAD = ('pipeline.kfp_entrypoint',)

_server: Optional[subprocess.Popen] = None


def enabled() -> bool:
    return os.environ.get('WARM_PYTHON', '1') != '0'


def run(argv: List[str], cwd: str, env: Dict[str, str], log_file: str,
        timeout: float) -> Optional[int]:
    """Runs `python *argv` in a child of the warm server; its exit status (negative: killed by
    that signal, as subprocess reports it), or None if argv is not a form it takes."""
    if not enabled() or not argv or not (argv[0] == '-m' and len(argv) > 1
                                          or argv[0].endswith('.py')):
        return None
    server = _start()
    server.stdin.write(json.dumps({'argv': argv, 'cwd': cwd, 'env': env,
                                   'log': log_file}) + '\n')
    server.stdin.flush()
    pid = int(json.loads(server.stdout.readline())['pid'])
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    if not ready:  # as subprocess.run(timeout=) would: the command is killed, the run fails
        os.kill(pid, signal.SIGKILL)
        server.stdout.readline()
        raise subprocess.TimeoutExpired(argv, timeout)
    return int(json.loads(server.stdout.readline())['status'])


def _start() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2')
        _server = subprocess.Popen([sys.executable, os.path.abspath(__file__)], cwd=REPO,
                                   env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
        atexit.register(_stop, _server)
    return _server


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.stdin.close()
        server.wait(timeout=30)


# --- the server -----------------------------------------------------------------------------
def _child(request: dict) -> None:
    """In the forked child: become `python *argv` in cwd with env, output to the log; never
    returns."""
    import runpy
    import traceback
    status = 1
    try:
        os.chdir(request['cwd'])
        os.environ.clear()
        os.environ.update(request['env'])
        log = os.open(request['log'], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        argv = request['argv']
        try:
            if argv[0] == '-m':
                sys.argv = [argv[1]] + argv[2:]  # runpy sets argv[0] to the module's file
                sys.path[0] = request['cwd']  # `python -m`: the working directory first
                runpy.run_module(argv[1], run_name='__main__', alter_sys=True)
            else:
                sys.argv = list(argv)
                sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
                runpy.run_path(argv[0], run_name='__main__')
            status = 0
        except SystemExit as done:
            code = done.code
            if code is None:
                status = 0
            elif isinstance(code, int):
                status = code
            else:
                print(code, file=sys.stderr)
                status = 1
        except BaseException:  # as the interpreter: any uncaught one ends it, status 1
            traceback.print_exc()
        atexit._run_exitfuncs()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _serve() -> None:
    import importlib
    sys.path[0] = REPO  # not tests/, where this file is: the modules as a task imports them
    for module in PRELOAD:
        importlib.import_module(module)
    requests, replies = sys.stdin, sys.stdout
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        replies.write(json.dumps({'pid': pid}) + '\n')
        replies.flush()
        _, wait_status = os.waitpid(pid, 0)
        replies.write(json.dumps({'status': os.waitstatus_to_exitcode(wait_status)}) + '\n')
        replies.flush()


if __name__ == '__main__':
    _serve()
