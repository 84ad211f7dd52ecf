"""Local multi-worker training: N processes on this machine, one TF_CONFIG each (no TFX imports).

    metrics = workers.run(job, serving_dir, log_dir, checkpoint_dir, num_workers=2)

Every worker runs this module's entry point, which is the same `job.train_and_export` the
single-process path calls; TF_CONFIG (free ports on 127.0.0.1, worker 0 the chief) makes it
build a MultiWorkerMirroredStrategy, the way Kubeflow's TFJob or Vertex AI describe a cluster.
The chief exports the model and writes metrics.json; the others keep scratch checkpoints, so the
checkpoint and resume rules are those of the library.

All workers share one process group. When one fails, the rest would wait for it in a collective
forever: the group is killed and the execution fails with that worker's exit code and the tail
of its log. Any exit of the parent (an error, Ctrl-C) kills the group too, and a worker whose
parent was killed outright kills its group itself, so no orphan worker is left. Each worker's
output goes to `<log_dir>/workers/worker-<i>.log`; the chief's lines are also
copied to this process's log as they come, so the run log shows the training progress.
"""
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Dict, List

from absl import logging

_TAIL_LINES = 20   # of a failed worker's log, in the error


def free_ports(count: int) -> List[int]:
    """Ports free on 127.0.0.1 now (held open together, so they differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(('127.0.0.1', 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tf_config(ports: List[int], index: int) -> str:
    return json.dumps({'cluster': {'worker': [f'127.0.0.1:{p}' for p in ports]},
                       'task': {'type': 'worker', 'index': index}})


def job_to_json(job) -> str:
    return json.dumps(dataclasses.asdict(job))


def job_from_json(text: str):
    from components.common import inputs
    from training import job as job_lib, loop
    fields = json.loads(text)
    fields['options'] = loop.LoopOptions(**fields['options'])
    fields['input_spec'] = inputs.InputSpec.from_json(json.dumps(fields['input_spec']))
    for name in ('class_names', 'image_shape', 'devices'):
        fields[name] = tuple(fields[name])
    for name in ('train_pattern', 'eval_pattern'):  # a window's patterns: a list in JSON
        if isinstance(fields[name], list):
            fields[name] = tuple(fields[name])
    return job_lib.TrainJob(**fields)


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


def _relay(path: str, stop: threading.Event) -> None:
    """Copies the chief's log lines into this process's log while it runs."""
    while not os.path.exists(path) and not stop.is_set():
        time.sleep(0.1)
    with open(path, errors='replace') as handle:
        while True:
            line = handle.readline()
            if line:
                logging.info('[worker 0] %s', line.rstrip())
            elif stop.is_set():
                return
            else:
                time.sleep(0.2)


def run(job, serving_dir: str, log_dir: str, checkpoint_dir: str,
        num_workers: int) -> Dict[str, float]:
    """Trains with num_workers local processes; returns the chief's metrics."""
    folder = os.path.join(log_dir, 'workers')
    os.makedirs(folder, exist_ok=True)
    job_file = os.path.join(folder, 'job.json')
    with open(job_file, 'w') as handle:
        handle.write(job_to_json(job))
    ports = free_ports(num_workers)
    logs = [os.path.join(folder, f'worker-{i}.log') for i in range(num_workers)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]))
    processes, group = [], 0
    stop = threading.Event()
    relay = threading.Thread(target=_relay, args=(logs[0], stop), daemon=True)
    try:
        for index in range(num_workers):
            with open(logs[index], 'w') as output:
                processes.append(subprocess.Popen(
                    [sys.executable, '-m', 'launch.local', job_file, serving_dir,
                     log_dir, checkpoint_dir], env=dict(env, TF_CONFIG=tf_config(ports, index)),
                    stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    cwd=root, process_group=group))
            group = group or processes[0].pid
        logging.info('Started %d training workers on 127.0.0.1 ports %s (process group %d); '
                     'logs in %s', num_workers, ports, group, folder)
        relay.start()
        _wait(processes, logs)
    finally:
        if group and any(p.poll() is None for p in processes):
            os.killpg(group, signal.SIGKILL)
        for process in processes:
            process.wait()
        stop.set()
        if relay.is_alive():
            relay.join(timeout=5)
    with open(os.path.join(log_dir, 'metrics.json')) as handle:
        return json.load(handle)


def _wait(processes, logs) -> None:
    """Returns when every worker exited 0; raises on the first that did not."""
    while True:
        codes = [p.poll() for p in processes]
        for index, code in enumerate(codes):
            if code not in (None, 0):
                raise RuntimeError(f'training worker {index} of {len(processes)} failed (exit '
                                   f'code {code}); the last lines of {logs[index]}:\n'
                                   f'{_tail(logs[index])}')
        if all(code == 0 for code in codes):
            return
        time.sleep(0.2)


def _exit_with_parent() -> None:
    """Kills this worker's group once the process that started it is gone (SIGKILLed: its
    cleanup never ran), so a killed run leaves no worker training on."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os.killpg(os.getpgrp(), signal.SIGKILL)
    threading.Thread(target=watch, daemon=True).start()


def main(argv: List[str]) -> None:
    job_file, serving_dir, log_dir, checkpoint_dir = argv[1:5]
    _exit_with_parent()
    logging.set_verbosity(logging.INFO)
    import tensorflow as tf  # gfile: in a TFJob the file is on the pipeline root (gs://...)
    from training import job as job_lib
    with tf.io.gfile.GFile(job_file) as handle:
        job = job_from_json(handle.read())
    job_lib.train_and_export(job, serving_dir, log_dir, checkpoint_dir=checkpoint_dir)


if __name__ == '__main__':
    main(sys.argv)
