"""The controllers on the running control plane: their manifests (controllers.py) applied in the
order their CRDs depend on each other (Trainer watches JobSets), then each controller started in
its own namespace holding its Service's address, all side by side; then the project's Trainer
runtime, applied as users apply it, which Trainer's webhook validates."""
import os
import socket
import subprocess
import time
from typing import Callable

from tools.cluster import control_plane, controllers, layout, netns
from tools.cluster.state import State

ORDER = ('jobset', 'trainer', 'training-operator', 'argo')
RUNTIME = os.path.join(layout.REPO, 'deploy', 'tensorflow-runtime.yaml')


def kubectl(where: layout.Layout, *args: str) -> str:
    done = subprocess.run([where.kube_binary('kubectl'), '--kubeconfig', where.kubeconfig, *args],
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise RuntimeError(f'kubectl {" ".join(args)}: {done.stderr.strip()[-2000:]}')
    return done.stdout


def _listening(address: str, port: int) -> bool:
    with socket.create_connection((address, port), timeout=1):
        return True


def reserve_dns_address(where: layout.Layout) -> None:
    """The kube-dns Service, as clusters have it: it keeps CoreDNS's address from being given
    to another Service."""
    path = where.path('manifests', 'kube-dns.yaml')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(f"""apiVersion: v1
kind: Service
metadata: {{name: kube-dns, namespace: kube-system, labels: {{k8s-app: kube-dns}}}}
spec:
  clusterIP: {layout.DNS_SERVICE_IP}
  ports:
  - {{name: dns, port: 53, protocol: UDP}}
  - {{name: dns-tcp, port: 53, protocol: TCP}}
""")
    kubectl(where, 'apply', '-f', path)


def start_all(where: layout.Layout, state: State, say: Callable[[str], None]) -> None:
    """Every controller's manifests applied (in ORDER, in one call) and their CRDs
    established; then the four controllers started at once, each waited for until its
    Service's port answers. A controller needs the CRDs it watches served (Trainer: JobSet's),
    not another controller's process, so they start side by side."""
    started = time.monotonic()
    docs, paths = {}, []
    for name in ORDER:
        paths.append(where.path('manifests', f'{name}.yaml'))
        docs[name] = controllers.write(name, paths[-1], where)
    # Server-side: most of these CRDs exceed the 256 KiB client-side apply's annotation holds.
    kubectl(where, 'apply', '--server-side', '--force-conflicts',
            *[arg for path in paths for arg in ('-f', path)])
    # A controller started before its CRDs are served fails its start-up ("no matches for kind
    # TrainJob", seen once in ten ups): wait until the API server has established them.
    crds = [f'crd/{d["metadata"]["name"]}' for name in ORDER for d in docs[name]
            if d.get('kind') == 'CustomResourceDefinition']
    kubectl(where, 'wait', '--for', 'condition=Established', '--timeout', '60s', *crds)
    say(f'{"manifests applied":<24} {len(crds)} CRDs established in '
        f'{time.monotonic() - started:4.1f} s')
    pids = {name: _spawn(where, state, name, docs[name]) for name in ORDER}
    for name in ORDER:
        service = controllers.CONTROLLERS[name].service
        control_plane.wait(name, lambda: _listening(service.cluster_ip, service.port), 120,
                           os.path.join(where.log_dir, f'{name}.log'))
        say(f'{name:<24} pid {pids[name]:<7} ready in {time.monotonic() - started:4.1f} s '
            f'({service.cluster_ip}:{service.port})')


def _spawn(where: layout.Layout, state: State, name: str, docs: list) -> int:
    service = controllers.CONTROLLERS[name].service
    space = netns.create(state, name, service.cluster_ip)
    if service.port != service.target_port:
        netns.redirect(space, service.port, service.target_port)
    argv, env = controllers.command(name, docs, where)
    log = os.path.join(where.log_dir, f'{name}.log')
    return netns.spawn(state, name, argv, log, namespace=space, env=env)


def apply_runtime(where: layout.Layout, say: Callable[[str], None]) -> None:
    """deploy/tensorflow-runtime.yaml, as docs/kubeflow.md tells users to apply it. Trainer's
    webhook may answer a moment after it listens: retried for a few seconds."""
    deadline = time.monotonic() + 30
    while True:
        try:
            kubectl(where, 'apply', '-f', RUNTIME)
            break
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    say(f'{"runtime applied":<24} {os.path.relpath(RUNTIME, where.root)}')
