"""The Kubernetes calls behind tfjob.py and trainjob.py (no TFX imports): clients, API discovery,
a delete that waits until the job and its pods are gone, and what the task reports
about pods that fail or never start (their state, events and log tails). Each call takes the
job's `Api` (TFJOB, the default, or TRAINJOB): its group, version, plural, the label every pod
of a job carries and the container that trains.

Why the waiting: deletion on Kubernetes is asynchronous. A deleted pod gets SIGTERM and a
grace period (30 s by default) before SIGKILL, and a same-name TFJob created meanwhile meets
its predecessor's pods: the operator's pod creation answers 409 ("pods ... already exists")
and retries, and the old pods, still running, write into the same folders. So a TFJob is
deleted with propagationPolicy Foreground (the job stays visible, with a deletionTimestamp,
until the garbage collector has removed its pods) and the task waits for both to be gone.
"""
import dataclasses
import time
from typing import Any, Dict, List

GROUP, VERSION, PLURAL = 'kubeflow.org', 'v1', 'tfjobs'
JOB_LABEL = 'training.kubeflow.org/job-name'   # the operator labels every pod of a job with it
CONTAINER = 'tensorflow'                        # the container the operator gives TF_CONFIG


@dataclasses.dataclass(frozen=True)
class Api:
    """A training job's custom resource, and how its pods are found."""
    kind: str
    group: str
    version: str
    plural: str
    pod_label: str   # every pod of job `name` carries pod_label=name
    container: str   # the container that trains (its log is the one shown)
    propagation: str = 'Foreground'   # how delete() deletes it (see TRAINJOB)


TFJOB = Api('TFJob', GROUP, VERSION, PLURAL, JOB_LABEL, CONTAINER)
# Trainer v2: the JobSet is named after the TrainJob (jobset.go Build: JobSet(trainJob.Name, ...)),
# and JobSet labels every Job and pod with its name (jobset_controller.go labelAndAnnotateObject);
# the trainer's container is `node` (trainer pkg/constants Node).
#
# Deleted in the background, then waited for: trainjob_controller.go Reconcile removes the Failed
# condition and re-applies the runtime's objects on every pass (reconcileObjects, server-side
# apply), so while a TrainJob waits in a foreground deletion it can create again the JobSet the
# garbage collector has just removed, and the two can go on taking turns. A background delete
# removes the TrainJob at once (its next reconcile finds nothing), and the collector removes the
# JobSet, its Jobs and their pods, which wait_gone waits for by label.
TRAINJOB = Api('TrainJob', 'trainer.kubeflow.org', 'v1alpha1', 'trainjobs',
               'jobset.sigs.k8s.io/jobset-name', 'node', propagation='Background')
_TAIL_LINES = 30
_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace'


def clients():
    """(CustomObjectsApi, CoreV1Api, namespace): the pod's service account inside a cluster,
    else the kubeconfig (KUBECONFIG) and its current context's namespace."""
    import os
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


def pods(core, namespace: str, name: str, api: Api = TFJOB) -> List[Any]:
    return core.list_namespaced_pod(namespace, label_selector=f'{api.pod_label}={name}').items


def served(objects, api: Api) -> bool:
    """Whether the cluster serves api's resource: API discovery (GET /apis/<group>/<version>),
    404 when no CRD of that group and version is installed."""
    from kubernetes.client.exceptions import ApiException
    try:
        resources = objects.get_api_resources(api.group, api.version)
    except ApiException as error:
        if error.status != 404:
            raise
        return False
    return any(r.name == api.plural for r in resources.resources or [])


def delete(objects, namespace: str, name: str, api: Api = TFJOB) -> bool:
    """Deletes the job (in the foreground, or as api.propagation says); False if it was
    already gone."""
    from kubernetes.client.exceptions import ApiException
    try:
        objects.delete_namespaced_custom_object(api.group, api.version, namespace, api.plural, name,
                                                propagation_policy=api.propagation)
        return True
    except ApiException as error:
        if error.status != 404:  # already gone (deleted by hand) is what was wanted
            raise
        return False


def leftovers(objects, core, namespace: str, name: str, api: Api = TFJOB) -> List[str]:
    """What is left of a job of this name: the job itself (first), pods with its label."""
    from kubernetes.client.exceptions import ApiException
    try:
        objects.get_namespaced_custom_object(api.group, api.version, namespace, api.plural, name)
        left = [f'{api.kind} {name}']
    except ApiException as error:
        if error.status != 404:
            raise
        left = []
    return left + [f'pod {p.metadata.name} ({p.status.phase})'
                   for p in pods(core, namespace, name, api)]


def wait_gone(objects, core, namespace: str, name: str, timeout: float,
              poll_seconds: float, api: Api = TFJOB) -> None:
    """Waits until no job of this name and no pod with its label are left."""
    deadline = time.time() + timeout
    while True:
        left = leftovers(objects, core, namespace, name, api)
        if not left:
            return
        if time.time() > deadline:
            raise RuntimeError(f'{api.kind} {namespace}/{name}: still there after {timeout:.0f} s '
                               f'of deletion: {", ".join(left)}')
        time.sleep(poll_seconds)


def started(core, namespace: str, name: str, replicas: int, api: Api = TFJOB) -> bool:
    """Every replica's pod has started (Running) or already ended: training can progress."""
    phases = [p.status.phase for p in pods(core, namespace, name, api) if p.status]
    return sum(phase in ('Running', 'Succeeded', 'Failed') for phase in phases) >= replicas


def _events(core, namespace: str, name: str, uid: str) -> List[str]:
    """This object's events (by uid, as kubectl describe selects them: a same-name
    predecessor's events are kept for an hour)."""
    items = core.list_namespaced_event(namespace, field_selector=(
        f'involvedObject.name={name},involvedObject.uid={uid}')).items
    return [f'    {e.type} {e.reason}: {e.message}' + (f' (x{e.count})' if (e.count or 1) > 1
                                                        else '') for e in items]


def describe_pods(core, namespace: str, name: str, uid: str, api: Api = TFJOB) -> str:
    """Each pod's phase, unready conditions, waiting containers and events, then the job's
    events, like `kubectl describe`: why a job never started."""
    parts = []
    for pod in pods(core, namespace, name, api):
        status = pod.status
        parts.append(f'--- pod {pod.metadata.name}: {status.phase}')
        for condition in status.conditions or []:
            if condition.status != 'True':
                parts.append(f'    {condition.type}={condition.status} {condition.reason or ""}'
                             f': {condition.message or ""}')
        for container in status.container_statuses or []:
            waiting = container.state.waiting if container.state else None
            if waiting:
                parts.append(f'    container {container.name} waiting: {waiting.reason}: '
                             f'{waiting.message or ""}')
        parts += _events(core, namespace, pod.metadata.name, pod.metadata.uid)
    parts.append(f'--- {api.kind} {name} events:')
    parts += _events(core, namespace, name, uid)
    return '\n'.join(parts) if parts else '(no pods found)'


def failed_pod_logs(core, namespace: str, name: str, api: Api = TFJOB) -> str:
    """The log tails of the job's failed pods (every pod's if none is marked failed)."""
    from kubernetes.client.exceptions import ApiException
    found = pods(core, namespace, name, api)
    failed = [p for p in found if p.status and p.status.phase == 'Failed'] or found
    parts = []
    for pod in failed:
        try:
            log = core.read_namespaced_pod_log(pod.metadata.name, namespace,
                                               container=api.container, tail_lines=_TAIL_LINES)
        except ApiException as error:  # e.g. never scheduled: say so, keep the others
            log = f'(no log: {error.status} {error.reason})'
        parts.append(f'--- pod {pod.metadata.name} ({pod.status.phase}), last lines:\n{log}')
    return '\n'.join(parts) or '(no pods found)'


def conditions_logged(status: Dict[str, Any], seen: set, log, name: str,
                      kind: str = 'TFJob') -> None:
    """Logs each condition change of the job once."""
    for condition in status.get('conditions') or []:
        key = tuple(condition.get(k, '') for k in ('type', 'status', 'reason'))
        if key not in seen:
            seen.add(key)
            log('%s %s: %s=%s (%s) %s', kind, name, *key, condition.get('message', ''))
