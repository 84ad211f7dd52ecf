"""Network namespaces joined to the host by a veth, each holding one address of the Service
range (layout.py says why), and processes run inside them.

A namespace `kcl-<name>` gets the veth pair kclh<i> (host) / kcln<i> (inside): the host end has
10.250.<i>.1, the inside end the Service address as a /32, with a default route back through
the host. The host routes the Service address to the veth, and forwards between the pods'
bridge and the namespaces (net.ipv4.ip_forward, restored by down())."""
import dataclasses
import ipaddress
import os
import subprocess
from typing import Dict, List, Optional

from tools.cluster import layout
from tools.cluster.state import State


def ip(*args: str, netns: Optional[str] = None) -> None:
    command = (['ip', 'netns', 'exec', netns] if netns else []) + ['ip', *args]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f'{" ".join(command)}: {done.stderr.strip()}')


@dataclasses.dataclass(frozen=True)
class Namespace:
    name: str      # kcl-<short name>
    address: str   # the Service address it holds


def _link_index(state: State) -> int:
    used = {int(link[len('kclh'):]) for link in state.data['links'] if link.startswith('kclh')}
    return next(i for i in range(1, 250) if i not in used)


def forward_on(state: State) -> None:
    path = '/proc/sys/net/ipv4/ip_forward'
    with open(path) as handle:
        state.sysctl_before(path, handle.read().strip())
    with open(path, 'w') as handle:
        handle.write('1')


def create(state: State, short: str, address: str) -> Namespace:
    name = layout.NETNS_PREFIX + short
    index = _link_index(state)
    host, inside = f'kclh{index}', f'kcln{index}'
    gateway = str(ipaddress.ip_network(layout.LINK_CIDR)[index * 256 + 1])
    ip('netns', 'add', name)
    state.add('netns', name)
    ip('link', 'add', host, 'type', 'veth', 'peer', 'name', inside)
    state.add('links', host)
    ip('link', 'set', inside, 'netns', name)
    ip('addr', 'add', f'{gateway}/32', 'dev', host)
    ip('link', 'set', host, 'up')
    for args in (('link', 'set', 'lo', 'up'), ('addr', 'add', f'{address}/32', 'dev', inside),
                 ('link', 'set', inside, 'up'), ('route', 'add', gateway, 'dev', inside),
                 ('route', 'add', 'default', 'via', gateway)):
        ip(*args, netns=name)
    ip('route', 'add', f'{address}/32', 'dev', host)
    return Namespace(name, address)


def redirect(namespace: Namespace, port: int, to_port: int) -> None:
    """Connections to the Service port reach the process's own port: kube-proxy's job."""
    done = subprocess.run(['ip', 'netns', 'exec', namespace.name, 'iptables', '-t', 'nat', '-A',
                           'PREROUTING', '-p', 'tcp', '-d', namespace.address, '--dport',
                           str(port), '-j', 'REDIRECT', '--to-ports', str(to_port)],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f'iptables in {namespace.name}: {done.stderr.strip()}')


def spawn(state: State, name: str, argv: List[str], log_path: str,
          namespace: Optional[Namespace] = None, env: Optional[Dict[str, str]] = None,
          cwd: Optional[str] = None) -> int:
    """Starts argv (inside namespace when given) in a session of its own, its output to
    log_path, and records its pid for down()."""
    command = (['ip', 'netns', 'exec', namespace.name] if namespace else []) + argv
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, 'ab') as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True,
                                   env={**os.environ, **(env or {})}, cwd=cwd)
    state.add('processes', {'name': name, 'pid': process.pid, 'log': log_path})
    return process.pid


def remove_all(state: State) -> List[str]:
    """Deletes the links and namespaces state recorded (and any kcl- namespace left by an
    earlier state that was lost). Returns what it could not delete."""
    left = []
    for link in list(state.data['links']):
        if subprocess.run(['ip', 'link', 'del', link], capture_output=True).returncode and \
                os.path.exists(f'/sys/class/net/{link}'):
            left.append(link)
        else:
            state.remove('links', link)
    names = set(state.data['netns'])
    if os.path.isdir('/run/netns'):
        names |= {n for n in os.listdir('/run/netns') if n.startswith(layout.NETNS_PREFIX)}
    for name in sorted(names):
        if subprocess.run(['ip', 'netns', 'del', name], capture_output=True).returncode and \
                os.path.exists(f'/run/netns/{name}'):
            left.append(name)
        else:
            state.remove('netns', name)
    return left
