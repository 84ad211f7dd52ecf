"""The entry point every training worker runs, locally, in a TFJob pod or in a TrainJob pod
(no TFX imports).

    python -m launch.worker JOB_FILE SERVING_DIR LOG_DIR CHECKPOINT_DIR

It reads the TrainJob written as JSON (launch/sequence.py) and runs the same
`job.train_and_export` the single-process path calls; TF_CONFIG makes it build a
MultiWorkerMirroredStrategy. launch/local.py sets TF_CONFIG, and so does the Training Operator
for a TFJob. Kubeflow Trainer v2 does not: its PlainML policy sets only the node count and the
TrainJob's env (trainer pkg/runtime/framework/plugins/plainml/plainml.go EnforceMLPolicy), so
in a TrainJob pod the worker builds TF_CONFIG itself (trainjob_tf_config) from what the pod
gets:
- JOB_COMPLETION_INDEX, the pod's index in its Indexed Job, which Kubernetes' Job controller
  puts in every container (pkg/controller/job/indexed_job_utils.go addCompletionIndexEnvVariable);
- JOBSET_NAME, REPLICATED_JOB_NAME and JOB_INDEX, which the project's runtime
  (deploy/tensorflow-runtime.yaml) sets through the downward API from the labels JobSet puts on
  every pod (jobset pkg/controllers/jobset_controller.go labelAndAnnotateObject);
- TRAINJOB_NUM_NODES, the TrainJob's own env (pipeline/kubeflow/jobs/trainjob.py), since
  nothing of the real system tells a pod how many pods its Job has.
Pod i of the Job is reachable as `<jobset>-<replicatedJob>-<jobIndex>-<i>.<subdomain>`: the Job
controller names its hostname `<job>-<i>` (job_controller.go manageJob), JobSet names the Job
`<jobset>-<replicatedJob>-<jobIndex>` (placement.go GenJobName) and gives it the subdomain of a
headless Service named after the JobSet (GetSubdomain, createHeadlessSvcIfNecessary), the
endpoints Trainer itself computes (jobset.go IdentifyPodNetwork). The chief is pod 0.
The chief writes its progress events as lines on its output (training/progress.py), which
the launcher relays to the parent process.
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

from core import storage

MODULE = 'launch.worker'   # python -m MODULE job_file serving_dir log_dir checkpoint_dir
PORT = 2222                # a TrainJob worker's gRPC port (deploy/tensorflow-runtime.yaml)
# What a TrainJob's pod gets (the module docstring says from where).
INDEX_ENV = 'JOB_COMPLETION_INDEX'
JOBSET_ENV, REPLICATED_JOB_ENV, JOB_INDEX_ENV = 'JOBSET_NAME', 'REPLICATED_JOB_NAME', 'JOB_INDEX'
NUM_NODES_ENV = 'TRAINJOB_NUM_NODES'


def job_to_json(job) -> str:
    fields = dataclasses.asdict(job)
    # The parameters as ML Metadata records them: plain values that read back the same.
    fields['options']['params'] = job.params.to_properties()
    return json.dumps(fields)


def job_from_json(text: str):
    from core import inputs
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


def trainjob_tf_config(env) -> str:
    """TF_CONFIG for a pod of a TrainJob (the module docstring), or '' outside one (or where
    TF_CONFIG is already set: local processes, a TFJob)."""
    names = (INDEX_ENV, JOBSET_ENV, REPLICATED_JOB_ENV, JOB_INDEX_ENV, NUM_NODES_ENV)
    if env.get('TF_CONFIG') or not any(env.get(name) for name in names):
        return ''
    missing = [name for name in names if not env.get(name)]
    if missing:
        raise RuntimeError(f'a TrainJob pod without {", ".join(missing)}: is the TrainJob\'s '
                           'runtime deploy/tensorflow-runtime.yaml (docs/kubeflow.md)?')
    jobset = env[JOBSET_ENV]
    job = f'{jobset}-{env[REPLICATED_JOB_ENV]}-{env[JOB_INDEX_ENV]}'
    hosts = [f'{job}-{i}.{jobset}:{PORT}' for i in range(int(env[NUM_NODES_ENV]))]
    return json.dumps({'cluster': {'worker': hosts},
                       'task': {'type': 'worker', 'index': int(env[INDEX_ENV])}})


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
    config = trainjob_tf_config(os.environ)
    if config:  # before TensorFlow reads it
        os.environ['TF_CONFIG'] = config
        logging.info('TrainJob pod: TF_CONFIG=%s', config)
    from training import job as job_lib, progress
    if is_chief():
        progress.subscribe(progress.LineWriter(sys.stdout))
    job = job_from_json(storage.read(job_file).decode('utf-8'))
    job_lib.train_and_export(job, serving_dir, log_dir, checkpoint_dir=checkpoint_dir)


if __name__ == '__main__':
    main(sys.argv)
