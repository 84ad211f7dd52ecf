"""The real single-node Kubernetes (tools/cluster/, `make cluster`) as the cluster tests use it:
its kubeconfig, a namespace of a test's own, and the tests' SeaweedFS made reachable from pods.

The cluster is brought up once by `make test` (or `make cluster`) and stopped after pytest: the
two pytest-xdist workers share it. `make test` starts it beside pytest (collection and the first
tests need no cluster) and names its `up` process in CLUSTER_UP_PID: a cluster test waits for
that process to finish bringing it up. A cluster test run without it fails, saying so.
"""
import json
import os
import subprocess
import sys
import time
import uuid
from typing import Dict, List, Optional

from tools.cluster import cluster, layout

WHERE = layout.Layout()
GATEWAY_NETNS = layout.NETNS_PREFIX + cluster.GATEWAY


UP_SECONDS = 600   # a cold `up` takes about 40 s here; a bound, so that a stuck one fails
UP_LOG = '.tools/cluster-up.log'   # where make test's `up` prints (the Makefile's UP_LOG)


def kubeconfig() -> str:
    coming = int(os.environ.get('CLUSTER_UP_PID') or 0)   # make test's `up`, still at work
    deadline = time.monotonic() + UP_SECONDS
    while not cluster.running(WHERE):
        if not coming or not cluster.alive(coming):
            raise RuntimeError(
                'the real cluster is not running: `make cluster` starts it (make test does, '
                f'beside pytest; what its `up` printed: {UP_LOG}); '
                'docs/testing.md "The real cluster"')
        if time.monotonic() > deadline:
            raise RuntimeError(f'the real cluster did not come up within {UP_SECONDS} s (its '
                               f'`up`, pid {coming}, is still at work: {UP_LOG})')
        time.sleep(0.5)
    return WHERE.kubeconfig


def kubectl(*args: str, stdin: Optional[str] = None, check: bool = True) -> str:
    done = subprocess.run([WHERE.kube_binary('kubectl'), '--kubeconfig', kubeconfig(), *args],
                          input=stdin, capture_output=True, text=True, timeout=120)
    if check and done.returncode:
        raise RuntimeError(f'kubectl {" ".join(args)}: {done.stderr.strip()}')
    return done.stdout + (done.stderr if not check else '')


def get(*args: str) -> Dict:
    return json.loads(kubectl('get', *args, '-o', 'json'))


class Namespace:
    """A namespace of the test's own, deleted at the end with everything in it."""

    def __init__(self, prefix: str = 't'):
        self.name = f'{prefix}-{uuid.uuid4().hex[:8]}'
        kubectl('create', 'namespace', self.name)
        # The namespace's default service account is made by the controller manager shortly
        # after; a pod created before it is refused.
        deadline = time.monotonic() + 30
        while not kubectl('get', 'serviceaccount', 'default', '-n', self.name,
                          '--ignore-not-found'):
            if time.monotonic() > deadline:
                raise RuntimeError(f'namespace {self.name}: no default service account after 30 s')
            time.sleep(0.2)

    def secret(self, name: str, values: Dict[str, str]) -> None:
        kubectl('create', 'secret', 'generic', name, '-n', self.name,
                *[f'--from-literal={k}={v}' for k, v in values.items()])

    def pods(self, selector: str = '') -> List[Dict]:
        return get('pods', '-n', self.name, *(['-l', selector] if selector else []))['items']

    def delete(self) -> None:
        kubectl('delete', 'namespace', self.name, '--wait=false', check=False)


class PodReachable:
    """A host loopback service (the tests' SeaweedFS, KFP's services) reachable from pods at
    the API gateway's address, on its own port or on listen_port: a relay listening there inside
    the gateway namespace (tools/cluster/relay.py). The host reaches that address too (its route
    goes to the namespace), so one endpoint serves the test process and the pods alike."""

    def __init__(self, port: int, listen_port: Optional[int] = None):
        self.endpoint = f'{layout.API_SERVICE_IP}:{listen_port or port}'
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'tools.cluster.relay', GATEWAY_NETNS, self.endpoint,
             f'127.0.0.1:{port}'], cwd=WHERE.root, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith('relaying'):
            self.stop()
            raise RuntimeError(f'the relay to 127.0.0.1:{port} did not start: {line!r}')

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def ca_certificate() -> str:
    """The cluster's CA, which signed the API server's certificate (a pod's ca.crt)."""
    with open(WHERE.path('pki', 'ca.crt')) as handle:
        return handle.read()


def image() -> str:
    """The project's image as the kubelet's containerd has it (tools/cluster/image.py)."""
    from tools.cluster import image as image_lib
    return image_lib.import_into(WHERE.containerd_socket)


def kill_container(pod: Dict, container: str) -> str:
    """SIGKILLs a pod's container's processes through the node's containerd, as the kernel's
    OOM killer or a hard stop would: the container exits 137, the pod (restartPolicy Never)
    fails. Returns ctr's complaint, '' when it worked."""
    [status] = [c for c in pod['status']['containerStatuses'] if c['name'] == container]
    container_id = status['containerID'].split('://', 1)[1]
    done = subprocess.run(['ctr', '--address', WHERE.containerd_socket, '-n', 'k8s.io', 'tasks',
                           'kill', '--all', '--signal', 'SIGKILL', container_id],
                          capture_output=True, text=True)
    return done.stderr.strip()


STORE_SECRET = 'store'   # the namespace's Secret with the bucket's keys (conftest pod_bucket)


def worker_spec(image: str, pod_s3: PodReachable, **overrides):
    """Two small training workers (the node has 2 cores) with the bucket's endpoint as plain
    env and its keys from the namespace's Secret, as the Kubeflow compile passes them."""
    from pipeline.kubeflow.jobs import tfjob
    fields = dict(
        workers=2, image=image, cpu=0.5, memory_gb=2.0, start_timeout_s=300,
        env=(('AWS_ENDPOINT_URL', f'http://{pod_s3.endpoint}'), ('AWS_REGION', 'us-east-1')),
        secret_env=(('AWS_ACCESS_KEY_ID', STORE_SECRET, 'access'),
                    ('AWS_SECRET_ACCESS_KEY', STORE_SECRET, 'secret')))
    fields.update(overrides)
    return tfjob.TFJobSpec(**fields)
