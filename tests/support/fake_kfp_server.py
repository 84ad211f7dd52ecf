"""A KFP API server on 127.0.0.1 for tests: the v2beta1 REST endpoints `runner.py --kubeflow
--endpoint` uses, in memory, recording every request, and refusing what KFP's server refuses with
its messages and error bodies. This file: routing, state, healthz, uploads and authorization;
fake_kfp_gateway.py: the gRPC services behind the gateway; fake_kfp_rules.py: the rules.

Transcribed from kubeflow/pipelines master (VERSION 2.17.0), backend/src/apiserver/:
main.go (healthz, routes), server/pipeline_upload_server.go (multipart uploads; their own error
body {error_message, error_details}), server/{pipeline,experiment,job}_server.go behind the
grpc-gateway (error body: google.rpc.Status {code, message, details}), resource/resource_manager.go.
`start(multi_user=True, tokens=..., allowed=...)` is a full Kubeflow install: a user identity per
request (kubeflow-userid header, or a Bearer token a TokenReview maps to a user), and a
SubjectAccessReview modelled as the (user, namespace) pairs allowed.
Not modelled: strict parsing of the JSON request bodies, v1 APIs, runs, archiving, pagination
tokens. Any other route answers 404 "not implemented", so an unexpected call fails the test.
"""
import itertools
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List
from urllib.parse import parse_qs, urlparse

from fake_kfp_gateway import route
from fake_kfp_rules import (HTTP_STATUS, KfpError, check_length, not_found, parse_template,
                            spec_name, stored_spec, validate_pipeline_name)

PREFIX = '/apis/v2beta1'
TOKEN_AUDIENCE = 'pipelines.kubeflow.org'  # common/const.go DefaultTokenReviewAudience
_STATUS_TYPE = 'type.googleapis.com/google.rpc.Status'


class State:
    def __init__(self, multi_user=False, tokens=None, allowed=(),
                 userid_header='kubeflow-userid', userid_prefix=''):
        self.multi_user = multi_user             # MULTIUSER=true (multi-user manifests)
        # TokenReview: bearer token -> user name, or (user name, the token's audiences).
        self.tokens = dict(tokens or {})
        self.allowed = set(allowed)              # SubjectAccessReview: (user, namespace) allowed
        # KUBEFLOW_USERID_HEADER / _PREFIX as Kubeflow's pipeline-install-config sets them.
        self.userid_header, self.userid_prefix = userid_header, userid_prefix
        self.ids = itertools.count(1)
        self.pipelines: List[Dict[str, Any]] = []
        self.versions: List[Dict[str, Any]] = []       # each holds its uploaded spec
        self.experiments: List[Dict[str, Any]] = []
        self.recurring_runs: List[Dict[str, Any]] = []
        self.requests: List[Dict[str, Any]] = []       # method, path, query, body, headers

    def new_id(self, kind: str) -> str:
        return f'{kind}-{next(self.ids)}'

    def find(self, items, key, value, kind):
        for item in items:
            if item[key] == value:
                return item
        raise not_found(kind, value)  # the stores' Get*: NewResourceNotFoundError


def _uploaded_file(handler):
    """(filename, bytes) of the multipart/form-data part "uploadfile" (r.FormFile)."""
    boundary = handler.headers['Content-Type'].split('boundary=')[1].encode()
    body = handler.rfile.read(int(handler.headers['Content-Length']))
    for part in body.split(b'--' + boundary):
        found = re.search(rb'name="uploadfile"; filename="([^"]*)"', part)
        if found:
            return found.group(1).decode(), part.split(b'\r\n\r\n', 1)[1].rsplit(b'\r\n', 1)[0]
    raise LookupError('no uploadfile part')


class Handler(BaseHTTPRequestHandler):
    state: State = None

    def log_message(self, *args):  # keep test output quiet
        pass

    def _reply(self, payload, status=200, content_type='application/json'):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _identity(self) -> str:
        """auth/auth.go GetAuthenticators, in order: the user-id header (auth/util.go
        singlePrefixedHeaderFromMetadata: exactly one, with the prefix), then
        authenticator_token_review.go: "Authorization: Bearer <token>" through a TokenReview."""
        values = self.headers.get_all(self.state.userid_header) or []
        if len(values) == 1 and values[0].startswith(self.state.userid_prefix):
            return values[0][len(self.state.userid_prefix):]
        values = self.headers.get_all('Authorization') or []
        if len(values) != 1 or not values[0].startswith('Bearer '):
            return ''
        user = self.state.tokens.get(values[0][len('Bearer '):], ('', ()))
        user, audiences = (user, (TOKEN_AUDIENCE,)) if isinstance(user, str) else user
        # ensureAudience: the review must report TOKEN_REVIEW_AUDIENCE, so a token made for the
        # Kubernetes API (kubectl create token without --audience) authenticates no one.
        return user if TOKEN_AUDIENCE in audiences else ''

    def _authorize(self, namespace: str, verb: str, resource: str, name: str = ''):
        """resource/resource_manager.go IsAuthorized (skipped unless multi-user)."""
        if not self.state.multi_user:
            return
        user = self._identity()
        if not user:
            raise KfpError('Unauthenticated', 'Failed to check authorization. User identity is '
                           'empty in the request header')
        if (user, namespace) not in self.state.allowed:  # SubjectAccessReview not Allowed
            attributes = (f'&ResourceAttributes{{Namespace:{namespace},Verb:{verb},Group:'
                          f'pipelines.kubeflow.org,Version:v1beta1,Resource:{resource},'
                          f'Subresource:,Name:{name},FieldSelector:nil,LabelSelector:nil,}}')
            raise KfpError('PermissionDenied', f"User '{user}' is not authorized with reason:  "
                           f'(request: {attributes})')

    def _namespace(self, namespace: str) -> str:
        # resource_manager.go ReplaceNamespace: single-user mode drops any namespace.
        return namespace if self.state.multi_user else ''

    def _upload(self, path: str, query):
        """pipeline_upload_server.go uploadPipeline / uploadPipelineVersion."""
        state, arg = self.state, lambda key: query.get(key, [''])[0]
        is_version = path.endswith('upload_version')
        failure = ('Failed to create a pipeline version' if is_version
                   else 'Failed to create a pipeline and a pipeline version')
        try:
            try:
                filename, data = _uploaded_file(self)
            except LookupError:  # r.FormFile(FormFileKey) failed
                return self._upload_error(400, failure if is_version
                                          else 'Failed to read pipeline from file')
            # server/util.go ReadPipelineFile (zip and tarball packages not modelled)
            if not filename.endswith(('.yaml', '.yml', '.json')):
                return self._upload_error(400, failure if is_version
                                          else 'Failed to read a pipeline spec file')
            name = arg('name') or arg('display_name') or filename   # buildPipelineName
            if is_version:
                if not arg('pipelineid'):
                    return self._upload_error(400, failure)
                check_length('PipelineVersion', 'Name', name, 127)
                pipeline = next((p for p in state.pipelines
                                 if p['pipeline_id'] == arg('pipelineid')), None)
                if pipeline is None:  # FetchNamespaceFromPipelineId failed
                    return self._upload_error(400, failure)
                namespace, pipeline_id = pipeline.get('namespace', ''), pipeline['pipeline_id']
            else:
                check_length('Pipeline', 'Namespace', arg('namespace'), 63)
                namespace, pipeline_id = self._namespace(arg('namespace')), None
            try:  # canUploadVersionedPipeline: a shared pipeline (no namespace) is not checked
                if namespace:
                    self._authorize(namespace, 'create', 'pipelines')
            except KfpError:  # an authorization failure answers 400
                return self._upload_error(400, failure if is_version
                                          else 'Failed to create a pipeline')
            if not is_version:
                check_length('Pipeline', 'Name', name, 128)
        except KfpError as error:  # ValidateFieldLength's answers: http.Error, plain text
            return self._reply(f'{error.internal}\n'.encode(), 400, 'text/plain; charset=utf-8')
        try:  # resource_manager.go CreatePipelineAndPipelineVersion / CreatePipelineVersion
            spec, platform = parse_template(data)
            validate_pipeline_name(spec_name(spec))
        except KfpError as error:  # InvalidArgument: 400 with the external message
            return self._upload_error(400, error.external)
        stamp = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
        if not is_version:
            if any(p['name'] == name and p.get('namespace', '') == namespace
                   for p in state.pipelines):  # unique index namespace_name
                return self._upload_error(409, failure)
            pipeline = dict(pipeline_id=state.new_id('pipeline'), display_name=name, name=name,
                            created_at=stamp, **({'namespace': namespace} if namespace else {}))
            state.pipelines.append(pipeline)
            pipeline_id = pipeline['pipeline_id']
        elif any(v['pipeline_id'] == pipeline_id and v['name'] == name for v in state.versions):
            return self._upload_error(409, failure)  # unique index idx_pipelineid_name
        version = dict(pipeline_id=pipeline_id, pipeline_version_id=state.new_id('version'),
                       display_name=name, name=name, created_at=stamp,
                       pipeline_spec=stored_spec(spec, platform))
        state.versions.append(version)
        return self._reply(version if is_version else pipeline)

    def _upload_error(self, status: int, message: str):
        # writeErrorToResponse: apiv1beta1.Error as JSON; error_details is "%+v" of a
        # pkg/errors error, the message followed by a Go stack trace we do not imitate.
        self._reply({'error_message': message, 'error_details': message}, status)

    def _record(self, method: str, path: str, query, body):
        self.state.requests.append(dict(method=method, path=path, query=query, body=body, headers={
            key.lower(): value for key, value in self.headers.items()}))

    def _handle(self, method: str):
        url = urlparse(self.path)
        path, query = url.path[len(PREFIX):], parse_qs(url.query)
        if method == 'POST' and path in ('/pipelines/upload', '/pipelines/upload_version'):
            self._record(method, path, query, None)
            return self._upload(path, query)
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'{}') if length else None
        self._record(method, path, query, body)
        if (method, path) == ('GET', '/healthz'):  # main.go newHealthzResponse
            return self._reply({'commit_sha': 'unknown', 'tag_name': 'unknown',
                                'multi_user': self.state.multi_user,
                                'pipeline_store': 'database'})
        try:
            payload = route(self, method, path, query, body)  # fake_kfp_gateway.py
        except KfpError as error:
            # grpc-gateway DefaultHTTPErrorHandler: the status as JSON; its message is the
            # internal chain, details[0] the UserError's external message (util/error.go).
            code, status = HTTP_STATUS[error.code]
            return self._reply({'code': code, 'message': error.internal, 'details': [
                {'@type': _STATUS_TYPE, 'code': code, 'message': error.external}]}, status)
        if payload is None:
            return self._reply({'error': f'not implemented: {method} {self.path}'}, 404)
        return self._reply(payload)

    def do_GET(self):
        self._handle('GET')

    def do_POST(self):
        self._handle('POST')

    def do_DELETE(self):
        self._handle('DELETE')


def start(**settings):
    """Returns (server, state); the URL is f'http://127.0.0.1:{server.server_port}'.
    settings: State's (multi_user, tokens, allowed, userid_header, userid_prefix)."""
    state = State(**settings)
    handler = type('BoundHandler', (Handler,), {'state': state})
    server = ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, state
