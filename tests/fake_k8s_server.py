"""A small Kubernetes API server on 127.0.0.1 with a fake Training Operator behind it: the REST
endpoints components/trainer/tfjob.py calls through the `kubernetes` client. Test support only.

Implemented: create/get/delete a namespaced TFJob (kubeflow.org/v1), list pods by the label
`training.kubeflow.org/job-name`, read a pod's log (tailLines). Anything else answers 404, so an
unexpected call fails. Every request is recorded.

The "operator": on create, each Worker replica becomes a local process (a "pod") running the
container's command (`python` = this interpreter, cwd = this checkout, as the image's workdir)
with the TF_CONFIG the Training Operator injects into the `tensorflow` container: cluster
{"worker": [host:port, ...]} on free 127.0.0.1 ports, task {"type": "worker", "index": i}.
Status conditions follow the processes as the operator reports them: Created, Running, then
Succeeded when worker 0 (the chief) exits 0, or Failed when any pod fails (restartPolicy
Never). Deleting the job kills its pods, as garbage collection of owned pods would.
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List
from urllib.parse import parse_qs, urlparse

from components.trainer import workers

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB_LABEL = 'training.kubeflow.org/job-name'


class Pod:
    def __init__(self, job: str, index: int, command: List[str], tf_config: str, log: str):
        self.name, self.index, self.log = f'{job}-worker-{index}', index, log
        self.tf_config = tf_config
        with open(log, 'w') as output:
            self.process = subprocess.Popen(
                [sys.executable if command[0] == 'python' else command[0], *command[1:]],
                env=dict(os.environ, TF_CONFIG=tf_config, PYTHONPATH=REPO_ROOT), cwd=REPO_ROOT,
                stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)  # its own group: killed as a whole, like a pod

    def phase(self) -> str:
        code = self.process.poll()
        return 'Running' if code is None else 'Succeeded' if code == 0 else 'Failed'

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def as_json(self, namespace: str) -> Dict[str, Any]:
        return {'metadata': {'name': self.name, 'namespace': namespace, 'labels': {
                    JOB_LABEL: self.name.rsplit('-worker-', 1)[0],
                    'training.kubeflow.org/replica-type': 'worker',
                    'training.kubeflow.org/replica-index': str(self.index)}},
                'status': {'phase': self.phase()}}


class State:
    def __init__(self, log_dir: str):
        self.log_dir = log_dir
        self.jobs: Dict[str, Dict[str, Any]] = {}   # name -> manifest, namespace, pods
        self.created: List[Dict[str, Any]] = []     # every manifest received
        self.requests: List[Dict[str, Any]] = []    # method, path, query

    def start(self, namespace: str, body: Dict[str, Any]) -> None:
        assert (body['apiVersion'], body['kind']) == ('kubeflow.org/v1', 'TFJob'), body
        name = body['metadata']['name']
        replicas = body['spec']['tfReplicaSpecs']['Worker']
        [container] = replicas['template']['spec']['containers']
        assert container['name'] == 'tensorflow'  # the only container the operator configures
        ports = workers.free_ports(replicas['replicas'])
        pods = [Pod(name, i, container['command'] + container.get('args', []),
                    workers.tf_config(ports, i), os.path.join(self.log_dir, f'{name}-{i}.log'))
                for i in range(replicas['replicas'])]
        self.created.append(body)
        self.jobs[name] = dict(manifest=body, namespace=namespace, pods=pods)

    def status(self, name: str) -> Dict[str, Any]:
        phases = [pod.phase() for pod in self.jobs[name]['pods']]
        ended = ('Failed' if 'Failed' in phases else
                 'Succeeded' if phases[0] == 'Succeeded' else '')
        conditions = [dict(type='Created', status='True', reason='TFJobCreated'),
                      dict(type='Running', status='False' if ended else 'True',
                           reason='TFJobRunning')]
        if ended:
            conditions.append(dict(type=ended, status='True', reason=f'TFJob{ended}',
                                   message=f'TFJob {name} {ended.lower()}'))
        return {'conditions': conditions}

    def delete(self, name: str) -> None:
        for pod in self.jobs.pop(name)['pods']:
            pod.kill()

    def shutdown(self) -> None:
        for name in list(self.jobs):
            self.delete(name)


class Handler(BaseHTTPRequestHandler):
    state: State = None

    def log_message(self, *args):  # keep test output quiet
        pass

    def _reply(self, payload, status=200):
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'text/plain' if isinstance(payload, str)
                         else 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str):
        url = urlparse(self.path)
        path, query = url.path, parse_qs(url.query)
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'{}') if length else None
        state = self.state
        state.requests.append(dict(method=method, path=path, query=query))
        jobs = re.fullmatch(r'/apis/kubeflow.org/v1/namespaces/([^/]+)/tfjobs(?:/([^/]+))?', path)
        pods = re.fullmatch(r'/api/v1/namespaces/([^/]+)/pods', path)
        log = re.fullmatch(r'/api/v1/namespaces/([^/]+)/pods/([^/]+)/log', path)
        if jobs and method == 'POST' and not jobs.group(2):
            if body['metadata']['name'] in state.jobs:
                return 409, {'kind': 'Status', 'reason': 'AlreadyExists', 'code': 409}
            state.start(jobs.group(1), body)
            return 201, body
        if jobs and jobs.group(2) in state.jobs:
            name = jobs.group(2)
            if method == 'GET':
                return 200, dict(state.jobs[name]['manifest'], status=state.status(name))
            if method == 'DELETE':
                state.delete(name)
                return 200, {'kind': 'Status', 'status': 'Success'}
        if pods and method == 'GET':
            selector = query.get('labelSelector', [''])[0]
            key, _, value = selector.partition('=')
            assert key == JOB_LABEL, selector
            found = state.jobs[value]['pods'] if value in state.jobs else []
            return 200, {'kind': 'PodList', 'apiVersion': 'v1', 'metadata': {},
                         'items': [p.as_json(pods.group(1)) for p in found]}
        if log and method == 'GET':
            for job in state.jobs.values():
                for pod in job['pods']:
                    if pod.name == log.group(2):
                        with open(pod.log, errors='replace') as handle:
                            lines = handle.readlines()
                        tail = int(query.get('tailLines', [len(lines)])[0])
                        return 200, ''.join(lines[-tail:]) if tail else ''
        return 404, {'kind': 'Status', 'reason': 'NotFound', 'code': 404,
                     'message': f'not implemented or not found: {method} {self.path}'}

    def _handle(self):
        status, payload = self._route(self.command)  # the request's method
        self._reply(payload, status)

    do_GET = do_POST = do_DELETE = _handle


def start(log_dir: str):
    """Returns (server, state); the URL is f'http://127.0.0.1:{server.server_port}'. Stop it
    with server.shutdown() and state.shutdown() (kills any pod still running)."""
    state = State(log_dir)
    handler = type('BoundHandler', (Handler,), {'state': state})
    server = ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


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
