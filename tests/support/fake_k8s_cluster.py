"""The fake cluster's state behind fake_k8s_server.py's HTTP front: the API server's object
rules (409 on a taken name, defaults, Istio's sidecar injector, graceful pod deletion,
propagation policies), the garbage collector, and the loop that runs GC, kubelet
(fake_k8s_kubelet.py), the Training Operator (fake_k8s_reconcile.py) and, when installed,
Kubeflow Trainer v2 (fake_k8s_trainjob.py), JobSet (fake_k8s_jobset.py) and the Job controller
(fake_k8s_batchjob.py) every 0.1 s, as their watches would. So everything is asynchronous, as
on a cluster: a delete returns before the pods are gone.
Test support only; tests read its fields (jobs, objects, pods, events, created, requests)
under `lock`. `jobs` holds the TFJobs; `objects` every other kind by (kind, namespace, name):
TrainJob, ClusterTrainingRuntime (namespace ''), TrainingRuntime, JobSet, Job, ConfigMap.
"""
import copy
import os
import threading
import time
import traceback
import uuid
from typing import Any, Dict, List

import fake_k8s_batchjob
import fake_k8s_jobset
import fake_k8s_kubelet
import fake_k8s_operator
import fake_k8s_reconcile
import fake_k8s_trainjob
from fake_k8s_scheduler import now

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ISTIO_ANNOTATION = 'sidecar.istio.io/inject'
# kind -> (resource as the API server names it in messages, namespaced)
RESOURCES = {'TrainJob': ('trainjobs.trainer.kubeflow.org', True),
             'TrainingRuntime': ('trainingruntimes.trainer.kubeflow.org', True),
             'ClusterTrainingRuntime': ('clustertrainingruntimes.trainer.kubeflow.org', False),
             'JobSet': ('jobsets.jobset.x-k8s.io', True), 'Job': ('jobs.batch', True),
             'ConfigMap': ('configmaps', True)}


class Cluster:
    def __init__(self, log_dir: str, istio: bool, unpullable, grace_seconds: float,
                 allocatable: Dict[str, str], tfjob: bool = True, trainer: bool = False):
        self.lock = threading.RLock()
        self.istio, self.grace_seconds = istio, grace_seconds
        # What is installed: the Training Operator v1 (TFJob CRD), Trainer v2 with JobSet.
        self.tfjob, self.trainer = tfjob, trainer
        self.jobs: Dict[str, Dict[str, Any]] = {}            # name -> stored TFJob
        self.objects: Dict[tuple, Dict[str, Any]] = {}       # (kind, namespace, name) -> object
        self.job_failures: Dict[str, Dict[str, float]] = {}  # Job uid -> failed pod uid -> time
        self.job_succeeded: Dict[str, set] = {}              # Job uid -> succeeded indexes
        self.discoveries: List[Dict[str, Any]] = []          # GET /apis/<group>/<version>
        self.pods: Dict[tuple, Dict[str, Any]] = {}          # (namespace, name) -> pod
        self.services: Dict[tuple, Dict[str, Any]] = {}
        self.events: List[Dict[str, Any]] = []
        self.created: List[Dict[str, Any]] = []              # every TFJob body admitted
        self.requests: List[Dict[str, Any]] = []             # method, path, query, status, time
        self.removed: List[tuple] = []                       # (time, namespace, name, uid)
        self.errors: List[str] = []                          # the sync loop's exceptions
        self.requeues: Dict[str, int] = {}                   # job uid -> failed reconciles
        self.started: Dict[str, float] = {}                  # job uid -> startTime (seconds)
        self.kubelet = fake_k8s_kubelet.Kubelet(self, log_dir, REPO_ROOT, allocatable,
                                                list(unpullable))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    # --- objects --------------------------------------------------------------------------
    def event(self, obj, type_: str, reason: str, message: str, component: str) -> None:
        """record/events_cache.go EventCorrelator: a repeat only bumps count/lastTimestamp."""
        meta = obj['metadata']
        for event in self.events:
            if (event['involvedObject']['uid'], event['reason'], event['message']) == (
                    meta['uid'], reason, message):
                event['count'] += 1
                event['lastTimestamp'] = now()
                return
        self.events.append({
            'metadata': {'name': f'{meta["name"]}.{uuid.uuid4().hex[:16]}',
                         'namespace': meta['namespace']},
            'involvedObject': {'kind': obj.get('kind', 'Pod'), 'name': meta['name'],
                               'namespace': meta['namespace'], 'uid': meta['uid']},
            'type': type_, 'reason': reason, 'message': message, 'count': 1,
            'source': {'component': component}, 'firstTimestamp': now(),
            'lastTimestamp': now()})

    def start(self, namespace: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """Creates a TFJob as the API server does on POST (admission, 409 on a taken name)."""
        name = body.get('metadata', {}).get('name', '')
        if name in self.jobs:  # registry/generic/registry/store.go Create
            raise fake_k8s_operator.Refused(409, 'AlreadyExists',
                                            f'tfjobs.kubeflow.org "{name}" already exists')
        job = fake_k8s_operator.admit(body)
        job['metadata'].update(namespace=namespace, uid=str(uuid.uuid4()),
                               creationTimestamp=now())
        job['kind'] = 'TFJob'
        self.created.append(body)
        self.jobs[name] = job
        return job

    # --- Trainer v2, JobSet, Job, ConfigMap objects --------------------------------------
    def create_object(self, kind: str, namespace: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """POST of any kind in RESOURCES: 409 on a taken name (registry store.go Create), the
        kind's admission (CRD rules, defaulting and validating webhooks), uid and timestamp.
        Raises fake_k8s_jobset.Refused with the API's code."""
        resource, namespaced = RESOURCES[kind]
        namespace = namespace if namespaced else ''
        name = (body.get('metadata') or {}).get('name', '')
        if (kind, namespace, name) in self.objects:
            raise fake_k8s_jobset.Refused(409, 'AlreadyExists',
                                          f'{resource} "{name}" already exists')
        if kind == 'TrainJob':
            obj = fake_k8s_trainjob.admit_trainjob(self, namespace, body)
        elif kind in ('TrainingRuntime', 'ClusterTrainingRuntime'):
            obj = fake_k8s_trainjob.admit_runtime(kind, body)
        elif kind == 'JobSet':
            obj = fake_k8s_jobset.admit(body)
        elif kind == 'Job':
            obj = fake_k8s_batchjob.admit(body)
        else:
            obj = copy.deepcopy(body)
        obj['metadata'].update(uid=str(uuid.uuid4()), creationTimestamp=now())
        if namespace:
            obj['metadata']['namespace'] = namespace
        obj['kind'] = kind
        if kind == 'Job':
            fake_k8s_batchjob.created(obj)
        if kind == 'TrainJob':
            self.created.append(body)
        self.objects[(kind, namespace, name)] = obj
        return obj

    def try_create(self, kind: str, namespace: str, body: Dict[str, Any]) -> str:
        """A controller's create: '' or the API's error message."""
        try:
            self.create_object(kind, namespace, body)
            return ''
        except fake_k8s_jobset.Refused as refused:
            return str(refused)

    def runtime(self, kind: str, namespace: str, name: str):
        return self.objects.get((kind, namespace if kind == 'TrainingRuntime' else '', name))

    def owned(self, kind: str, uid: str) -> List[Dict[str, Any]]:
        """Objects of kind whose controller reference is uid (controller-runtime's
        ownership index, JobSet's JobsIndexByJobSetKey)."""
        return [o for (k, _, _), o in sorted(self.objects.items()) if k == kind and any(
            r['uid'] == uid and r.get('controller')
            for r in o['metadata'].get('ownerReferences') or [])]

    def owned_pods(self, uid: str) -> List[Dict[str, Any]]:
        return [p for _, p in sorted(self.pods.items()) if any(
            r['uid'] == uid and r.get('controller')
            for r in p['metadata'].get('ownerReferences') or [])]

    def delete_object(self, kind: str, namespace: str, name: str,
                      propagation: str) -> Dict[str, Any]:
        """DELETE with a propagation policy, as delete_job does for TFJobs; built-in kinds
        and custom resources alike default to Background here (Jobs' own default, Orphan
        for batch/v1 through kubectl, is not modelled)."""
        _, namespaced = RESOURCES[kind]
        key = (kind, namespace if namespaced else '', name)
        obj = self.objects[key]
        if propagation == 'Foreground':
            obj['metadata'].setdefault('deletionTimestamp', now())
            obj['metadata']['finalizers'] = ['foregroundDeletion']
            return obj
        del self.objects[key]
        if propagation == 'Orphan':
            for other in self._dependents():
                other[2]['metadata']['ownerReferences'] = [
                    r for r in other[2]['metadata'].get('ownerReferences') or []
                    if r['uid'] != obj['metadata']['uid']]
        return obj

    def delete_jobs(self, jobs) -> None:
        """JobSet's deleteJobs: each Job not already being deleted, in the foreground."""
        for job in jobs:
            if not job['metadata'].get('deletionTimestamp'):
                meta = job['metadata']
                self.delete_object('Job', meta['namespace'], meta['name'], 'Foreground')

    def _dependents(self):
        return ([('pod', k, p) for k, p in list(self.pods.items())]
                + [('service', k, s) for k, s in list(self.services.items())]
                + [('object', k, o) for k, o in list(self.objects.items())])

    def create_pod(self, pod) -> str:
        """POST pods: 409 on a taken name; defaults; Istio's sidecar injector (a mutating
        webhook: namespace injection on, no `sidecar.istio.io/inject: "false"`)."""
        key = (pod['metadata']['namespace'], pod['metadata']['name'])
        if key in self.pods:
            return f'pods "{key[1]}" already exists'
        pod['metadata'].update(uid=str(uuid.uuid4()), creationTimestamp=now())
        pod['spec'].setdefault('terminationGracePeriodSeconds', self.grace_seconds)
        annotations = pod['metadata'].get('annotations') or {}
        if self.istio and annotations.get(ISTIO_ANNOTATION, 'true').lower() != 'false':
            # istio pkg/kube/inject: the proxy runs until the pod is deleted.
            pod['spec']['containers'].append({'name': fake_k8s_kubelet.ISTIO_CONTAINER,
                                              'image': 'docker.io/istio/proxyv2:1.22.1',
                                              'command': ['sleep', 'infinity']})
        pod['status'] = {'phase': 'Pending'}
        self.pods[key] = pod
        return ''

    def remove_pod(self, key) -> None:
        """The pod object leaves the store (deleted at once, or after its containers)."""
        pod = self.pods.pop(key, None)
        if pod is not None:
            self.removed.append((time.time(), *key, pod['metadata']['uid']))

    def delete_pod(self, pod) -> None:
        """pod strategy.go CheckGracefulDelete: unscheduled or finished pods go at once; else
        deletionTimestamp + the grace period, and the kubelet stops the containers."""
        meta = pod['metadata']
        if not pod['spec'].get('nodeName') or pod['status'].get('phase') in (
                'Succeeded', 'Failed'):
            self.remove_pod((meta['namespace'], meta['name']))
            return
        meta.setdefault('deletionTimestamp', now())
        meta.setdefault('deletionGracePeriodSeconds',
                        pod['spec']['terminationGracePeriodSeconds'])

    def delete_job(self, name: str, propagation: str) -> Dict[str, Any]:
        """Custom resources default to Background (apiextensions DefaultGarbageCollectionPolicy);
        Foreground keeps the job, with deletionTimestamp and the foregroundDeletion finalizer,
        until the garbage collector has deleted its dependents."""
        job = self.jobs[name]
        if propagation == 'Foreground':
            job['metadata'].setdefault('deletionTimestamp', now())
            job['metadata']['finalizers'] = ['foregroundDeletion']
            return job
        del self.jobs[name]
        if propagation == 'Orphan':
            for obj in list(self.pods.values()) + list(self.services.values()):
                obj['metadata']['ownerReferences'] = [
                    r for r in obj['metadata'].get('ownerReferences') or []
                    if r['uid'] != job['metadata']['uid']]
        return job

    def _collect_garbage(self) -> None:
        """garbagecollector.go: dependents of a missing owner are deleted (in the background),
        those of an owner being deleted in the foreground are deleted in the foreground too
        (attemptToDeleteItem: an owner waitingForDependentsDeletion); a foreground owner goes
        once no dependent with blockOwnerDeletion is left."""
        live = {j['metadata']['uid']: ('TFJob', j['metadata']['name'])
                for j in self.jobs.values()}
        live.update({o['metadata']['uid']: key for key, o in self.objects.items()})
        doomed = {uid for uid, key in live.items()
                  if (self.jobs[key[1]] if key[0] == 'TFJob' else self.objects[key])[
                      'metadata'].get('deletionTimestamp')}
        for kind, key, obj in self._dependents():
            owners = {r['uid'] for r in obj['metadata'].get('ownerReferences') or []}
            if not owners or not (owners - set(live) or owners & doomed):
                continue
            if kind == 'pod':
                self.delete_pod(obj)
            elif kind == 'service':
                del self.services[key]
            elif owners - set(live):
                self.objects.pop(key, None)
            elif not obj['metadata'].get('deletionTimestamp'):
                obj['metadata']['deletionTimestamp'] = now()
                obj['metadata']['finalizers'] = ['foregroundDeletion']
        for uid in doomed:
            blocked = any(r['uid'] == uid and r.get('blockOwnerDeletion', True)
                          for _, _, o in self._dependents()
                          for r in o['metadata'].get('ownerReferences') or [])
            if not blocked:
                key = live[uid]
                if key[0] == 'TFJob':
                    del self.jobs[key[1]]
                else:
                    del self.objects[key]

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            with self.lock:
                try:
                    self._collect_garbage()
                    self.kubelet.sync()
                    for job in list(self.jobs.values()):
                        fake_k8s_reconcile.reconcile(self, job)
                    for kind, module in (('TrainJob', fake_k8s_trainjob),
                                         ('JobSet', fake_k8s_jobset), ('Job', fake_k8s_batchjob)):
                        for key in sorted(k for k in self.objects if k[0] == kind):
                            if key in self.objects:
                                module.reconcile(self, self.objects[key])
                except Exception:  # kept for the test to see; the loop goes on
                    self.errors.append(traceback.format_exc())

    def wait(self, predicate, timeout: float = 60.0) -> None:
        """Waits until predicate() is true. It is called under the lock, so it reads the
        fields; an API call from it would wait for the lock forever."""
        deadline = time.time() + timeout
        while True:
            with self.lock:
                if predicate():
                    return
            if time.time() > deadline:
                raise TimeoutError(f'fake cluster: condition not met in {timeout} s')
            time.sleep(0.1)

    def pod(self, name: str, namespace: str = None) -> Dict[str, Any]:
        return next(p for (ns, n), p in self.pods.items()
                    if n == name and namespace in (None, ns))

    def shutdown(self) -> None:
        self._stop.set()
        self._thread.join()
        with self.lock:
            self.kubelet.shutdown()
