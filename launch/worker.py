"""The entry point every training worker runs, locally or in a TFJob pod (no TFX imports).

    python -m launch.worker JOB_FILE SERVING_DIR LOG_DIR CHECKPOINT_DIR

It reads the TrainJob written as JSON (launch/sequence.py) and runs the same
`job.train_and_export` the single-process path calls; TF_CONFIG, set by launch/local.py or by
the Training Operator, makes it build a MultiWorkerMirroredStrategy. The chief (worker 0)
writes its progress events as lines on its output (training/progress.py), which the launcher
relays to the parent process.
"""
import dataclasses
import json
import os
import signal
import sys
import threading
import time
from typing import List

from absl import logging

from components.common import storage

MODULE = 'launch.worker'   # python -m MODULE job_file serving_dir log_dir checkpoint_dir


def job_to_json(job) -> str:
    fields = dataclasses.asdict(job)
    # The parameters as ML Metadata records them: plain values that read back the same.
    fields['options']['params'] = job.params.to_properties()
    return json.dumps(fields)


def job_from_json(text: str):
    from components.common import inputs
    from training import job as job_lib, loop
    from training.params import TrainParams
    fields = json.loads(text)
    options = fields['options']
    options['params'] = TrainParams.from_properties(options['params'])
    fields['options'] = loop.LoopOptions(**options)
    fields['input_spec'] = inputs.InputSpec.from_json(json.dumps(fields['input_spec']))
    for name in ('class_names', 'image_shape'):
        fields[name] = tuple(fields[name])
    for name in ('train_pattern', 'eval_pattern'):  # a window's patterns: a list in JSON
        if isinstance(fields[name], list):
            fields[name] = tuple(fields[name])
    return job_lib.TrainJob(**fields)


def is_chief() -> bool:
    """Worker 0 of TF_CONFIG's cluster (or no cluster at all) is the chief."""
    task = json.loads(os.environ.get('TF_CONFIG') or '{}').get('task') or {}
    return int(task.get('index') or 0) == 0


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
    # A run root in a bucket: TensorFlow's s3:// scheme, and this worker's own exit code.
    storage.enable_for(argv[1:5])
    import tensorflow as tf  # gfile: in a TFJob the file is on the pipeline root (gs://...)
    from training import job as job_lib, progress
    if is_chief():
        progress.subscribe(progress.LineWriter(sys.stdout))
    with tf.io.gfile.GFile(job_file) as handle:
        job = job_from_json(handle.read())
    job_lib.train_and_export(job, serving_dir, log_dir, checkpoint_dir=checkpoint_dir)


if __name__ == '__main__':
    main(sys.argv)
