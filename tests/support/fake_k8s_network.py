"""The fake cluster's pod network: each pod gets its own network namespace, an IP on a bridge,
and an /etc/hosts that stands in for cluster DNS. Test support only (fake_k8s_kubelet.py uses it).

Why namespaces: the Training Operator's TF_CONFIG (tensorflow.go genClusterSpec) names every
replica `<job>-worker-<i>.<ns>.svc:2222`, and TensorFlow's gRPC server listens on `*:<port>` of
its own task address. Local processes sharing one network could not all listen on 2222, and a
fake that rewrote TF_CONFIG to 127.0.0.1 ports would hand the pod a friendlier TF_CONFIG than a
cluster does. So a pod here sees exactly the operator's TF_CONFIG and resolves and reaches those
names as on a cluster:
- a "node" (one unprivileged user + network namespace per fake server, `unshare -r -n`) holds a
  bridge, as a CNI plugin's bridge on a node does;
- each pod sandbox is a pause process in its own network and mount namespace (what the kubelet's
  pause container holds), joined to the bridge by a veth pair, with 10.244.0.<n>/24;
- the containers of the pod run inside that sandbox (`nsenter`), with the sandbox's /etc/hosts:
  the kubelet's own lines plus one line per headless Service endpoint
  (`<svc>.<ns>.svc` and `.svc.cluster.local` -> the ready pod's IP), which is what CoreDNS
  answers for the operator's Services (pkg/controller.v1/common/service.go). TensorFlow's gRPC
  resolves names through getaddrinfo (TF builds gRPC without c-ares), so it reads this file.
Nothing is created in the host's network namespace; everything goes when the processes end.
Needs user namespaces (`unshare -r`) and iproute2; start() says so if they are missing.
"""
import os
import shutil
import subprocess
import threading
from typing import Dict

_BRIDGE = 'cni0'
_SUBNET = '10.244.0.'
# Every process of the fake node dies with the thread that started it (prctl PDEATHSIG), so a
# test run that is killed leaves no node, sandbox or container behind.
DIE_WITH_PARENT = ['setpriv', '--pdeathsig', 'SIGKILL', '--']


def _run(args, what: str) -> None:
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f'fake pod network: {what} failed: {done.stderr.strip()}')


class Node:
    """The node's network namespace and its bridge; sandboxes are created inside it."""

    def __init__(self, hosts_dir: str):
        for tool in ('unshare', 'nsenter', 'ip', 'mount', 'setpriv'):
            if not shutil.which(tool):
                raise RuntimeError(f'fake pod network needs `{tool}` (util-linux, iproute2)')
        self.hosts_dir = hosts_dir
        os.makedirs(hosts_dir, exist_ok=True)
        self._holder = subprocess.Popen(
            DIE_WITH_PARENT + ['unshare', '-r', '-n', 'sleep', 'infinity'],
            start_new_session=True, stderr=subprocess.PIPE)
        self._lock = threading.Lock()
        self._next = 2  # .1 is the bridge (the pods' gateway)
        self._enter = ['nsenter', '-t', str(self._holder.pid), '-U', '-n',
                       '--preserve-credentials']
        try:
            self._wait_unshared()
            _run(self._enter + ['sh', '-c', f'ip link set lo up && ip link add {_BRIDGE} type '
                                f'bridge && ip addr add {_SUBNET}1/24 dev {_BRIDGE} && '
                                f'ip link set {_BRIDGE} up'], 'the node bridge')
        except BaseException:
            self.shutdown()
            raise

    def _wait_unshared(self) -> None:
        for _ in range(200):
            if self._holder.poll() is not None:
                raise RuntimeError('fake pod network needs user namespaces (`unshare -r`): '
                                   + self._holder.stderr.read().decode().strip())
            with open(f'/proc/{self._holder.pid}/cmdline', 'rb') as handle:
                if handle.read().startswith(b'sleep\0'):  # unshared, then exec'd
                    return
            threading.Event().wait(0.01)
        raise RuntimeError('fake pod network: the node namespace did not appear')

    def sandbox(self, pod_uid: str) -> 'Sandbox':
        with self._lock:
            if self._next > 254:  # a /24 per node, as with the default podCIDR
                raise RuntimeError('fake pod network: the node\'s 10.244.0.0/24 is used up')
            ip, self._next = f'{_SUBNET}{self._next}', self._next + 1
        return Sandbox(self, pod_uid, ip)

    def shutdown(self) -> None:
        if self._holder.poll() is None:
            self._holder.kill()
        self._holder.wait()


class Sandbox:
    """A pod's network and mount namespaces, held by a pause process (kubelet RunPodSandbox)."""

    def __init__(self, node: Node, pod_uid: str, ip: str):
        self.ip, self.hosts = ip, os.path.join(node.hosts_dir, f'{pod_uid}.hosts')
        with open(self.hosts, 'w') as handle:
            handle.write('127.0.0.1\tlocalhost\n')
        self.pause = subprocess.Popen(
            DIE_WITH_PARENT + node._enter + ['unshare', '-n', '-m', '--propagation', 'private',
                           'sleep', 'infinity'], start_new_session=True)
        self._enter = ['nsenter', '-t', str(self.pause.pid), '-U', '-n', '-m',
                       '--preserve-credentials']
        veth = f'veth{ip.rsplit(".", 1)[1]}'
        try:
            for _ in range(500):  # nsenter, then unshare, then exec: wait for the exec
                with open(f'/proc/{self.pause.pid}/cmdline', 'rb') as handle:
                    if handle.read().startswith(b'sleep\0'):
                        break
                threading.Event().wait(0.01)
            else:
                raise RuntimeError('fake pod network: the pod sandbox did not start')
            _run(node._enter + ['sh', '-c', f'ip link add {veth} type veth peer name eth0 netns '
                                f'{self.pause.pid} && ip link set {veth} master {_BRIDGE} up'],
                 'the pod veth')
            _run(self._enter + ['sh', '-c', f'ip addr add {ip}/24 dev eth0 && ip link set eth0 '
                                f'up && ip link set lo up && mount --bind {self.hosts} '
                                f'/etc/hosts'], 'the pod interface')
        except BaseException:
            self.close()
            raise

    def write_hosts(self, own_name: str, services: Dict[str, str]) -> None:
        """kubelet's managed hosts file (localhost, the pod's own name) plus the DNS records."""
        lines = ['127.0.0.1\tlocalhost', f'{self.ip}\t{own_name}']
        lines += [f'{ip}\t{name}' for name, ip in sorted(services.items())]
        text = '\n'.join(lines) + '\n'
        with open(self.hosts, 'r+') as handle:  # in place: the bind mount holds this inode
            if handle.read() != text:
                handle.seek(0)
                handle.write(text)
                handle.truncate()

    def command(self, args, workdir: str):
        """args run as a container of this pod: its namespaces, the image's workdir."""
        return DIE_WITH_PARENT + self._enter + [f'--wd={workdir}', '--', *args]

    def close(self) -> None:
        if self.pause.poll() is None:
            self.pause.kill()
        self.pause.wait()
