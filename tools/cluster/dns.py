"""CoreDNS, the cluster's DNS: training pods find each other by name (a TrainJob's
`<jobset>-node-0-<i>.<jobset>`, a TFJob's `<job>-worker-<i>.<ns>.svc`), and there is no kube-proxy
or kube-dns here. It runs in a namespace holding the kubelet's clusterDNS address (it binds
0.0.0.0:53) and reads Services and EndpointSlices through the API gateway."""
import os
import random
import socket
import struct

from tools.cluster import layout, netns
from tools.cluster.state import State

NAMESPACE = 'dns'


def corefile(kubeconfig: str) -> str:
    # ttl 0: a pod that has just started is found at once, not after a cached miss.
    return f"""{layout.CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    errors
    kubernetes {layout.CLUSTER_DOMAIN} in-addr.arpa {{
        kubeconfig {kubeconfig} kcl
        pods insecure
        ttl 0
    }}
}}
.:53 {{
    errors
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def query(name: str, server: str = layout.DNS_SERVICE_IP, timeout: float = 2.0) -> list:
    """The A records of name, asked of server over UDP: CoreDNS's readiness, and the tests'."""
    ident = random.randrange(1 << 16)
    question = b''.join(bytes([len(p)]) + p.encode() for p in name.rstrip('.').split('.'))
    packet = struct.pack('>HHHHHH', ident, 0x0100, 1, 0, 0, 0) + question + b'\0' + \
        struct.pack('>HH', 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(packet, (server, 53))
        answer = sock.recv(4096)
    count = struct.unpack('>H', answer[6:8])[0]
    offset, addresses = 12 + len(question) + 1 + 4, []
    for _ in range(count):
        offset += 2 if answer[offset] & 0xC0 == 0xC0 else answer.index(b'\0', offset) + 1 - offset
        kind, _, _, length = struct.unpack('>HHIH', answer[offset:offset + 10])
        offset += 10
        if kind == 1:
            addresses.append(socket.inet_ntoa(answer[offset:offset + length]))
        offset += length
    return addresses


def start(where: layout.Layout, state: State) -> int:
    space = netns.create(state, NAMESPACE, layout.DNS_SERVICE_IP)
    config = where.path('coredns', 'Corefile')
    os.makedirs(os.path.dirname(config), exist_ok=True)
    with open(config, 'w') as handle:
        handle.write(corefile(where.path('kubeconfigs', 'in-cluster.kubeconfig')))
    return netns.spawn(state, 'coredns',
                       [os.path.join(where.tools, 'controllers', 'coredns'), '-conf', config],
                       os.path.join(where.log_dir, 'coredns.log'), namespace=space)
