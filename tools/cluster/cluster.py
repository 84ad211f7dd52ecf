"""up(), down() and status(): the whole cluster, started in order and stopped by what state.py
recorded, so nothing it made outlives down(): no process, mount, namespace, link or listener."""
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Callable, List

from tools.cluster import control_plane, controllers, dns, layout, netns, services
from tools.cluster.state import State

GATEWAY = 'api'   # the namespace holding the `kubernetes` Service's address


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie (our child, not yet reaped) counts as gone
        with open(f'/proc/{pid}/stat') as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def running(where: layout.Layout) -> bool:
    """True when a recorded API server answers: up() then has nothing to do."""
    if not os.path.exists(where.state_file):
        return False
    state = State(where.state_file)
    pid = state.pid('kube-apiserver')
    if not state.data.get('complete') or not pid or not alive(pid):
        return False
    try:
        return control_plane.ControlPlane(where, state, print).get('/readyz') == b'ok'
    except Exception:
        return False


def gateway(where: layout.Layout, state: State, say: Callable[[str], None]) -> None:
    """The API at https://10.96.0.1:443 for pods and namespaces, relayed to 127.0.0.1:6443."""
    space = netns.create(state, GATEWAY, layout.API_SERVICE_IP)
    netns.spawn(state, 'api-relay', [sys.executable, '-m', 'tools.cluster.relay', space.name,
                                     f'{layout.API_SERVICE_IP}:443',
                                     f'127.0.0.1:{layout.API_PORT}'],
                os.path.join(where.log_dir, 'api-relay.log'), cwd=where.root)
    say(f'{"API gateway":<24} {layout.API_SERVICE_IP}:443 in {space.name}')


def coredns(where: layout.Layout, state: State, say: Callable[[str], None]) -> None:
    started = time.monotonic()
    pid = dns.start(where, state)
    name = f'kubernetes.default.svc.{layout.CLUSTER_DOMAIN}'
    control_plane.wait('CoreDNS', lambda: dns.query(name, timeout=0.5) == [layout.API_SERVICE_IP],
                       60, os.path.join(where.log_dir, 'coredns.log'))
    say(f'{"CoreDNS":<24} pid {pid:<7} ready in {time.monotonic() - started:4.1f} s '
        f'({layout.DNS_SERVICE_IP}:53)')


def up(where: layout.Layout, say: Callable[[str], None] = print) -> None:
    if running(where):
        say(f'the cluster is already running: KUBECONFIG={where.kubeconfig}')
        return
    if os.path.exists(where.state_file):
        say('an earlier cluster did not stop cleanly: stopping what it left first')
        down(where, say)
    started = time.monotonic()
    state = State(where.state_file)
    state.data['cni_before'] = _cni_namespaces()
    state.save()   # at once, so that a failed up() below is undone by down()
    try:
        netns.forward_on(state)
        plane = control_plane.ControlPlane(where, state, say)
        plane.certificates()
        plane.containerd()
        plane.etcd()
        plane.apiserver()
        gateway(where, state, say)
        plane.controller_manager()
        plane.scheduler()
        plane.kubelet()
        coredns(where, state, say)
        services.reserve_dns_address(where)
        services.start_all(where, state, say)
        services.apply_runtime(where, say)
    except BaseException:
        # down() removes .cluster/: the logs that say why are kept in .tools/.
        kept = os.path.join(where.tools, 'cluster-failed-logs')
        say(f'cluster up failed: stopping what it started; its logs are in {kept}')
        shutil.rmtree(kept, ignore_errors=True)
        if os.path.isdir(where.log_dir):
            shutil.copytree(where.log_dir, kept)
        down(where, say)
        raise
    state.data['complete'] = True
    state.save()
    say(f'cluster up in {time.monotonic() - started:.1f} s: KUBECONFIG={where.kubeconfig}')


def _cni_namespaces() -> List[str]:
    folder = '/run/netns'
    return sorted(n for n in os.listdir(folder) if n.startswith('cni-')) \
        if os.path.isdir(folder) else []


def _stop(pid: int, seconds: float = 10) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.1)
        if not alive(pid):
            return


def _pod_processes() -> List[int]:
    """Every process in a pod's cgroup (kubelet's cgroupfs driver puts them under kubepods)."""
    pids = set()
    for top, _, files in os.walk('/sys/fs/cgroup/pids/kubepods'):
        if 'cgroup.procs' in files:
            with open(os.path.join(top, 'cgroup.procs')) as handle:
                pids.update(int(line) for line in handle if line.strip())
    return sorted(pids)


def _shims(where: layout.Layout) -> List[int]:
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as handle:
                line = handle.read().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        if 'containerd-shim' in line and where.containerd_socket in line:
            found.append(int(entry))
    return found


def _unmount_under(folder: str) -> None:
    with open('/proc/self/mountinfo') as handle:
        points = [line.split()[4] for line in handle]
    for point in reversed(points):   # the deepest, latest first
        if point == folder or point.startswith(folder + '/'):
            if subprocess.run(['umount', point], capture_output=True).returncode:
                subprocess.run(['umount', '-l', point], capture_output=True)


def _remove_cgroups() -> None:
    for controller in os.listdir('/sys/fs/cgroup'):
        top = os.path.join('/sys/fs/cgroup', controller, 'kubepods')
        for folder, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count('/')):
            try:
                os.rmdir(folder)
            except OSError:
                pass


def down(where: layout.Layout, say: Callable[[str], None] = print) -> None:
    state = State(where.state_file)
    for process in reversed(state.processes()):
        if process['name'] == 'containerd':
            # Pods first: their processes, then the shims that watched them.
            for pid in _pod_processes() + _shims(where):
                _stop(pid, 5)
        _stop(process['pid'])
        state.remove('processes', process)
        say(f'stopped {process["name"]} (pid {process["pid"]})')
    for pid in _shims(where):
        _stop(pid, 5)
    _unmount_under(where.state)
    _unmount_under(where.containerd_root)   # none expected: containers mount under the state
    for name in sorted(set(_cni_namespaces()) - set(state.data.get('cni_before', []))):
        subprocess.run(['ip', 'netns', 'del', name], capture_output=True)
    left = netns.remove_all(state)
    for path, value in state.data['sysctl'].items():
        with open(path, 'w') as handle:
            handle.write(value)
    _remove_cgroups()
    try:   # the controllers' mount point, empty outside their mount namespaces
        os.rmdir(controllers.WEBHOOK_DIR)
    except OSError:
        pass
    if left:
        raise RuntimeError(f'could not remove: {", ".join(left)} (state kept in {where.state})')
    shutil.rmtree(where.state, ignore_errors=True)
    say('cluster down: no process, mount, namespace or link of it is left')
