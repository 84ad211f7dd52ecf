"""Training on this machine: in this process, or N processes with one TF_CONFIG each (no TFX
imports). LocalLauncher is the launchers registry's default ('local', launchers.py).

    metrics = local.run(job, serving_dir, log_dir, checkpoint_dir, num_workers=2)

Every worker runs the workers' entry point (worker.py), which is the same `job.train_and_export`
the single-process path calls; TF_CONFIG (free ports on 127.0.0.1, worker 0 the chief) makes it
build a MultiWorkerMirroredStrategy, the way Kubeflow's TFJob or Vertex AI describe a cluster.
The chief exports the model and writes metrics.json; the others keep scratch checkpoints, so the
checkpoint and resume rules are those of the library. The job file, the wait and the relay of
the chief's output are the shared sequence's (sequence.py).

All workers share one process group. When one fails, the rest would wait for it in a collective
forever: the group is killed and the execution fails with that worker's exit code and the tail
of its log. Any exit of the parent (an error, Ctrl-C) kills the group too, and a worker whose
parent was killed outright kills its group itself, so no orphan worker is left. Each worker's
output goes to `<log_dir>/workers/worker-<i>.log`; the chief's lines are also copied to this
process's log as they come, so the run log shows the training, and its progress events reach
this process's listeners (the console).
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

from absl import logging

from core import storage
from launch import launchers, sequence, worker
from training import job as job_lib
from training.result import TrainResult

_TAIL_LINES = 20   # of a failed worker's log, in the error


def ephemeral_low() -> int:
    """The lowest port the kernel hands out by itself (bind to port 0, outgoing connections)."""
    try:
        with open('/proc/sys/net/ipv4/ip_local_port_range') as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_ports(count: int) -> List[int]:
    """Distinct ports free on 127.0.0.1 now, below the kernel's ephemeral range. The workers bind
    them seconds later (after importing TF); an ephemeral port could meanwhile go to any socket
    on the machine (a Beam worker, another training's connections), and the worker then fails
    with "Could not start gRPC server". Only an explicit bind takes a port below that range."""
    low = ephemeral_low()
    choose = random.SystemRandom().randrange
    sockets, tries = [], 100 * count
    try:
        while len(sockets) < count:
            tries -= 1
            if tries < 0:
                raise RuntimeError(f'no {count} free ports below {low} on 127.0.0.1')
            sock = socket.socket()
            try:
                sock.bind(('127.0.0.1', choose(max(1024, low // 2), low)))
                sockets.append(sock)  # held open, so the next pick differs
            except OSError:  # in use
                sock.close()
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tf_config(ports: List[int], index: int) -> str:
    return json.dumps({'cluster': {'worker': [f'127.0.0.1:{p}' for p in ports]},
                       'task': {'type': 'worker', 'index': index}})


def _tail(path: str) -> str:
    """The part of a failed worker's log that says why: the innermost frames of its last
    traceback and the error after them (TensorFlow can print a long dump after the error,
    which a plain tail would show instead), else the last lines."""
    with open(path, errors='replace') as handle:
        lines = handle.readlines()
    starts = [i for i, line in enumerate(lines) if line.startswith('Traceback (most recent')]
    error = next((j for j in range(starts[-1] + 1, len(lines))
                  if lines[j].strip() and not lines[j][0].isspace()), None) if starts else None
    if error is None:
        return ''.join(lines[-_TAIL_LINES:])
    first = max(starts[-1], error - 6)
    return ''.join(lines[first:first + _TAIL_LINES])


class LocalWorkers(sequence.Workers):
    """num_workers processes of this machine's Python, in one process group."""
    folder = 'workers'

    def __init__(self, log_dir: str, num_workers: int):
        self._folder = storage.normpath(os.path.join(log_dir, self.folder))
        # The workers' TMPDIR, removed by stop(): a worker that is SIGKILLed (stop() after
        # another one failed, or a crash) runs no `finally`, and its scratch checkpoints
        # (training/job.py) would stay in /tmp, as large as the model's, run after run.
        self._scratch = tempfile.mkdtemp(prefix='workers-')
        # A worker's output is a file the process writes as it goes, and the relay follows: on
        # this machine's disk. With the run root in a bucket they are copied there at the end.
        self._copy_logs = '://' in log_dir
        self._count = num_workers
        self._logs = [os.path.join(self._scratch if self._copy_logs else self._folder,
                                   f'worker-{i}.log') for i in range(num_workers)]
        self._processes: List[subprocess.Popen] = []
        self._group = 0

    def start(self, args: List[str]) -> None:
        ports = free_ports(self._count)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [root] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]))
        for index in range(self._count):
            with open(self._logs[index], 'w') as output:
                self._processes.append(subprocess.Popen(
                    [sys.executable, '-m', worker.MODULE, *args],
                    env=dict(env, TF_CONFIG=tf_config(ports, index), TMPDIR=self._scratch),
                    stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    cwd=root, process_group=self._group))
            self._group = self._group or self._processes[0].pid
        logging.info('Started %d training workers on 127.0.0.1 ports %s (process group %d); '
                     'logs in %s', self._count, ports, self._group, self._folder)

    def wait(self) -> None:
        """Returns when every worker exited 0; raises on the first that did not."""
        while True:
            codes = [p.poll() for p in self._processes]
            for index, code in enumerate(codes):
                if code not in (None, 0):
                    raise RuntimeError(
                        f'training worker {index} of {self._count} failed (exit code {code}); '
                        f'the last lines of {self._logs[index]}:\n{_tail(self._logs[index])}')
            if all(code == 0 for code in codes):
                return
            time.sleep(0.2)

    def stop(self) -> None:
        if self._group and any(p.poll() is None for p in self._processes):
            os.killpg(self._group, signal.SIGKILL)
        for process in self._processes:
            process.wait()
        if self._copy_logs:
            import tensorflow as tf
            tf.io.gfile.makedirs(self._folder)
            for path in self._logs:
                if os.path.exists(path):
                    storage.copy_file(path, f'{self._folder}/{os.path.basename(path)}')
        shutil.rmtree(self._scratch, ignore_errors=True)

    def chief_output(self) -> Optional[str]:
        return self._logs[0]


def run(job, serving_dir: str, log_dir: str, checkpoint_dir: str,
        num_workers: int) -> TrainResult:
    """Trains with num_workers local processes; returns the chief's result."""
    return sequence.run(job, serving_dir, log_dir, checkpoint_dir,
                        LocalWorkers(log_dir, num_workers))


class LocalLauncher(launchers.Launcher):
    """params.workers > 1: that many processes here (run); else this process trains."""

    def train(self, job, spec: str, name: str, serving_dir: str, log_dir: str,
              checkpoint_dir: str) -> TrainResult:
        paths = dict(serving_dir=serving_dir, log_dir=log_dir, checkpoint_dir=checkpoint_dir)
        if job.params.workers > 1:  # each with its TF_CONFIG: MultiWorkerMirroredStrategy
            return run(job, num_workers=job.params.workers, **paths)
        return job_lib.train_and_export(job, **paths)
