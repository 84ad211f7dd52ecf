"""The node and its control plane, each a process of its own started by process id: containerd
(with runc and the CNI bridge), etcd, the API server, the controller manager, the scheduler and
the kubelet. Every listener is on 127.0.0.1 (layout.py)."""
import json
import os
import shutil
import ssl
import subprocess
import time
import urllib.request
from typing import Callable

from tools.cluster import binary_image, layout, netns, pki
from tools.cluster.state import State

CNI_BIN = '/usr/lib/cni'   # Debian's containernetworking-plugins


def _write(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    return path


def wait(what: str, ready: Callable[[], bool], seconds: float, log: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except Exception:   # not up yet: connection refused, a 500 while it starts, ...
            pass
        time.sleep(0.25)
    raise RuntimeError(f'{what} was not ready within {seconds:.0f} s; its log: {log}')


class ControlPlane:
    def __init__(self, where: layout.Layout, state: State, say: Callable[[str], None]):
        self.where, self.state, self.say = where, state, say
        self.pki = pki.Pki(where.path('pki'))

    def _start(self, name: str, argv, **kwargs) -> int:
        log = os.path.join(self.where.log_dir, f'{name}.log')
        started = time.monotonic()
        pid = netns.spawn(self.state, name, argv, log, **kwargs)
        self._started = (name, pid, started)
        return pid

    def _ready(self, what: str, check: Callable[[], bool], seconds: float = 60) -> None:
        name, pid, started = self._started
        wait(what, check, seconds, os.path.join(self.where.log_dir, f'{name}.log'))
        self.say(f'{what:<24} pid {pid:<7} ready in {time.monotonic() - started:4.1f} s')

    # --- the node's runtime ---------------------------------------------------------------
    def containerd(self) -> None:
        w = self.where
        # restrict_oom_score_adj: a sandbox asks for oom_score_adj -998, which this machine's
        # kernel refuses (runc then fails with "can't get final child's PID from pipe"); with
        # it, containerd never sets a score below its own.
        config = _write(w.path('containerd', 'config.toml'), f"""version = 2
root = "{w.containerd_root}"
state = "{w.path('containerd', 'state')}"
[grpc]
  address = "{w.containerd_socket}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{binary_image.PAUSE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{w.path('cni', 'net.d')}"
""")
        # The pods' bridge. No masquerade: nothing outside this machine is reachable anyway.
        _write(w.path('cni', 'net.d', '10-kcl.conflist'), json.dumps({
            'cniVersion': '1.0.0', 'name': 'kcl', 'plugins': [{
                'type': 'bridge', 'bridge': layout.BRIDGE, 'isGateway': True, 'ipMasq': False,
                'hairpinMode': True, 'ipam': {
                    'type': 'host-local', 'dataDir': w.path('cni', 'ipam'),
                    'ranges': [[{'subnet': layout.POD_CIDR}]],
                    'routes': [{'dst': '0.0.0.0/0'}]}}]}, indent=1))
        self.state.add('links', layout.BRIDGE)
        os.makedirs(os.path.dirname(w.containerd_socket), exist_ok=True)
        self._start('containerd', ['containerd', '--config', config])
        self._ready('containerd', lambda: os.path.exists(w.containerd_socket), 30)
        self.ctr('images', 'import', binary_image.pack(
            os.path.join(w.tools, 'pause'), w.path('pause.tar'), binary_image.PAUSE, 'pause',
            ['/pause']))
        self.ctr('images', 'import', binary_image.pack(
            os.path.join(w.tools, 'controllers', 'argoexec'), w.path('argoexec.tar'),
            binary_image.argoexec_name(os.path.join(w.root, 'tools', 'argo', 'go.mod')),
            'bin/argoexec', ['argoexec'], folders=('tmp',), user='8737'))
        self.forget_containers()

    def forget_containers(self) -> None:
        """Removes the containers (and their writable layers) an earlier cluster left in the
        kept root (layout.IMAGE_STORE): their pods are gone with that cluster's etcd, and their
        tasks with its state folder. Images stay."""
        names = self.ctr('containers', 'list', '--quiet').split()
        for name in names:
            self.ctr('containers', 'delete', name)
        if names:
            self.say(f'removed {len(names)} containers an earlier cluster left')

    def ctr(self, *args: str) -> str:
        done = subprocess.run(['ctr', '--address', self.where.containerd_socket, '-n', 'k8s.io',
                               *args], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f'ctr {" ".join(args)}: {done.stderr.strip()}')
        return done.stdout

    # --- the control plane ----------------------------------------------------------------
    def certificates(self) -> None:
        pki.make(self.pki.folder, self.where.path('kubeconfigs'))
        shutil.copyfile(self.where.path('kubeconfigs', 'admin.kubeconfig'),
                        self.where.kubeconfig)

    def etcd(self) -> None:
        client = f'http://127.0.0.1:{layout.ETCD_CLIENT_PORT}'
        peer = f'http://127.0.0.1:{layout.ETCD_PEER_PORT}'
        self._start('etcd', ['etcd', '--name', 'kcl', '--data-dir', self.where.path('etcd'),
                             '--listen-client-urls', client, '--advertise-client-urls', client,
                             '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
                             '--initial-cluster', f'kcl={peer}'])
        self._ready('etcd', lambda: urllib.request.urlopen(client + '/health', timeout=2)
                    .status == 200)

    def _api_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.pki.file('ca.crt'))
        context.load_cert_chain(self.pki.file('admin.crt'), self.pki.file('admin.key'))
        return context

    def get(self, path: str) -> bytes:
        url = f'https://127.0.0.1:{layout.API_PORT}{path}'
        with urllib.request.urlopen(url, context=self._api_context(), timeout=5) as answer:
            return answer.read()

    def apiserver(self) -> None:
        f = self.pki.file
        self._start('kube-apiserver', [
            self.where.kube_binary('kube-apiserver'),
            f'--etcd-servers=http://127.0.0.1:{layout.ETCD_CLIENT_PORT}',
            '--bind-address=127.0.0.1', f'--secure-port={layout.API_PORT}',
            # Loopback is refused as the `kubernetes` Service's endpoint, and no endpoint is
            # needed: the gateway namespace holds the Service's address itself (layout.py).
            f'--advertise-address={layout.API_SERVICE_IP}', '--endpoint-reconciler-type=none',
            f'--service-cluster-ip-range={layout.SERVICE_CIDR}',
            f'--tls-cert-file={f("apiserver.crt")}', f'--tls-private-key-file={f("apiserver.key")}',
            f'--client-ca-file={f("ca.crt")}',
            f'--kubelet-client-certificate={f("apiserver-kubelet-client.crt")}',
            f'--kubelet-client-key={f("apiserver-kubelet-client.key")}',
            '--kubelet-preferred-address-types=Hostname',
            f'--service-account-issuer=https://kubernetes.default.svc.{layout.CLUSTER_DOMAIN}',
            f'--service-account-key-file={f("sa.pub")}',
            f'--service-account-signing-key-file={f("sa.key")}',
            '--authorization-mode=Node,RBAC', '--allow-privileged=true', '--profiling=false'])
        self._ready('kube-apiserver', lambda: self.get('/readyz') == b'ok', 90)

    def controller_manager(self) -> None:
        kubeconfig = self.where.path('kubeconfigs', 'controller-manager.kubeconfig')
        self._start('kube-controller-manager', [
            self.where.kube_binary('kube-controller-manager'), f'--kubeconfig={kubeconfig}',
            f'--authentication-kubeconfig={kubeconfig}',
            f'--authorization-kubeconfig={kubeconfig}',
            '--bind-address=127.0.0.1', '--leader-elect=false',
            f'--service-account-private-key-file={self.pki.file("sa.key")}',
            f'--root-ca-file={self.pki.file("ca.crt")}', '--use-service-account-credentials',
            f'--cluster-signing-cert-file={self.pki.file("ca.crt")}',
            f'--cluster-signing-key-file={self.pki.file("ca.key")}'])
        # Ready when it has made the default namespace's service account (tokens work).
        self._ready('kube-controller-manager',
                    lambda: bool(self.get('/api/v1/namespaces/default/serviceaccounts/default')))

    def scheduler(self) -> None:
        kubeconfig = self.where.path('kubeconfigs', 'scheduler.kubeconfig')
        self._start('kube-scheduler', [
            self.where.kube_binary('kube-scheduler'), f'--kubeconfig={kubeconfig}',
            f'--authentication-kubeconfig={kubeconfig}',
            f'--authorization-kubeconfig={kubeconfig}',
            '--bind-address=127.0.0.1', '--leader-elect=false'])
        url = 'https://127.0.0.1:10259/readyz'
        context = ssl._create_unverified_context()   # its self-signed serving certificate
        self._ready('kube-scheduler',
                    lambda: urllib.request.urlopen(url, context=context, timeout=2).status == 200)

    def kubelet(self) -> None:
        w = self.where
        config = _write(w.path('kubelet', 'config.yaml'), json.dumps({
            'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration',
            'address': '127.0.0.1', 'healthzBindAddress': '127.0.0.1', 'readOnlyPort': 0,
            # cgroup v1 here (hybrid hierarchy) and no systemd: kubelet 1.33 still accepts both.
            'cgroupDriver': 'cgroupfs', 'failSwapOn': False,
            'containerRuntimeEndpoint': f'unix://{w.containerd_socket}',
            'authentication': {'anonymous': {'enabled': False}, 'webhook': {'enabled': True},
                               'x509': {'clientCAFile': self.pki.file('ca.crt')}},
            'authorization': {'mode': 'Webhook'},
            'clusterDNS': [layout.DNS_SERVICE_IP], 'clusterDomain': layout.CLUSTER_DOMAIN,
            'podLogsDir': w.path('pod-logs'),
            # A test machine's disk is shared with caches: evict only when it is truly full.
            'evictionHard': {'memory.available': '100Mi', 'nodefs.available': '1%',
                             'imagefs.available': '1%', 'nodefs.inodesFree': '1%'},
            'imageGCHighThresholdPercent': 100, 'imageGCLowThresholdPercent': 99,
            'serializeImagePulls': False}, indent=1))
        self._start('kubelet', [
            w.kube_binary('kubelet'), f'--config={config}',
            f'--kubeconfig={w.path("kubeconfigs", "kubelet.kubeconfig")}',
            f'--hostname-override={layout.NODE}', f'--root-dir={w.path("kubelet", "root")}',
            f'--cert-dir={w.path("kubelet", "pki")}'])

        def node_ready() -> bool:
            node = json.loads(self.get(f'/api/v1/nodes/{layout.NODE}'))
            return any(c['type'] == 'Ready' and c['status'] == 'True'
                       for c in node['status']['conditions'])
        self._ready('kubelet (node Ready)', node_ready, 120)
