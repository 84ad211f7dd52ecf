"""Training as a Kubernetes TFJob (Kubeflow Training Operator, kubeflow.org/v1); no TFX imports.

    metrics = tfjob.run(job, serving_dir, log_dir, checkpoint_dir, TFJobSpec(workers=2, ...),
                        name='train-1a2b3c')

The trainer's Kubeflow task does not train in its own pod: it writes the TrainJob as JSON next
to its logs (on the pipeline root, which every pod reads), creates a TFJob of N Worker replicas
running the local path's entry point (`python -m components.trainer.workers JOB SERVING LOG
CHECKPOINT`, components/trainer/workers.py) in the same image, and waits. The operator injects
TF_CONFIG (cluster {"worker": [...]}, worker 0 the chief) into the container named `tensorflow`,
so the workers run MultiWorkerMirroredStrategy exactly as the local processes do; the chief
exports the SavedModel straight into the task's Model folder and writes metrics.json.

The `kubernetes` client (CustomObjectsApi, CoreV1Api) is used, not the kubeflow-training SDK:
it is already locked (kfp depends on it, so the image has it), while kubeflow-training 1.9
needs kubernetes >= 27.2 and would move the lock under kfp; the SDK is a thin layer over the
same custom-object calls, which are all this needs.

restartPolicy Never: one lost MultiWorkerMirroredStrategy worker stalls the others in their
collectives, so restarting one pod in place (OnFailure) does not recover the job, and a
deterministic error (bad data, a code bug) would restart until the backoff limit and hide its
log. The job fails at once instead, the failed pod's log (kept: cleanPodPolicy None) is shown,
and a retry of the task resumes from the checkpoints on the pipeline root.
"""
import dataclasses
import json
import os
import signal
import threading
import time
from typing import Any, Dict, List

from absl import logging

from components.trainer import workers

GROUP, VERSION, PLURAL = 'kubeflow.org', 'v1', 'tfjobs'
JOB_LABEL = 'training.kubeflow.org/job-name'   # the operator labels every pod of a job with it
CONTAINER = 'tensorflow'                        # the container the operator gives TF_CONFIG
_TAIL_LINES = 30
_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace'


@dataclasses.dataclass(frozen=True)
class TFJobSpec:
    """What the Kubeflow compile fixes: replicas, image and resources of each worker."""
    workers: int
    image: str
    cpu: float = 4.0
    memory_gb: float = 16.0
    gpus: int = 0
    gpu_resource: str = 'nvidia.com/gpu'

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> 'TFJobSpec':
        return cls(**json.loads(text))


def manifest(name: str, spec: TFJobSpec, args: List[str]) -> Dict[str, Any]:
    """The TFJob: spec.workers identical Worker replicas running the workers entry point."""
    amounts = {'cpu': f'{spec.cpu:g}', 'memory': f'{spec.memory_gb:g}G'}
    if spec.gpus:
        amounts[spec.gpu_resource] = str(spec.gpus)
    container = {'name': CONTAINER, 'image': spec.image,
                 'command': ['python', '-m', 'components.trainer.workers', *args],
                 'resources': {'requests': dict(amounts), 'limits': dict(amounts)}}
    return {
        'apiVersion': f'{GROUP}/{VERSION}', 'kind': 'TFJob',
        'metadata': {'name': name, 'labels': {'app': 'image-pipeline-trainer'}},
        'spec': {
            'runPolicy': {'cleanPodPolicy': 'None', 'backoffLimit': 0},
            'tfReplicaSpecs': {'Worker': {
                'replicas': spec.workers, 'restartPolicy': 'Never',
                'template': {'spec': {'containers': [container]}}}}}}


def _clients():
    """(CustomObjectsApi, CoreV1Api, namespace): the pod's service account inside a cluster,
    else the kubeconfig (KUBECONFIG) and its current context's namespace."""
    from kubernetes import client, config
    try:
        config.load_incluster_config()
        with open(_NAMESPACE_FILE) as handle:
            namespace = handle.read().strip()
    except config.ConfigException:
        # Named here: the client reads KUBECONFIG once, when it is imported.
        path = os.environ.get('KUBECONFIG') or os.path.expanduser('~/.kube/config')
        config.load_kube_config(config_file=path)
        _, current = config.list_kube_config_contexts(config_file=path)
        namespace = current['context'].get('namespace') or 'default'
    return client.CustomObjectsApi(), client.CoreV1Api(), namespace


def _finished(status: Dict[str, Any]) -> str:
    """'Succeeded' or 'Failed' once the job has ended, else ''."""
    for condition in status.get('conditions') or []:
        if condition.get('type') in ('Succeeded', 'Failed') and condition.get('status') == 'True':
            return condition['type']
    return ''


def _failed_pod_logs(core, namespace: str, name: str) -> str:
    """The log tails of the job's failed pods (every pod's if none is marked failed)."""
    from kubernetes.client.exceptions import ApiException
    pods = core.list_namespaced_pod(namespace, label_selector=f'{JOB_LABEL}={name}').items
    failed = [p for p in pods if p.status and p.status.phase == 'Failed'] or pods
    parts = []
    for pod in failed:
        try:
            log = core.read_namespaced_pod_log(pod.metadata.name, namespace,
                                               container=CONTAINER, tail_lines=_TAIL_LINES)
        except ApiException as error:  # e.g. never scheduled: say so, keep the others
            log = f'(no log: {error.status} {error.reason})'
        parts.append(f'--- pod {pod.metadata.name} ({pod.status.phase}), last lines:\n{log}')
    return '\n'.join(parts) or '(no pods found)'


def _create(objects, namespace: str, body: Dict[str, Any], poll_seconds: float) -> None:
    """Creates the TFJob. One of the same name is left by an earlier attempt of this very
    task that was killed outright (its name hashes the Model folder): it would write into the
    same folders, so it is deleted first."""
    from kubernetes.client.exceptions import ApiException
    name = body['metadata']['name']
    try:
        objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
        return
    except ApiException as error:
        if error.status != 409:
            raise
    logging.warning('TFJob %s/%s exists, left by an earlier attempt: deleting it', namespace,
                    name)
    objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    while True:  # deletion is asynchronous: wait until the name is free
        try:
            objects.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        except ApiException as error:
            if error.status == 404:
                break
            raise
        time.sleep(poll_seconds)
    objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)


def _terminate_raises():
    """Makes SIGTERM (KFP cancelling the run deletes the task's pod) raise SystemExit, so the
    cleanup below deletes the TFJob; returns what restores the previous handler (nothing to
    do off the main thread, where Python allows no handler)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def terminate(signum, frame):
        raise SystemExit(f'terminated by signal {signum} while waiting for the TFJob')
    previous = signal.signal(signal.SIGTERM, terminate)
    return lambda: signal.signal(signal.SIGTERM,
                                 signal.SIG_DFL if previous is None else previous)


def run(job, serving_dir: str, log_dir: str, checkpoint_dir: str, spec: TFJobSpec,
        name: str, poll_seconds: float = 2.0) -> Dict[str, float]:
    """Trains with a TFJob of spec.workers workers; returns the chief's metrics."""
    import tensorflow as tf  # gfile: the paths are on the pipeline root (gs://...)
    # Imported here: the client comes with the `kubeflow` extra (through kfp), which a local
    # install need not have.
    from kubernetes.client.exceptions import ApiException
    job_file = os.path.join(log_dir, 'tfjob', 'job.json')
    tf.io.gfile.makedirs(os.path.dirname(job_file))
    with tf.io.gfile.GFile(job_file, 'w') as handle:
        handle.write(workers.job_to_json(job))
    objects, core, namespace = _clients()
    body = manifest(name, spec, [job_file, serving_dir, log_dir, checkpoint_dir])
    _create(objects, namespace, body, poll_seconds)
    logging.info('Created TFJob %s/%s: %d workers of %s, each %s', namespace, name,
                 spec.workers, spec.image,
                 body['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0]
                 ['resources']['requests'])
    restore = _terminate_raises()
    try:
        seen, outcome = set(), ''
        while not outcome:
            status = objects.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name).get('status') or {}
            for condition in status.get('conditions') or []:  # each change logged once
                key = tuple(condition.get(k, '') for k in ('type', 'status', 'reason'))
                if key not in seen:
                    seen.add(key)
                    logging.info('TFJob %s: %s=%s (%s) %s', name, *key,
                                 condition.get('message', ''))
            outcome = _finished(status)
            if not outcome:
                time.sleep(poll_seconds)
        if outcome == 'Failed':
            raise RuntimeError(f'TFJob {namespace}/{name} failed; '
                               f'{_failed_pod_logs(core, namespace, name)}')
    finally:  # ended, failed or interrupted: its pods go with it (owner references)
        restore()
        try:
            objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
            logging.info('Deleted TFJob %s/%s', namespace, name)
        except ApiException as error:
            if error.status != 404:  # already gone (deleted by hand) is what was wanted
                raise
    with tf.io.gfile.GFile(os.path.join(log_dir, 'metrics.json')) as handle:
        return json.load(handle)
