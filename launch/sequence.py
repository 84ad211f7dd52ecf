"""The one sequence every way of running a training job follows (no TFX imports):

    write the job file -> launch the workers -> wait for them, relaying the chief's output
    -> clean up, whatever happened -> read the chief's metrics

`Workers` is what differs: local processes (local.py) or the pods of a Kubernetes job
(pipeline/kubeflow/jobs/). Each
worker runs `python -m launch.worker JOB SERVING LOG CHECKPOINT` (worker.py). Where the workers
can read the chief's output while it runs (a local log file), the relay copies its lines into
this process's log and publishes its progress events here (training/progress.py), so the
console follows the chief's training; a TFJob's pods log to Kubernetes instead.
"""
import abc
import json
import os
import threading
import time
from typing import List, Optional

from absl import logging
import tensorflow as tf  # gfile: the job file and metrics may be on the pipeline root (gs://)

from core import storage
from launch import worker
from training import progress
from training.result import TrainResult


class Workers(abc.ABC):
    """Starts the workers of one training job, waits for them, and cleans up after them."""
    folder = ''   # under the log folder: the job file, and the workers' own files

    @abc.abstractmethod
    def start(self, args: List[str]) -> None:
        """Starts every worker on `python -m launch.worker *args`."""

    @abc.abstractmethod
    def wait(self) -> None:
        """Returns when every worker ended well; raises, saying why, when one did not."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Called last whatever happened (an error, Ctrl-C): no worker is left running."""

    def chief_output(self) -> Optional[str]:
        """A file the chief's output goes to while it runs, to relay; None: none here."""
        return None


def run(job, serving_dir: str, log_dir: str, checkpoint_dir: str,
        workers: Workers) -> TrainResult:
    """Trains `job` with these workers; returns the chief's result (its metrics.json)."""
    job_file = os.path.join(log_dir, workers.folder, 'job.json')
    tf.io.gfile.makedirs(os.path.dirname(job_file))
    with tf.io.gfile.GFile(job_file, 'w') as handle:
        handle.write(worker.job_to_json(job))
    relay = None
    try:
        workers.start([job_file, serving_dir, log_dir, checkpoint_dir])
        if workers.chief_output():
            relay = _Relay(workers.chief_output())
        workers.wait()
    finally:
        workers.stop()
        if relay:
            relay.stop()
    return TrainResult.from_metrics(json.loads(storage.read(os.path.join(log_dir, 'metrics.json'))))


class _Relay:
    """Follows the chief's output file in a thread: progress events are published in this
    process, every other line goes to this process's log."""

    def __init__(self, path: str):
        self._path, self._stop = path, threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        while not os.path.exists(self._path):
            if self._stop.is_set():
                return
            time.sleep(0.1)
        with open(self._path, errors='replace') as handle:
            pending = ''   # a line read before the chief finished writing it
            while True:
                pending += handle.readline()
                if pending.endswith('\n') or (pending and self._stop.is_set()):
                    self._line(pending.rstrip('\n'))
                    pending = ''
                elif self._stop.is_set():
                    return   # the chief has ended and every line it wrote was read
                else:
                    time.sleep(0.2)

    @staticmethod
    def _line(line: str) -> None:
        event = progress.from_line(line)
        if event is not None:
            progress.publish(event)
        else:
            logging.info('[worker 0] %s', line.rstrip())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
