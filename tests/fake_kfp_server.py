"""A small KFP API server on 127.0.0.1: the v2beta1 REST endpoints `runner.py --kubeflow
--endpoint` uses, with in-memory state, recording every request. Test support only.

Implemented: healthz, list/upload pipelines and versions (multipart upload, as kfp.Client sends it),
get-or-create experiments, list/create/delete recurring runs. Filters support the one predicate
kfp.Client sends (display_name EQUALS). Anything else answers 404, so an unexpected call fails.
"""
import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List
from urllib.parse import parse_qs, urlparse

PREFIX = '/apis/v2beta1'


class State:
    def __init__(self):
        self.ids = itertools.count(1)
        self.pipelines: List[Dict[str, Any]] = []
        self.versions: List[Dict[str, Any]] = []       # each holds its uploaded spec
        self.experiments: List[Dict[str, Any]] = []
        self.recurring_runs: List[Dict[str, Any]] = []
        self.requests: List[Dict[str, Any]] = []       # method, path, query, body (JSON)

    def new_id(self, kind: str) -> str:
        return f'{kind}-{next(self.ids)}'


def _matches(item: Dict[str, Any], query: Dict[str, List[str]]) -> bool:
    if 'filter' not in query:
        return True
    for predicate in json.loads(query['filter'][0])['predicates']:
        # kfp.Client sends the enum's number (1), JSON the name; both mean EQUALS.
        assert predicate['operation'] in ('EQUALS', 1) and predicate['key'] == 'display_name'
        if item['display_name'] != predicate['stringValue']:
            return False
    return True


def _uploaded_file(handler) -> bytes:
    """The file part of a multipart/form-data body."""
    boundary = handler.headers['Content-Type'].split('boundary=')[1].encode()
    body = handler.rfile.read(int(handler.headers['Content-Length']))
    for part in body.split(b'--' + boundary):
        if b'filename=' in part:
            return part.split(b'\r\n\r\n', 1)[1].rsplit(b'\r\n', 1)[0]
    raise AssertionError('no file in the upload')


class Handler(BaseHTTPRequestHandler):
    state: State = None

    def log_message(self, *args):  # keep test output quiet
        pass

    def _reply(self, payload, status=200):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str):
        url = urlparse(self.path)
        path, query = url.path[len(PREFIX):], parse_qs(url.query)
        body = None
        if method == 'POST' and path.startswith('/pipelines/upload'):
            body = json.loads(_uploaded_file(self))
        elif method == 'POST':
            body = json.loads(self.rfile.read(int(self.headers['Content-Length'])) or b'{}')
        state = self.state
        state.requests.append(dict(method=method, path=path, query=query, body=body))
        versions = re.fullmatch(r'/pipelines/([^/]+)/versions', path)
        run = re.fullmatch(r'/recurringruns/([^/]+)', path)
        if (method, path) == ('GET', '/healthz'):  # kfp.Client asks whether it is multi-user
            return {'multi_user': False}
        if (method, path) == ('GET', '/pipelines'):
            return {'pipelines': [p for p in state.pipelines if _matches(p, query)]}
        if (method, path) in (('POST', '/pipelines/upload'), ('POST', '/pipelines/upload_version')):
            if path.endswith('upload'):
                pipeline = dict(pipeline_id=state.new_id('pipeline'), display_name=query['name'][0])
                state.pipelines.append(pipeline)
                pipeline_id, version_name = pipeline['pipeline_id'], query['name'][0]
            else:
                pipeline_id, version_name = query['pipelineid'][0], query['name'][0]
            assert not [v for v in state.versions if v['pipeline_id'] == pipeline_id
                        and v['display_name'] == version_name], 'version names are unique'
            version = dict(pipeline_id=pipeline_id, pipeline_version_id=state.new_id('version'),
                           display_name=version_name, pipeline_spec=body)
            state.versions.append(version)
            return pipeline if path.endswith('upload') else version
        if method == 'GET' and versions:
            found = [v for v in state.versions
                     if v['pipeline_id'] == versions.group(1) and _matches(v, query)]
            if query.get('sort_by') == ['created_at desc']:
                found = found[::-1]
            return {'pipeline_versions': found[:int(query.get('page_size', ['10'])[0])]}
        if (method, path) == ('GET', '/experiments'):
            return {'experiments': [e for e in state.experiments if _matches(e, query)]}
        if (method, path) == ('POST', '/experiments'):
            experiment = dict(body, experiment_id=state.new_id('experiment'))
            state.experiments.append(experiment)
            return experiment
        if (method, path) == ('GET', '/recurringruns'):
            return {'recurringRuns': [r for r in state.recurring_runs if _matches(r, query) and
                                      r['experiment_id'] == query['experiment_id'][0]]}
        if (method, path) == ('POST', '/recurringruns'):
            created = dict(body, recurring_run_id=state.new_id('recurring-run'))
            state.recurring_runs.append(created)
            return created
        if method == 'DELETE' and run:
            state.recurring_runs = [r for r in state.recurring_runs
                                    if r['recurring_run_id'] != run.group(1)]
            return {}
        return None

    def _handle(self, method):
        payload = self._route(method)
        if payload is None:
            self._reply({'error': f'not implemented: {method} {self.path}'}, 404)
        else:
            self._reply(payload)

    def do_GET(self):
        self._handle('GET')

    def do_POST(self):
        self._handle('POST')

    def do_DELETE(self):
        self._handle('DELETE')


def start():
    """Returns (server, state); the URL is f'http://127.0.0.1:{server.server_port}'."""
    state = State()
    handler = type('BoundHandler', (Handler,), {'state': state})
    server = ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state
