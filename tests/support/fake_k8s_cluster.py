"""The fake cluster's state behind fake_k8s_server.py's HTTP front: the API server's object
rules (409 on a taken name, defaults, Istio's sidecar injector, graceful pod deletion,
propagation policies), the garbage collector, and the loop that runs GC, kubelet
(fake_k8s_kubelet.py) and operator (fake_k8s_reconcile.py) every 0.1 s, as their watches would.
So everything is asynchronous, as on a cluster: a delete returns before the pods are gone.
Test support only; tests read its fields (jobs, pods, events, created, requests) under `lock`.
"""
import os
import threading
import time
import traceback
import uuid
from typing import Any, Dict, List

import fake_k8s_kubelet
import fake_k8s_operator
import fake_k8s_reconcile
from fake_k8s_scheduler import now

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ISTIO_ANNOTATION = 'sidecar.istio.io/inject'


class Cluster:
    def __init__(self, log_dir: str, istio: bool, unpullable, grace_seconds: float,
                 allocatable: Dict[str, str]):
        self.lock = threading.RLock()
        self.istio, self.grace_seconds = istio, grace_seconds
        self.jobs: Dict[str, Dict[str, Any]] = {}            # name -> stored TFJob
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
        """garbagecollector.go: dependents of a missing owner, or of an owner being deleted in
        the foreground, are deleted; a foreground owner goes when they are gone."""
        live = {j['metadata']['uid']: j for j in self.jobs.values()}
        doomed = {uid for uid, j in live.items() if j['metadata'].get('deletionTimestamp')}
        for store in (self.pods, self.services):
            for key, obj in list(store.items()):
                owners = {r['uid'] for r in obj['metadata'].get('ownerReferences') or []}
                if owners and (owners - set(live) or owners & doomed):
                    if store is self.pods:
                        self.delete_pod(obj)
                    else:
                        del store[key]
        for uid in doomed:
            if not any(uid in {r['uid'] for r in p['metadata'].get('ownerReferences') or []}
                       for p in self.pods.values()):
                del self.jobs[live[uid]['metadata']['name']]

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            with self.lock:
                try:
                    self._collect_garbage()
                    self.kubelet.sync()
                    for job in list(self.jobs.values()):
                        fake_k8s_reconcile.reconcile(self, job)
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
