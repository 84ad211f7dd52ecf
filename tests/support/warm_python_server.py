"""The warm python server (started by tests/support/warm_python.py, which documents it): imports
PRELOAD once, then forks a child per request line on stdin and runs the command in it; replies on
stdout, one JSON object a line: {"started": pid} per request, in order, and {"ended": pid,
"status": code} as each child ends. Several children may run at once. Test support only."""
import atexit
import json
import os
import select
import signal
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What the server imports before it forks: the task entry point, the local runner and the
# executors (TFX, TF, Beam, TFDV, TFMA), each imported by tasks and runs in any case, and what a
# local run imports when it gets there (LocalDagRunner, the report's readers and matplotlib).
PRELOAD = ('pipeline.kubeflow.entrypoint', 'pipeline.local.run', 'pipeline.kubeflow.compiler',
           'runner', 'components.ingest.executor', 'components.trainer.executor',
           'components.evaluate.executor', 'components.drift.executor',
           'tfx.components.statistics_gen.executor',
           'tfx.components.example_validator.executor',
           'tfx.orchestration.local.local_dag_runner', 'pipeline.report.page')


def _child(request: dict) -> None:
    """In the forked child: become `python *argv` in cwd with env, output to the log; never
    returns."""
    import runpy
    import traceback
    status = 1
    try:
        if request.get('new_session'):
            os.setsid()
        os.chdir(request['cwd'])
        os.environ.clear()
        os.environ.update(request['env'])
        # As `python` does: the env's PYTHONPATH right after the script's or cwd's entry (a task
        # given PYTHONPATH=REPO:tests/support imports its executor from there).
        for entry in reversed(os.environ.get('PYTHONPATH', '').split(os.pathsep)):
            if entry and entry not in sys.path:
                sys.path.insert(1, entry)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd, key in ((1, 'stdout'), (2, 'stderr')):
            if fd == 2 and request['stderr'] == request['stdout']:
                os.dup2(1, 2)  # one file, one offset: as stderr=subprocess.STDOUT
                continue
            output = os.open(request[key], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(output, fd)
            os.close(output)
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
    replies, running, requests = sys.stdout, set(), b''
    open_input = True

    def reply(**fields):
        replies.write(json.dumps(fields) + '\n')
        replies.flush()

    while open_input or running:
        # A new request, or a child's end: whichever comes (children are polled every 50 ms).
        if open_input and select.select([sys.stdin], [], [], 0.05 if running else None)[0]:
            chunk = os.read(sys.stdin.fileno(), 65536)
            open_input = bool(chunk)
            requests += chunk
            while b'\n' in requests:
                line, requests = requests.split(b'\n', 1)
                pid = os.fork()
                if pid == 0:
                    _child(json.loads(line))
                running.add(pid)
                reply(started=pid)
        elif not open_input:
            time.sleep(0.05)
        for pid in list(running):
            done, wait_status = os.waitpid(pid, os.WNOHANG)
            if done:
                running.discard(pid)
                reply(ended=pid, status=os.waitstatus_to_exitcode(wait_status))


if __name__ == '__main__':
    _serve()
