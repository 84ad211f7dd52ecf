"""A small HTTPS Kubernetes API: the calls KFP's driver and launcher make from inside a pod.

KFP 2.17.0's programs read, with client-go's typed clientset (JSON), in their own namespace:
- the `kfp-launcher` ConfigMap (backend/src/v2/config/env.go FromConfigMap: NotFound means
  defaults);
- a Secret named by a bucket's session (backend/src/v2/objectstore/object_store.go
  getS3BucketCredential / createMinioBucketCredential, e.g. `mlpipeline-minio-artifact`);
- the pod they run in (component/launcher_v2.go retryIndexFromPodAnnotation: the Argo annotation
  `workflows.argoproj.io/node-name`; driver/k8s.go for Kubernetes platform tasks).
Anything else answers what the API server answers for a path it does not serve: 404 with a
`Status` body. A request without the service account's bearer token gets 401, as the API server's
authenticator answers (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters
errors.go / apiserver's Unauthorized Status). A missing object is the `Status` of
apimachinery/pkg/api/errors/errors.go NewNotFound: `<resource> "<name>" not found`, reason
NotFound, details {name, kind: <resource>}, code 404 (what `k8errors.IsNotFound` tests).

Served over TLS with a certificate from a CA made for the run (openssl), so that a pod's
in-cluster configuration (client-go rest.InClusterConfig: KUBERNETES_SERVICE_HOST/PORT, and
/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}) verifies it as in a cluster.

    api = Server(folder, host='127.0.0.1', namespace='kubeflow')
    api.secrets['mlpipeline-minio-artifact'] = {'accesskey': '...', 'secretkey': '...'}
    api.config_maps['kfp-launcher'] = {'defaultPipelineRoot': 's3://...'}   # or absent
    api.pods['pod-name'] = pod_dict   # the workflow executor adds each pod it creates
    api.start(); api.service_account  # folder with token, ca.crt, namespace
"""
import base64
import copy
import ipaddress
import json
import os
import re
import secrets as secrets_lib
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_OBJECT = re.compile(r'^/api/v1/namespaces/([^/]+)/(configmaps|secrets|pods)/([^/?]+)$')


def status(code, reason, message, details=None):
    """A metav1.Status body, as the API server writes it."""
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
            'message': message, 'reason': reason, 'details': details or {}, 'code': code}


def not_found(resource, name):
    """apimachinery/pkg/api/errors/errors.go NewNotFound(qualifiedResource, name)."""
    return status(404, 'NotFound', f'{resource} "{name}" not found',
                  {'name': name, 'kind': resource})


def _run(*args):
    subprocess.run(args, check=True, capture_output=True)


def make_certificates(folder, host):
    """A CA and a server certificate for `host` (an IP or a name), signed by it. Returns the paths
    (ca.crt, server.crt, server.key)."""
    os.makedirs(folder, exist_ok=True)
    ca_key, ca_crt = os.path.join(folder, 'ca.key'), os.path.join(folder, 'ca.crt')
    key, csr, crt = (os.path.join(folder, n) for n in ('server.key', 'server.csr', 'server.crt'))
    _run('openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', ca_key,
         '-out', ca_crt, '-days', '2', '-subj', '/CN=kubernetes-ca',
         '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign')
    try:
        ipaddress.ip_address(host)
        san = f'IP:{host}'
    except ValueError:
        san = f'DNS:{host}'
    ext = os.path.join(folder, 'server.ext')
    with open(ext, 'w') as handle:
        handle.write(f'subjectAltName={san},DNS:kubernetes,DNS:kubernetes.default,'
                     'DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n'
                     'extendedKeyUsage=serverAuth\n')
    _run('openssl', 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr,
         '-subj', '/CN=kube-apiserver')
    _run('openssl', 'x509', '-req', '-in', csr, '-CA', ca_crt, '-CAkey', ca_key,
         '-CAcreateserial', '-out', crt, '-days', '2', '-extfile', ext)
    return ca_crt, crt, key


class Server:
    """The API on https://host:port; `requests` records (method, path, authorized)."""

    def __init__(self, folder, host='127.0.0.1', port=0, namespace='kubeflow'):
        self.folder = folder
        self.host = host
        self.namespace = namespace
        self.token = secrets_lib.token_hex(16)
        self.config_maps, self.secrets, self.pods = {}, {}, {}
        self.requests = []
        self._lock = threading.Lock()
        ca, crt, key = make_certificates(os.path.join(folder, 'pki'), host)
        self.ca_file = ca
        self.service_account = os.path.join(folder, 'serviceaccount')
        os.makedirs(self.service_account, exist_ok=True)
        for name, text in (('token', self.token), ('namespace', namespace),
                           ('ca.crt', open(ca).read())):
            with open(os.path.join(self.service_account, name), 'w') as handle:
                handle.write(text)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(crt, key)
        self._http = ThreadingHTTPServer((host, port), self._handler_class())
        self._http.daemon_threads = True
        self._http.socket = context.wrap_socket(self._http.socket, server_side=True)
        self.port = self._http.server_address[1]
        self._thread = None

    def env(self):
        """What the kubelet gives every container to reach the API (in-cluster config)."""
        return {'KUBERNETES_SERVICE_HOST': self.host, 'KUBERNETES_SERVICE_PORT': str(self.port),
                'KUBERNETES_SERVICE_PORT_HTTPS': str(self.port)}

    def _object(self, resource, namespace, name):
        if namespace != self.namespace:
            return None
        if resource == 'configmaps' and name in self.config_maps:
            return {'kind': 'ConfigMap', 'apiVersion': 'v1',
                    'metadata': {'name': name, 'namespace': namespace},
                    'data': dict(self.config_maps[name])}
        if resource == 'secrets' and name in self.secrets:
            # The API returns a Secret's data base64-encoded (core/v1 Secret.data is []byte).
            return {'kind': 'Secret', 'apiVersion': 'v1', 'type': 'Opaque',
                    'metadata': {'name': name, 'namespace': namespace},
                    'data': {k: base64.b64encode(v.encode()).decode()
                             for k, v in self.secrets[name].items()}}
        if resource == 'pods' and name in self.pods:
            return copy.deepcopy(self.pods[name])
        return None

    def answer(self, method, path, authorization):
        """(code, body) for one request."""
        authorized = authorization == f'Bearer {self.token}'
        with self._lock:
            self.requests.append((method, path, authorized))
        if not authorized:
            return 401, status(401, 'Unauthorized', 'Unauthorized')
        match = _OBJECT.match(path.split('?')[0])
        if method != 'GET' or not match:
            return 404, status(404, 'NotFound', 'the server could not find the requested resource')
        namespace, resource, name = match.groups()
        with self._lock:
            found = self._object(resource, namespace, name)
        if found is None:
            return 404, not_found(resource, name)
        return 200, found

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self):
                code, body = server.answer(self.command, self.path,
                                           self.headers.get('Authorization'))
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _reply

            def log_message(self, *args):
                pass
        return Handler

    def start(self):
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._http.shutdown()
        self._http.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
