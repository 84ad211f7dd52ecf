"""Where the cluster lives and which addresses it uses: declared once, read by every module.

Nothing listens on a host address other than the loopback. The API server, etcd, the kubelet
and containerd's streaming server are on 127.0.0.1; everything that binds 0.0.0.0 (the
controllers' webhooks, CoreDNS) runs in a network namespace of its own, joined to the host by a
veth and holding one address of the Service range. Pods sit on a bridge the CNI plugin makes.
There is no kube-proxy, so a Service's ClusterIP works only where one of those namespaces holds
it: the API's (10.96.0.1, relayed to 127.0.0.1:6443), CoreDNS's and each webhook's.
"""
import dataclasses
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KUBERNETES_VERSION = 'v1.33.13'   # tools/kubernetes/go.mod
NODE = 'localhost'   # the node's name and Hostname address: the API server reaches the
#                      kubelet (logs, exec) at localhost:10250 with Hostname preferred
SERVICE_CIDR = '10.96.0.0/16'
API_SERVICE_IP = '10.96.0.1'      # the `kubernetes` Service: the first address of the range
DNS_SERVICE_IP = '10.96.0.10'     # the kubelet's clusterDNS, held by CoreDNS's namespace
POD_CIDR = '10.88.0.0/16'
BRIDGE = 'kcl0'
LINK_CIDR = '10.250.0.0/16'       # the veths' host ends, a /30 per namespace
NETNS_PREFIX = 'kcl-'             # every namespace the cluster makes, so down() finds them
API_PORT = 6443
ETCD_CLIENT_PORT, ETCD_PEER_PORT = 23790, 23800   # off etcd's defaults: a system etcd keeps its
CLUSTER_DOMAIN = 'cluster.local'
# containerd's root (its content store, the images' unpacked layers, its metadata) outlives a
# cluster, as a node's does across reboots: the project's image (3.8 GB) goes into it once per
# tag on this machine, not once per cluster. A clean clone's cluster took 59 s to save it from
# podman and 77 s to import it. Machine-wide like podman's own store, so it is outside the
# checkout; one cluster at a time uses it (containerd locks its metadata). Containers of an
# earlier cluster left in it are removed when the next one starts (control_plane.py).
IMAGE_STORE = '/var/lib/kcl/containerd'


@dataclasses.dataclass(frozen=True)
class Layout:
    """The cluster's folders: state under .cluster/ (removed by down), binaries under .tools/
    (kept: the build cache)."""
    root: str = REPO

    @property
    def state(self) -> str:
        return os.path.join(self.root, '.cluster')

    @property
    def tools(self) -> str:
        return os.path.join(self.root, '.tools')

    def kube_binary(self, name: str) -> str:
        return os.path.join(self.tools, 'kubernetes', name)

    def path(self, *parts: str) -> str:
        return os.path.join(self.state, *parts)

    @property
    def kubeconfig(self) -> str:
        """The admin's kubeconfig, for tests and people: the API on 127.0.0.1."""
        return self.path('kubeconfig')

    @property
    def containerd_root(self) -> str:
        return IMAGE_STORE

    @property
    def containerd_socket(self) -> str:
        return self.path('run', 'containerd.sock')

    @property
    def log_dir(self) -> str:
        return self.path('logs')

    @property
    def state_file(self) -> str:
        """What up() started and made, so down() can undo exactly that (state.py)."""
        return self.path('state.json')
