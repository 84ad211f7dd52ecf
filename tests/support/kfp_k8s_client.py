"""The Kubernetes reads of KFP's driver and launcher (client-go), transcribed: where the
configuration comes from and the GETs they make.

- rest.InClusterConfig(): KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the service
  account's token and ca.crt under /var/run/secrets/kubernetes.io/serviceaccount, https;
- util.GetKubernetesConfig() (backend/src/common/util/service.go): in-cluster first, else a
  kubeconfig (KUBECONFIG, else ~/.kube/config: current context's server, CA, token or client
  certificate), the error joining both failures;
- the GETs: ConfigMap `kfp-launcher` (config.FromConfigMap: NotFound means defaults), the pod
  (launcher_v2.go retryIndexFromPodAnnotation), a Secret (objectstore getS3BucketCredential),
  an Argo Workflow (driver/main.go getCurrentWorkflowMetadata).
Test support only.
"""
import base64
import json
import os
import ssl
import tempfile
import urllib.error
import urllib.request
from typing import Optional

SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount'


class K8sError(RuntimeError):
    """A Kubernetes call failed; `status` is the HTTP status when the API answered."""

    def __init__(self, message: str, status: Optional[int] = None, reason: str = ''):
        super().__init__(message)
        self.status, self.reason = status, reason

    @property
    def not_found(self) -> bool:
        """k8s.io/apimachinery errors.IsNotFound."""
        return self.status == 404 and self.reason in ('NotFound', '')


class Client:
    """A rest.Config's server, TLS and bearer token; `get(path)` is one typed GET."""

    def __init__(self, server: str, ca_file: Optional[str] = None, token: str = '',
                 insecure: bool = False, cert: Optional[tuple] = None):
        self.server = server.rstrip('/')
        self.token = token
        if server.startswith('https://'):
            self._ssl = ssl.create_default_context(cafile=ca_file) if ca_file else \
                ssl.create_default_context()
            if insecure:
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl.CERT_NONE
            if cert:
                self._ssl.load_cert_chain(*cert)
        else:
            self._ssl = None

    def get(self, path: str) -> dict:
        request = urllib.request.Request(self.server + path, headers={
            'Accept': 'application/json', **({'Authorization': f'Bearer {self.token}'}
                                             if self.token else {})})
        try:
            with urllib.request.urlopen(request, context=self._ssl, timeout=30) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as error:
            try:
                status = json.loads(error.read())
            except ValueError:
                status = {}
            raise K8sError(status.get('message') or f'the server returned {error.code}',
                           error.code, status.get('reason', ''))
        except (urllib.error.URLError, OSError) as error:
            raise K8sError(f'Get "{self.server + path}": {error}')

    # --- the reads -----------------------------------------------------------------------------
    def config_map(self, namespace: str, name: str) -> dict:
        return self.get(f'/api/v1/namespaces/{namespace}/configmaps/{name}')

    def pod(self, namespace: str, name: str) -> dict:
        return self.get(f'/api/v1/namespaces/{namespace}/pods/{name}')

    def secret(self, namespace: str, name: str) -> dict:
        return self.get(f'/api/v1/namespaces/{namespace}/secrets/{name}')

    def workflow(self, namespace: str, name: str) -> dict:
        return self.get(f'/apis/argoproj.io/v1alpha1/namespaces/{namespace}/workflows/{name}')


def in_cluster() -> Client:
    """rest.InClusterConfig()."""
    host = os.environ.get('KUBERNETES_SERVICE_HOST', '')
    port = os.environ.get('KUBERNETES_SERVICE_PORT', '')
    if not host or not port:
        raise K8sError('unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and '
                       'KUBERNETES_SERVICE_PORT must be defined')
    try:
        with open(f'{SERVICE_ACCOUNT}/token') as handle:
            token = handle.read()
    except OSError as error:
        raise K8sError(f'open {SERVICE_ACCOUNT}/token: {error.strerror.lower()}')
    ca_file = f'{SERVICE_ACCOUNT}/ca.crt'
    if ':' in host:  # net.JoinHostPort
        host = f'[{host}]'
    return Client(f'https://{host}:{port}', ca_file if os.path.exists(ca_file) else None, token)


def _from_kubeconfig() -> Client:
    """clientcmd's default loading rules, the current context only."""
    import yaml  # pylint: disable=import-outside-toplevel
    paths = [p for p in os.environ.get('KUBECONFIG', '').split(os.pathsep) if p] or \
        [os.path.expanduser('~/.kube/config')]
    config = None
    for path in paths:
        if os.path.exists(path):
            with open(path) as handle:
                config = yaml.safe_load(handle)
            break
    if not config:
        raise K8sError('invalid configuration: no configuration has been provided, try setting '
                       'KUBERNETES_MASTER environment variable')
    context_name = config.get('current-context', '')
    context = next((c['context'] for c in config.get('contexts', [])
                    if c['name'] == context_name), {})
    cluster = next((c['cluster'] for c in config.get('clusters', [])
                    if c['name'] == context.get('cluster')), None)
    user = next((u['user'] for u in config.get('users', [])
                 if u['name'] == context.get('user')), {}) or {}
    if cluster is None:
        raise K8sError('invalid configuration: no configuration has been provided, try setting '
                       'KUBERNETES_MASTER environment variable')

    def materialise(data_key, file_key, source):
        if source.get(data_key):
            handle = tempfile.NamedTemporaryFile(delete=False, suffix='.pem')
            handle.write(base64.b64decode(source[data_key]))
            handle.close()
            return handle.name
        return source.get(file_key)
    cert = None
    if user.get('client-certificate') or user.get('client-certificate-data'):
        cert = (materialise('client-certificate-data', 'client-certificate', user),
                materialise('client-key-data', 'client-key', user))
    return Client(cluster['server'],
                  materialise('certificate-authority-data', 'certificate-authority', cluster),
                  user.get('token', ''), bool(cluster.get('insecure-skip-tls-verify')), cert)


def kubernetes_config() -> Client:
    """util.GetKubernetesConfig(): in-cluster, else the kubeconfig; "%w; %w" of both errors."""
    try:
        return in_cluster()
    except K8sError as in_cluster_error:
        try:
            return _from_kubeconfig()
        except K8sError as kubeconfig_error:
            raise K8sError(f'{in_cluster_error}; {kubeconfig_error}')


def in_pod_namespace() -> str:
    """config.InPodNamespace(): the namespace file's content, as is."""
    path = f'{SERVICE_ACCOUNT}/namespace'
    try:
        with open(path) as handle:
            return handle.read()
    except OSError as error:
        raise K8sError(f'failed to get namespace in Pod: open {path}: '
                       f'{(error.strerror or str(error)).lower()}')
