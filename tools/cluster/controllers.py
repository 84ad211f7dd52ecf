"""The controllers the cluster tests need, run as host processes (their images cannot be pulled):
JobSet, Kubeflow Trainer, the Training Operator (TFJob) and Argo's workflow-controller, each built
from its pinned module in tools/<folder>/ (tools/controllers.mk) into .tools/controllers/.

Their manifests are their own, rendered from the module zip in Go's module cache with our kubectl's
kustomize, minus the Deployments (the binary runs instead). What a pod would have given the
process is given here:

- its network: a namespace kcl-<name> (netns.py) holding its Service's ClusterIP, pinned below so
  the namespace can be made before the Service exists, with the Service port redirected to the
  process's (443 -> 9443 for a webhook). Every listener keeps its upstream default port (health
  8081; metrics 8443, the Training Operator's 8080, Argo's 9090; webhooks 9443): each namespace
  has its own ports;
- its API access: the in-cluster kubeconfig (https://10.96.0.1:443, pki.py);
- its /tmp/k8s-webhook-server: a folder under .cluster/controllers/<name>/, bind-mounted there in
  the mount namespace `ip netns exec` makes for the process (and drops with it);
- its webhook serving certificate, which a kubelet would mount from a Secret. JobSet, Trainer and
  the Training Operator run open-policy-agent/cert-controller's rotator: it keeps a CA and a
  serving certificate in a Secret, patches the CA into the webhook configurations, and then waits
  for the kubelet to mount that Secret at /tmp/k8s-webhook-server/serving-certs (a path hard-coded
  in each, and controller-runtime's default webhook cert dir), not starting the controllers or
  webhooks until it is there. Nothing mounts Secrets for a host process, and the Training
  Operator's rotator cannot be turned off, so we issue the pair ourselves, in exactly the form the
  rotator accepts as valid (so it keeps it rather than replacing it), and put it in the Secret,
  in the webhook configurations' caBundle and in the process's /tmp/k8s-webhook-server.

Only that folder is mounted over, not all of /tmp: a checkout (and so .cluster/ and .tools/)
may itself live under /tmp, as a CI's clone does.
"""
import base64
import dataclasses
import json
import os
import secrets
import shutil
import subprocess
import tempfile
from typing import Callable, Dict, List, Optional, Tuple

import yaml

from tools.cluster import layout

# libyaml's parser and emitter (PyYAML's wheels have it): the CRDs are megabytes of YAML, which
# the pure-Python ones take tens of seconds over.
LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
DUMPER = getattr(yaml, 'CSafeDumper', yaml.SafeDumper)

SERVING_CERTS = 'tmp/k8s-webhook-server/serving-certs'   # under the controller's state folder
WEBHOOK_DIR = '/tmp/k8s-webhook-server'   # where the controllers look for SERVING_CERTS' folder


@dataclasses.dataclass(frozen=True)
class Service:
    """The Service whose ClusterIP the controller's namespace holds."""
    name: str
    cluster_ip: str    # static: the low end of the range, which the API server keeps for these
    port: int          # what clients (the API server, for a webhook) dial
    target_port: int   # what the process listens on; netns.redirect() when it differs


@dataclasses.dataclass(frozen=True)
class Rotator:
    """A cert-controller rotator's settings (the controller's pkg/.../cert.go)."""
    secret: str            # the Secret it keeps: ca.crt, ca.key, tls.crt, tls.key
    ca_name: str           # it accepts a CA only if the CA names this as a DNS name
    ca_organization: str


@dataclasses.dataclass(frozen=True)
class Controller:
    name: str              # its namespace is kcl-<name>, its files .cluster/controllers/<name>/
    binary: str            # in .tools/controllers/
    folder: str            # tools/<folder>/: the module that pins it
    module: str
    namespace: str         # the Kubernetes namespace it runs in, as upstream deploys it
    manifests: str         # the module's folder of kustomizations
    overlay: str           # the one built, under manifests
    service: Service
    rotator: Optional[Rotator] = None
    config: Optional[Tuple[str, str]] = None   # ConfigMap and key holding its --config file
    edit_config: Optional[Callable[[str], str]] = None   # that file, made right for one process
    flags: Tuple[str, ...] = ()
    env: Tuple[Tuple[str, str], ...] = ()
    without: Tuple[str, ...] = ()   # resources of the overlay left out
    # Our own kustomization, written at overlay when upstream has none we can build.
    kustomization: Optional[dict] = None


def _no_leader_election(text: str) -> str:
    config = yaml.safe_load(text)
    config['leaderElection']['leaderElect'] = False
    return yaml.safe_dump(config, sort_keys=False)


CONTROLLERS: Dict[str, Controller] = {c.name: c for c in (
    # JobSet: Trainer runs every TrainJob as a JobSet. config/default is its release install
    # (namespace jobset-system, names prefixed jobset-); Trainer's overlay would fetch the same
    # release from GitHub, which is not reachable.
    Controller(
        name='jobset', binary='jobset-manager', folder='jobset', module='sigs.k8s.io/jobset',
        namespace='jobset-system', manifests='config', overlay='default',
        service=Service('jobset-webhook-service', '10.96.0.21', 443, 9443),
        rotator=Rotator('jobset-webhook-server-cert', 'jobset-ca', 'jobset'),
        config=('jobset-manager-config', 'controller_manager_config.yaml'),
        # The flag overrides the file's leaderElect: true.
        flags=('--leader-elect=false', '--zap-log-level=2')),
    # Kubeflow Trainer v2: overlays/manager is its release install (kubeflow-system), less the
    # JobSet it fetches from GitHub (jobset above; the overlay says to leave it out when JobSet
    # is installed).
    Controller(
        name='trainer', binary='trainer-controller-manager', folder='trainer',
        module='github.com/kubeflow/trainer/v2', namespace='kubeflow-system',
        manifests='manifests', overlay='overlays/manager', without=('../../third-party/jobset',),
        service=Service('kubeflow-trainer-controller-manager', '10.96.0.20', 443, 9443),
        rotator=Rotator('kubeflow-trainer-webhook-cert', 'kubeflow-trainer-ca', 'kubeflow-trainer'),
        config=('kubeflow-trainer-config', 'controller_manager_config.yaml'),
        edit_config=_no_leader_election,   # it has no flag for it
        flags=('--zap-log-level=2',)),
    # The Training Operator (TFJob): overlays/standalone, in kubeflow. Its rotator reads its
    # namespace from MY_POD_NAMESPACE (else kubeflow); leader election is off by default.
    Controller(
        name='training-operator', binary='training-operator', folder='training-operator',
        module='github.com/kubeflow/training-operator', namespace='kubeflow',
        manifests='manifests', overlay='overlays/standalone',
        service=Service('training-operator', '10.96.0.22', 443, 9443),
        rotator=Rotator('training-operator-webhook-cert', 'training-operator-ca',
                        'training-operator'),
        env=(('MY_POD_NAMESPACE', 'kubeflow'),)),
    # Argo's workflow-controller as Kubeflow Pipelines 2.17 installs it
    # (manifests/kustomize/third-party/argo/installs/cluster, which fetches these same folders
    # from GitHub): the minimal CRDs, the cluster-wide RBAC and the controller, in kubeflow (the
    # namespace transformer moves the RBAC subjects there too, what KFP's patch does). It has no
    # webhook and its manifests no Service, but its namespace needs an address: it holds that of
    # the metrics Service Argo's docs/metrics.md describes, which render() adds, so that no other
    # Service is given the address. Stop it with SIGKILL: v4.0.5 catches SIGTERM only to flush
    # its start-up log, and goes on (util/logging/init.go).
    Controller(
        name='argo', binary='workflow-controller', folder='argo',
        module='github.com/argoproj/argo-workflows/v4', namespace='kubeflow',
        manifests='manifests', overlay='kcl',
        service=Service('workflow-controller-metrics', '10.96.0.23', 9090, 9090),
        flags=('--namespace=kubeflow',),
        # DEFAULT_REQUEUE_TIME: how soon a workflow is looked at again after a change; 10 s
        # by default, which adds 10-15 s to every task of a KFP run (a driver pod, then an
        # executor pod). Argo's own Makefile runs its controller with 1s for its tests.
        env=(('LEADER_ELECTION_DISABLE', 'true'), ('DEFAULT_REQUEUE_TIME', '1s')),
        kustomization={
            'apiVersion': 'kustomize.config.k8s.io/v1beta1', 'kind': 'Kustomization',
            'namespace': 'kubeflow',
            'resources': ['../base/crds/minimal',
                          '../cluster-install-no-crds/workflow-controller-rbac',
                          '../base/workflow-controller']}),
)}


def module_dir(controller: Controller, where: layout.Layout) -> str:
    """The module's folder in Go's module cache (downloaded if missing), at the version its
    tools/ module pins."""
    done = subprocess.run(['go', 'mod', 'download', '-json', controller.module],
                          cwd=os.path.join(where.root, 'tools', controller.folder),
                          capture_output=True, text=True)
    info = json.loads(done.stdout or '{}')
    if done.returncode or 'Dir' not in info:
        raise RuntimeError(f'go mod download {controller.module}: '
                           f'{info.get("Error") or done.stderr.strip()}')
    return info['Dir']


def _openssl(*args: str, cwd: str) -> None:
    done = subprocess.run(['openssl', *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f'openssl {args[0]}: {done.stderr.strip()}')


def _issue(controller: Controller, where: layout.Layout) -> Dict[str, bytes]:
    """The CA and webhook serving certificate, made once per cluster (kept under its state
    folder), as cert-controller's rotator makes them: keys in PKCS#1 (it parses the CA's so), the
    CA naming the rotator's CAName as its DNS name (validCACert checks it), the serving
    certificate <service>.<namespace>.svc for server auth (validServerCert). Ten years: the
    rotator replaces a pair only within 90 days of its end."""
    rotator, folder = controller.rotator, where.path('controllers', controller.name)
    certs = os.path.join(folder, SERVING_CERTS)
    files = {'ca.crt': os.path.join(folder, 'ca.crt'), 'ca.key': os.path.join(folder, 'ca.key'),
             'tls.crt': os.path.join(certs, 'tls.crt'), 'tls.key': os.path.join(certs, 'tls.key')}
    if not all(os.path.exists(path) for path in files.values()):
        os.makedirs(certs, exist_ok=True)
        dns = f'{controller.service.name}.{controller.namespace}.svc'
        with open(os.path.join(folder, 'ca.cnf'), 'w') as handle:
            handle.write(f"""[req]
distinguished_name = subject
prompt = no
[subject]
CN = {rotator.ca_name}
O = {rotator.ca_organization}
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, digitalSignature, keyEncipherment, keyCertSign
subjectAltName = DNS:{rotator.ca_name}
""")
        with open(os.path.join(folder, 'serving.ext'), 'w') as handle:
            handle.write(f"""basicConstraints = CA:FALSE
keyUsage = digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:{dns}, DNS:{dns}.{layout.CLUSTER_DOMAIN}
""")
        for key in ('ca.key', 'tls.key'):
            _openssl('genrsa', '-traditional', '-out', files[key], '2048', cwd=folder)
        _openssl('req', '-x509', '-new', '-key', 'ca.key', '-config', 'ca.cnf', '-extensions',
                 'ca', '-days', '3650', '-out', 'ca.crt', cwd=folder)
        _openssl('req', '-new', '-key', files['tls.key'], '-subj', f'/CN={dns}', '-out',
                 'serving.csr', cwd=folder)
        _openssl('x509', '-req', '-in', 'serving.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key',
                 '-set_serial', str(secrets.randbits(62) + 1), '-days', '3650', '-extfile',
                 'serving.ext', '-out', files['tls.crt'], cwd=folder)
        for scratch in ('ca.cnf', 'serving.ext', 'serving.csr'):
            os.remove(os.path.join(folder, scratch))
    pair = {}
    for key, path in files.items():
        with open(path, 'rb') as handle:
            pair[key] = handle.read()
    return pair


def _kustomize(controller: Controller, where: layout.Layout) -> List[dict]:
    """kubectl kustomize on a scratch copy of the module's manifests (the module cache is
    read-only)."""
    with tempfile.TemporaryDirectory(prefix='kcl-manifests-') as scratch:
        tree = os.path.join(scratch, 'manifests')
        shutil.copytree(os.path.join(module_dir(controller, where), controller.manifests), tree)
        for folder, _, _ in os.walk(tree):
            os.chmod(folder, 0o755)
        overlay = os.path.join(tree, controller.overlay)
        path = os.path.join(overlay, 'kustomization.yaml')
        if controller.kustomization:
            os.makedirs(overlay, exist_ok=True)
            kustomization = controller.kustomization
        else:
            with open(path) as handle:
                kustomization = yaml.safe_load(handle)
            kustomization['resources'] = [r for r in kustomization['resources']
                                          if r not in controller.without]
            os.chmod(path, 0o644)
        with open(path, 'w') as handle:
            yaml.safe_dump(kustomization, handle)
        done = subprocess.run([where.kube_binary('kubectl'), 'kustomize', overlay],
                              capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f'kubectl kustomize ({controller.name}): {done.stderr.strip()}')
    return [doc for doc in yaml.load_all(done.stdout, Loader=LOADER) if doc]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _client_configs(doc: dict) -> List[dict]:
    """The webhook clientConfigs of a webhook configuration or a CRD's conversion."""
    if doc['kind'] in ('ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration'):
        return [hook['clientConfig'] for hook in doc.get('webhooks', [])]
    if doc['kind'] == 'CustomResourceDefinition':
        webhook = doc['spec'].get('conversion', {}).get('webhook')
        return [webhook['clientConfig']] if webhook else []
    return []


def render(name: str, where: layout.Layout = layout.Layout()) -> List[dict]:
    """The controller's manifests, ready to apply: its own, without the Deployment, with its
    Service's ClusterIP pinned, its serving CA in every webhook pointing at that Service (the
    rotator would patch it in too; here it is right from the start), the cert Secret filled and
    its configuration edited for one process. Issues the certificate pair on first use."""
    controller = CONTROLLERS[name]
    docs = [d for d in _kustomize(controller, where) if d['kind'] != 'Deployment']
    if not any(d['kind'] == 'Namespace' and d['metadata']['name'] == controller.namespace
               for d in docs):
        docs.insert(0, {'apiVersion': 'v1', 'kind': 'Namespace',
                        'metadata': {'name': controller.namespace}})
    service = controller.service
    if not any(d['kind'] == 'Service' and d['metadata']['name'] == service.name for d in docs):
        docs.append({'apiVersion': 'v1', 'kind': 'Service',
                     'metadata': {'name': service.name, 'namespace': controller.namespace},
                     'spec': {'ports': [{'name': 'metrics', 'port': service.port,
                                         'targetPort': service.target_port}]}})
    pair = _issue(controller, where) if controller.rotator else {}
    for doc in docs:
        meta = doc['metadata']
        if doc['kind'] == 'Service' and meta['name'] == service.name:
            doc['spec']['clusterIP'] = service.cluster_ip
        for client in _client_configs(doc):
            if pair and client.get('service', {}).get('name') == service.name:
                client['caBundle'] = _b64(pair['ca.crt'])
        if doc['kind'] == 'Secret' and controller.rotator and \
                meta['name'] == controller.rotator.secret:
            doc['data'] = {key: _b64(value) for key, value in pair.items()}
        if doc['kind'] == 'ConfigMap' and controller.edit_config and \
                meta['name'] == controller.config[0]:
            key = controller.config[1]
            doc['data'][key] = controller.edit_config(doc['data'][key])
    if controller.rotator and not any(d['kind'] == 'Secret' and
                                      d['metadata']['name'] == controller.rotator.secret
                                      for d in docs):
        raise RuntimeError(f'{name}: no Secret {controller.rotator.secret} in its manifests')
    return docs


def write(name: str, path: str, where: layout.Layout = layout.Layout()) -> List[dict]:
    """render() as one multi-document YAML file at path. Apply it server-side (kubectl apply
    --server-side): most of these CRDs are over the 256 KiB that client-side apply's
    last-applied annotation may hold."""
    docs = render(name, where)
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    with open(path, 'w') as handle:
        yaml.dump_all(docs, handle, Dumper=DUMPER, sort_keys=False)
    return docs


def command(name: str, docs: List[dict], where: layout.Layout = layout.Layout()
            ) -> Tuple[List[str], Dict[str, str]]:
    """The argv and environment that run the controller (docs: its render()), to be started
    inside its namespace (netns.spawn). Writes its configuration file from its ConfigMap and
    makes its webhook folder. argv begins with a shell that bind-mounts that folder at
    WEBHOOK_DIR: `ip netns exec` gives the process a mount namespace of its own, so the mount
    is its alone and goes with it (the empty mount point stays, for down() to remove)."""
    controller = CONTROLLERS[name]
    folder = where.path('controllers', name)
    webhook = os.path.join(folder, os.path.dirname(SERVING_CERTS))
    os.makedirs(webhook, exist_ok=True)
    flags = [f'--kubeconfig={where.path("kubeconfigs", "in-cluster.kubeconfig")}']
    if controller.config:
        config_map, key = controller.config
        data = next(d['data'][key] for d in docs
                    if d['kind'] == 'ConfigMap' and d['metadata']['name'] == config_map)
        config = os.path.join(folder, key)
        with open(config, 'w') as handle:
            handle.write(data)
        flags.append(f'--config={config}')
    argv = ['sh', '-c', f'mkdir -p {WEBHOOK_DIR} && mount --bind "$0" {WEBHOOK_DIR} && exec "$@"',
            webhook,
            os.path.join(where.tools, 'controllers', controller.binary), *flags,
            *controller.flags]
    return argv, dict(controller.env)
