"""A small Kubernetes API server on 127.0.0.1 with a one-node cluster and the Kubeflow Training
Operator (v1.9.0) behind it: the REST endpoints launch/tfjob.py calls through the
`kubernetes` client. Test support only.

    server, cluster = start(log_dir, istio=False, unpullable=(), grace_seconds=30)

Endpoints: TFJobs (create, get, delete with propagationPolicy), pods (list by label selector,
get, delete, log), events (list by fieldSelector); with `trainer=True` Kubeflow Trainer v2.3's
TrainJobs, TrainingRuntimes and ClusterTrainingRuntimes and JobSets (create, get, list,
delete); batch/v1 Jobs and ConfigMaps (get, list); API discovery (GET /apis/<group>/<version>:
the installed groups only). Anything else answers 404, so an unexpected call fails. Every
request is recorded in cluster.requests, but discovery requests, which go to
cluster.discoveries.

With `trainer=True` a TrainJob runs through transcriptions of Trainer v2.3
(fake_k8s_trainjob.py), JobSet v0.12 (fake_k8s_jobset.py) and Kubernetes' Job controller
(fake_k8s_batchjob.py), on the same scheduler, kubelet and pod network.

The cluster behind it (fake_k8s_cluster.py, with fake_k8s_operator.py, fake_k8s_reconcile.py,
fake_k8s_scheduler.py, fake_k8s_kubelet.py, fake_k8s_network.py) is a transcription: admission
by the TFJob CRD and webhook, the operator's ReconcileJobs order, a scheduler that leaves pods
Pending, containers that get only their image's and template's environment, a pod network where
TF_CONFIG's `<job>-worker-<i>.<ns>.svc:2222` names resolve and connect (fake_k8s_network.py),
Istio sidecar injection, and asynchronous graceful deletion. Each rule names its source there.
"""
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import fake_k8s_cluster
import fake_k8s_jobset
import fake_k8s_operator

JOB_LABEL = fake_k8s_operator.JOB_LABEL
_JOBS = r'/apis/kubeflow.org/v1/namespaces/([^/]+)/tfjobs(?:/([^/]+))?'
_DISCOVERY = r'/apis/([^/]+)/([^/]+)/?'
_OBJECTS = (r'/apis?/(trainer\.kubeflow\.org/v1alpha1|jobset\.x-k8s\.io/v1alpha2|batch/v1|v1)/'
            r'(?:namespaces/([^/]+)/)?([a-z]+)(?:/([^/]+))?')
# group/version -> plural -> kind: what each install serves (CRDs), besides the core API.
_TRAINER = {'trainer.kubeflow.org/v1alpha1': {
                'trainjobs': 'TrainJob', 'trainingruntimes': 'TrainingRuntime',
                'clustertrainingruntimes': 'ClusterTrainingRuntime'},
            'jobset.x-k8s.io/v1alpha2': {'jobsets': 'JobSet'}}
_BUILTIN = {'batch/v1': {'jobs': 'Job'}, 'v1': {'configmaps': 'ConfigMap'}}
_TFJOB = {'kubeflow.org/v1': {'tfjobs': 'TFJob'}}
_PODS = r'/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?(/log)?'
_EVENTS = r'/api/v1/namespaces/([^/]+)/events'


def _status(code: int, reason: str, message: str):
    return code, {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
                  'message': message, 'reason': reason, 'code': code}


def _matches(labels, selector: str) -> bool:
    """Equality-based label selectors `a=b,c=d` (apimachinery labels.Parse)."""
    pairs = [term.split('=', 1) for term in selector.split(',') if term]
    return all(labels.get(key.strip()) == value.strip().lstrip('=') for key, value in pairs)


class Handler(BaseHTTPRequestHandler):
    cluster: fake_k8s_cluster.Cluster = None

    def log_message(self, *args):  # keep test output quiet
        pass

    def _served(self):
        cluster = self.cluster
        return {**_BUILTIN, **(_TRAINER if cluster.trainer else {}),
                **(_TFJOB if cluster.tfjob else {})}

    def _discovery(self, group: str, version: str):
        """GET /apis/<group>/<version>: the APIResourceList of an installed group, else 404
        (apiextensions-apiserver serves a CRD's group version only while one is installed)."""
        resources = self._served().get(f'{group}/{version}')
        if resources is None or group == 'batch' and version != 'v1':
            return _status(404, 'NotFound', 'the server could not find the requested resource')
        return 200, {'kind': 'APIResourceList', 'apiVersion': 'v1',
                     'groupVersion': f'{group}/{version}', 'resources': [
                         {'name': plural, 'singularName': kind.lower(), 'kind': kind,
                          'namespaced': kind != 'ClusterTrainingRuntime',
                          'verbs': ['create', 'delete', 'get', 'list', 'patch', 'update',
                                    'watch']} for plural, kind in resources.items()]}

    def _objects(self, method, match, query, body):
        """Trainer v2's, JobSet's, batch/v1 Jobs' and ConfigMaps' REST endpoints."""
        cluster = self.cluster
        group_version, namespace, plural, name = match.groups()
        kind = self._served().get(group_version, {}).get(plural)
        if kind is None or kind == 'TFJob':
            return None
        resource, namespaced = fake_k8s_cluster.RESOURCES[kind]
        if namespaced != bool(namespace):
            return None
        namespace = namespace or ''
        if method == 'POST' and not name:
            try:
                return 201, cluster.create_object(kind, namespace, body)
            except fake_k8s_jobset.Refused as refused:
                return _status(refused.code, refused.reason, str(refused))
        if method == 'GET' and not name:
            selector = query.get('labelSelector', [''])[0]
            return 200, {'kind': f'{kind}List', 'apiVersion': group_version, 'metadata': {},
                         'items': [o for (k, ns, _), o in sorted(cluster.objects.items())
                                   if k == kind and ns == namespace and _matches(
                                       o['metadata'].get('labels') or {}, selector)]}
        obj = cluster.objects.get((kind, namespace, name))
        if obj is None:
            return _status(404, 'NotFound', f'{resource} "{name}" not found')
        if method == 'GET':
            return 200, obj
        if method == 'DELETE':
            policy = (query.get('propagationPolicy', [''])[0]
                      or (body or {}).get('propagationPolicy') or 'Background')
            return 200, cluster.delete_object(kind, namespace, name, policy)
        return None

    def _route(self, method: str, path: str, query, body):
        cluster = self.cluster
        jobs, pods, events = (re.fullmatch(p, path) for p in (_JOBS, _PODS, _EVENTS))
        if jobs and not cluster.tfjob:  # no TFJob CRD installed
            jobs = None
        objects = re.fullmatch(_OBJECTS, path)
        if objects:
            answer = self._objects(method, objects, query, body)
            if answer:
                return answer
        if jobs and method == 'POST' and not jobs.group(2):
            try:
                return 201, cluster.start(jobs.group(1), body)
            except fake_k8s_operator.Refused as refused:
                return _status(refused.code, refused.reason, str(refused))
        if jobs and jobs.group(2):
            job = cluster.jobs.get(jobs.group(2))
            if job is None or job['metadata']['namespace'] != jobs.group(1):
                return _status(404, 'NotFound', f'tfjobs.kubeflow.org "{jobs.group(2)}" not '
                               'found')
            if method == 'GET':
                return 200, job
            if method == 'DELETE':
                policy = (query.get('propagationPolicy', [''])[0]
                          or (body or {}).get('propagationPolicy') or 'Background')
                return 200, cluster.delete_job(jobs.group(2), policy)
        if pods and not pods.group(2) and method == 'GET':
            selector = query.get('labelSelector', [''])[0]
            return 200, {'kind': 'PodList', 'apiVersion': 'v1', 'metadata': {}, 'items': [
                p for (ns, _), p in sorted(cluster.pods.items()) if ns == pods.group(1)
                and _matches(p['metadata'].get('labels') or {}, selector)]}
        if pods and pods.group(2):
            pod = cluster.pods.get((pods.group(1), pods.group(2)))
            if pod is None:
                return _status(404, 'NotFound', f'pods "{pods.group(2)}" not found')
            if pods.group(3) and method == 'GET':
                return self._log(pod, query)
            if method == 'GET':
                return 200, pod
            if method == 'DELETE':
                cluster.delete_pod(pod)
                return 200, pod
        if events and method == 'GET':
            # event field selectors: involvedObject.{kind,name,namespace,uid}, type, reason
            terms = [t.split('=', 1) for t in query.get('fieldSelector', [''])[0].split(',')
                     if t]
            return 200, {'kind': 'EventList', 'apiVersion': 'v1', 'metadata': {}, 'items': [
                e for e in cluster.events if e['metadata']['namespace'] == events.group(1)
                and all((e['involvedObject'] if k.startswith('involvedObject.') else e).get(
                    k.split('.')[-1]) == v for k, v in terms)]}
        return _status(404, 'NotFound', f'the server could not find the requested resource '
                       f'({method} {path})')

    def _log(self, pod, query):
        """registry/core/pod/rest/log.go + kubelet validateContainerLogStatus."""
        names = [c['name'] for c in pod['spec']['containers']]
        container = query.get('container', [''])[0]
        name = pod['metadata']['name']
        if not container:
            if len(names) > 1:
                return _status(400, 'BadRequest', f'a container name must be specified for pod '
                               f'{name}, choose one of: [{" ".join(names)}]')
            container = names[0]
        if container not in names:
            return _status(400, 'BadRequest', f'container {container} is not valid for pod '
                           f'{name}')
        if not pod['spec'].get('nodeName'):
            return _status(400, 'BadRequest', f'pod {name} does not have a host assigned')
        for status in pod['status'].get('containerStatuses') or []:
            waiting = status['state'].get('waiting') if status['name'] == container else None
            if waiting:
                return _status(400, 'BadRequest', f'container "{container}" in pod "{name}" is '
                               'waiting to start: image can\'t be pulled' if 'Pull' in
                               waiting['reason'] else f'container "{container}" in pod '
                               f'"{name}" is waiting to start: {waiting["reason"]}')
        with open(self.cluster.kubelet.log_path(pod, container), errors='replace') as handle:
            lines = handle.readlines()
        tail = query.get('tailLines')
        return 200, ''.join(lines[-int(tail[0]):] if tail and int(tail[0]) else
                            [] if tail else lines)

    def _handle(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'null') if length else None
        with self.cluster.lock:
            record = dict(method=self.command, path=url.path, query=query, time=time.time())
            discovery = re.fullmatch(_DISCOVERY, url.path)
            if discovery and self.command == 'GET':  # kept apart: not a resource call
                self.cluster.discoveries.append(record)
                status, payload = self._discovery(*discovery.groups())
            else:
                self.cluster.requests.append(record)
                status, payload = self._route(self.command, url.path, query, body)
            record['status'] = status
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'text/plain' if isinstance(payload, str)
                         else 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _handle


def start(log_dir: str, istio: bool = False, unpullable=(), grace_seconds: float = 30,
          allocatable=None, tfjob: bool = True, trainer: bool = False):
    """Returns (server, cluster); the URL is f'http://127.0.0.1:{server.server_port}'.
    istio: sidecar injection on in every namespace (a Kubeflow profile namespace);
    unpullable: images whose pull fails; grace_seconds: the pods' default
    terminationGracePeriodSeconds (Kubernetes: 30); allocatable: the node's resources;
    tfjob: the Training Operator v1.9 installed (its TFJob CRD served); trainer: Kubeflow
    Trainer v2.3 with JobSet installed (no runtime: a test applies one).
    Stop with server.shutdown() and cluster.shutdown() (kills what still runs)."""
    cluster = fake_k8s_cluster.Cluster(log_dir, istio, unpullable, grace_seconds,
                                       allocatable or {'cpu': '64', 'memory': '256Gi',
                                                       'pods': '110'}, tfjob, trainer)
    handler = type('BoundHandler', (Handler,), {'cluster': cluster})
    server = ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, cluster


def write_kubeconfig(path: str, server, namespace: str) -> str:
    """A kubeconfig (JSON is YAML) whose current context is the fake server; returns path."""
    with open(path, 'w') as handle:
        json.dump({'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'fake',
                   'clusters': [{'name': 'fake', 'cluster': {
                       'server': f'http://127.0.0.1:{server.server_port}'}}],
                   'users': [{'name': 'fake', 'user': {'token': 'test'}}],
                   'contexts': [{'name': 'fake', 'context': {
                       'cluster': 'fake', 'user': 'fake', 'namespace': namespace}}]}, handle)
    return path
