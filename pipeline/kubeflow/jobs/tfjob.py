"""Training as a Kubernetes TFJob (Kubeflow Training Operator, kubeflow.org/v1); no TFX imports.

Deprecated with the Training Operator v1 (only its release-1.9 branch is maintained): used on
clusters that do not serve Kubeflow Trainer v2's TrainJob (trainjob.py), which launcher.py
asks for first. TFJobSpec is what the compile fixes for either.

    metrics = tfjob.run(job, serving_dir, log_dir, checkpoint_dir, TFJobSpec(workers=2, ...),
                        name='train-1a2b3c')

The trainer's Kubeflow task does not train in its own pod: it writes the TrainJob as JSON next
to its logs (on the pipeline root, which every pod reads), creates a TFJob of N Worker replicas
running the workers' entry point (`python -m launch.worker JOB SERVING LOG CHECKPOINT`,
launch/worker.py) in the same image, and waits: the shared sequence of launch/sequence.py. The
operator injects TF_CONFIG (cluster {"worker": [...]}, worker 0 the chief) into the container
named `tensorflow`, so the workers run MultiWorkerMirroredStrategy exactly as the local
processes do; the chief exports the SavedModel straight into the task's Model folder and writes
metrics.json.

The `kubernetes` client (CustomObjectsApi, CoreV1Api) is used, not the kubeflow-training SDK:
it is already locked (kfp depends on it, so the image has it), while kubeflow-training 1.9
needs kubernetes >= 27.2 and would move the lock under kfp; the SDK is a thin layer over the
same custom-object calls, which are all this needs.

restartPolicy Never: one lost MultiWorkerMirroredStrategy worker stalls the others in their
collectives, so restarting one pod in place (OnFailure) does not recover the job, and a
deterministic error (bad data, a code bug) would restart until the backoff limit and hide its
log. The job fails at once instead (the operator marks it Failed when a replica fails), the
failed pod's log is shown, and a retry of the task resumes from the checkpoints on the pipeline
root. No `backoffLimit`: when it is exceeded, the operator's ReconcileJobs deletes every pod
before marking the job Failed, whatever cleanPodPolicy says (kubeflow/trainer#3419), and the
failed pod's log would be gone (Training Operator 1.9.3 may even start a replacement pod after
the job failed). cleanPodPolicy None keeps the pods until the task deletes the job.

What a real cluster adds, and how the task survives it:
- Kubeflow profile namespaces inject an Istio sidecar, which keeps a pod Running after training
  exits, so the job would never end: the pod template opts out (`sidecar.istio.io/inject:
  "false"`), as the Kubeflow SDK does.
- A pod that cannot start (no free GPU, an image that cannot be pulled, a quota) leaves the job
  waiting forever: after spec.start_timeout_s without every worker started, the task fails with
  the pods' state and events.
- Deletion is asynchronous (k8s.py): the job is deleted in the foreground and the task
  waits until it and its pods are gone, before a same-name job and at the end.
- spec.service_account runs the workers under that Kubernetes service account (e.g. one with
  Workload Identity for gs://), '' = the namespace's default.
"""
import dataclasses
import json
import signal
import threading
import time
from typing import Any, Dict, List, Tuple

from absl import logging

from launch import sequence, worker
from pipeline.kubeflow.jobs import k8s
from pipeline.kubeflow.jobs.k8s import CONTAINER, GROUP, VERSION
from training.result import TrainResult

ISTIO_INJECT = 'sidecar.istio.io/inject'
_DELETE_TIMEOUT_S = 300.0  # pods get 30 s of grace by default; the garbage collector some more


@dataclasses.dataclass(frozen=True)
class TFJobSpec:
    """What the Kubeflow compile fixes: replicas, image and resources of each worker."""
    workers: int
    image: str
    cpu: float = 4.0
    memory_gb: float = 16.0
    gpus: int = 0
    gpu_resource: str = 'nvidia.com/gpu'
    service_account: str = ''         # '' = the namespace's default service account
    start_timeout_s: float = 1800.0   # every worker started within this, or the task fails
    # A run root in a bucket: the plain variables of every task (the endpoint, the region) as
    # (name, value), and the store's Secret keys as (variable, secret, key). A TFJob's pods are
    # not KFP's, so the platform spec's secretAsEnv never reaches them: the same references go
    # into their template instead (pipeline/kubeflow/compiler.py, docs/kubeflow.md "Object stores").
    env: Tuple[Tuple[str, str], ...] = ()
    secret_env: Tuple[Tuple[str, str, str], ...] = ()
    # Kubeflow Trainer v2: the ClusterTrainingRuntime the TrainJob uses
    # (deploy/tensorflow-runtime.yaml); a cluster that has it is asked for a TrainJob first
    # (launcher.py), one with only the Training Operator v1 gets this TFJob.
    runtime: str = 'image-pipeline-tensorflow'

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> 'TFJobSpec':
        fields = json.loads(text)
        for key in ('env', 'secret_env'):  # JSON lists back to the tuples they were
            fields[key] = tuple(tuple(item) for item in fields.get(key, ()))
        return cls(**fields)


def manifest(name: str, spec: TFJobSpec, args: List[str]) -> Dict[str, Any]:
    """The TFJob: spec.workers identical Worker replicas running the workers entry point."""
    amounts = {'cpu': f'{spec.cpu:g}', 'memory': f'{spec.memory_gb:g}G'}
    if spec.gpus:
        amounts[spec.gpu_resource] = str(spec.gpus)
    container = {'name': CONTAINER, 'image': spec.image,
                 'command': ['python', '-m', worker.MODULE, *args],
                 'resources': {'requests': dict(amounts), 'limits': dict(amounts)}}
    variables = [{'name': name, 'value': value} for name, value in spec.env] + [
        {'name': name, 'valueFrom': {'secretKeyRef': {'name': secret, 'key': key}}}
        for name, secret, key in spec.secret_env]
    if variables:
        container['env'] = variables
    pod_spec: Dict[str, Any] = {'containers': [container]}
    if spec.service_account:
        pod_spec['serviceAccountName'] = spec.service_account
    return {
        'apiVersion': f'{GROUP}/{VERSION}', 'kind': 'TFJob',
        'metadata': {'name': name, 'labels': {'app': 'image-pipeline-trainer'}},
        'spec': {
            'runPolicy': {'cleanPodPolicy': 'None'},
            'tfReplicaSpecs': {'Worker': {
                'replicas': spec.workers, 'restartPolicy': 'Never',
                'template': {'metadata': {'annotations': {ISTIO_INJECT: 'false'}},
                             'spec': pod_spec}}}}}


def _create(objects, core, namespace: str, body: Dict[str, Any], poll_seconds: float,
            api: k8s.Api = k8s.TFJOB) -> None:
    """Creates the job. One of the same name (or its pods, still terminating) is left by an
    earlier attempt of this very task that was killed outright (its name hashes the Model
    folder): it would write into the same folders, so it is deleted and waited for first."""
    from kubernetes.client.exceptions import ApiException
    name = body['metadata']['name']
    while True:
        left = k8s.leftovers(objects, core, namespace, name, api)
        if left:
            logging.warning('%s %s/%s: left by an earlier attempt: %s; deleting and waiting',
                            api.kind, namespace, name, ', '.join(left))
            k8s.delete(objects, namespace, name, api)
            k8s.wait_gone(objects, core, namespace, name, _DELETE_TIMEOUT_S,
                          poll_seconds, api)
        try:
            objects.create_namespaced_custom_object(api.group, api.version, namespace,
                                                    api.plural, body)
            return
        except ApiException as error:
            if error.status != 409:  # 409: created again meanwhile; delete it again
                raise


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


def _wait(objects, core, namespace: str, name: str, spec: TFJobSpec,
          poll_seconds: float, api: k8s.Api = k8s.TFJOB,
          ends: Tuple[str, str] = ('Succeeded', 'Failed')) -> str:
    """Polls the job until one of its `ends` conditions (success, failure) is True; returns
    it. Raises if its workers have not all started within spec.start_timeout_s."""
    seen, begun, deadline = set(), False, time.time() + spec.start_timeout_s
    while True:
        current = objects.get_namespaced_custom_object(api.group, api.version, namespace,
                                                       api.plural, name)
        status = current.get('status') or {}
        k8s.conditions_logged(status, seen, logging.info, name, api.kind)
        for condition in status.get('conditions') or []:
            if condition.get('type') in ends and condition.get('status') == 'True':
                return condition['type']
        begun = begun or k8s.started(core, namespace, name, spec.workers, api)
        if not begun and time.time() > deadline:
            raise RuntimeError(
                f'{api.kind} {namespace}/{name}: its {spec.workers} workers had not all '
                f'started after {spec.start_timeout_s:g} s (start_timeout_s); the pods, their '
                f'conditions and events:\n'
                + k8s.describe_pods(core, namespace, name, current['metadata']['uid'], api))
        time.sleep(poll_seconds)


class TFJobWorkers(sequence.Workers):
    """spec.workers pods of a TFJob named `name`, in the namespace of the clients.
    trainjob.py's TrainJobWorkers is the same with another `api`, `ends` and body."""
    folder = 'tfjob'
    api = k8s.TFJOB
    ends = ('Succeeded', 'Failed')   # the job's conditions of success and failure

    def __init__(self, spec: TFJobSpec, name: str, poll_seconds: float = 2.0):
        self._spec, self._name, self._poll = spec, name, poll_seconds
        self._clients = None
        self._restore = None
        self._ended = False

    def body(self, args: List[str]) -> Dict[str, Any]:
        return manifest(self._name, self._spec, args)

    def start(self, args: List[str]) -> None:
        # The client comes with the `kubeflow` extra (through kfp), which a local install need
        # not have: imported in k8s.py's functions only.
        objects, core, namespace = self._clients = k8s.clients()
        body = self.body(args)
        _create(objects, core, namespace, body, self._poll, self.api)
        amounts = {'cpu': f'{self._spec.cpu:g}', 'memory': f'{self._spec.memory_gb:g}G'}
        if self._spec.gpus:
            amounts[self._spec.gpu_resource] = str(self._spec.gpus)
        logging.info('Created %s %s/%s: %d workers of %s, each %s', self.api.kind, namespace,
                     self._name, self._spec.workers, self._spec.image, amounts)
        self._restore = _terminate_raises()

    def wait(self) -> None:
        objects, core, namespace = self._clients
        try:
            outcome = _wait(objects, core, namespace, self._name, self._spec, self._poll,
                            self.api, self.ends)
        except RuntimeError:  # never started: the task still ends in order (not when
            self._ended = True  # interrupted: SystemExit, KeyboardInterrupt pass through)
            raise
        self._ended = True
        if outcome == self.ends[1]:
            raise RuntimeError(f'{self.api.kind} {namespace}/{self._name} failed; '
                               f'{k8s.failed_pod_logs(core, namespace, self._name, self.api)}')

    def stop(self) -> None:
        """Ended, failed or interrupted: its pods go with it (owner references)."""
        if self._restore is None:
            return  # never created
        self._restore()
        objects, core, namespace = self._clients
        if k8s.delete(objects, namespace, self._name, self.api):
            logging.info('Deleting %s %s/%s (foreground)', self.api.kind, namespace, self._name)
        if self._ended:  # a cancelled task has its own grace period: it does not wait then
            k8s.wait_gone(objects, core, namespace, self._name, _DELETE_TIMEOUT_S, self._poll,
                          self.api)


def run(job, serving_dir: str, log_dir: str, checkpoint_dir: str, spec: TFJobSpec,
        name: str, poll_seconds: float = 2.0) -> TrainResult:
    """Trains with a TFJob of spec.workers workers; returns the chief's result."""
    return sequence.run(job, serving_dir, log_dir, checkpoint_dir,
                        TFJobWorkers(spec, name, poll_seconds))
