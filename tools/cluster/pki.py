"""The cluster's certificates and kubeconfigs, made with openssl: one CA, the API server's
serving certificate (the loopback, the `kubernetes` Service IP and its names), a client
certificate per component (its user and group are what RBAC and the Node authorizer check), and
the service-account signing key pair."""
import base64
import os
import subprocess
from typing import Iterable, Optional

from tools.cluster import layout


def _openssl(*args: str) -> None:
    subprocess.run(['openssl', *args], check=True, capture_output=True)


class Pki:
    def __init__(self, folder: str):
        self.folder = folder

    def file(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def _key(self, name: str) -> str:
        key = self.file(f'{name}.key')
        if not os.path.exists(key):
            _openssl('genrsa', '-out', key, '2048')
        return key

    def ensure_ca(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        if not os.path.exists(self.file('ca.crt')):
            _openssl('req', '-x509', '-new', '-key', self._key('ca'), '-subj', '/CN=kcl-ca',
                     '-days', '3650', '-out', self.file('ca.crt'))
        if not os.path.exists(self.file('sa.pub')):
            _openssl('rsa', '-in', self._key('sa'), '-pubout', '-out', self.file('sa.pub'))

    def issue(self, name: str, common_name: str, group: Optional[str] = None,
              ips: Iterable[str] = (), dns: Iterable[str] = ()) -> None:
        """name.crt signed by the CA, for a client (no SANs) or a server (ips, dns)."""
        if os.path.exists(self.file(f'{name}.crt')):
            return
        subject = f'/CN={common_name}' + (f'/O={group}' if group else '')
        csr, ext = self.file(f'{name}.csr'), self.file(f'{name}.ext')
        _openssl('req', '-new', '-key', self._key(name), '-subj', subject, '-out', csr)
        sans = [f'IP:{ip}' for ip in ips] + [f'DNS:{name}' for name in dns]
        with open(ext, 'w') as handle:
            handle.write('basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n')
            handle.write('extendedKeyUsage=' + ('serverAuth,clientAuth' if sans else 'clientAuth')
                         + '\n')
            if sans:
                handle.write('subjectAltName=' + ','.join(sans) + '\n')
        _openssl('x509', '-req', '-in', csr, '-CA', self.file('ca.crt'), '-CAkey',
                 self.file('ca.key'), '-CAcreateserial', '-days', '3650', '-extfile', ext,
                 '-out', self.file(f'{name}.crt'))
        os.remove(csr)
        os.remove(ext)

    def kubeconfig(self, path: str, name: str, server: str) -> None:
        """A kubeconfig for the client certificate `name`, the CA embedded."""
        def data(file):
            with open(self.file(file), 'rb') as handle:
                return base64.b64encode(handle.read()).decode()
        with open(path, 'w') as handle:
            handle.write(f"""apiVersion: v1
kind: Config
clusters:
- name: kcl
  cluster:
    server: {server}
    certificate-authority-data: {data('ca.crt')}
users:
- name: {name}
  user:
    client-certificate-data: {data(name + '.crt')}
    client-key-data: {data(name + '.key')}
contexts:
- name: kcl
  context: {{cluster: kcl, user: {name}, namespace: default}}
current-context: kcl
""")


def make(folder: str, kubeconfigs: str) -> Pki:
    """Every certificate the control plane needs (idempotent: what exists is kept)."""
    pki = Pki(folder)
    pki.ensure_ca()
    pki.issue('apiserver', 'kube-apiserver', ips=['127.0.0.1', layout.API_SERVICE_IP],
              dns=['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc',
                   f'kubernetes.default.svc.{layout.CLUSTER_DOMAIN}'])
    pki.issue('apiserver-kubelet-client', 'kube-apiserver-kubelet-client', 'system:masters')
    pki.issue('admin', 'kcl-admin', 'system:masters')
    pki.issue('controller-manager', 'system:kube-controller-manager')
    pki.issue('scheduler', 'system:kube-scheduler')
    pki.issue('kubelet', f'system:node:{layout.NODE}', 'system:nodes')
    local = f'https://127.0.0.1:{layout.API_PORT}'
    os.makedirs(kubeconfigs, exist_ok=True)
    for name in ('admin', 'controller-manager', 'scheduler', 'kubelet'):
        pki.kubeconfig(os.path.join(kubeconfigs, f'{name}.kubeconfig'), name, local)
    # From inside a namespace (CoreDNS, the controllers), the API is the `kubernetes` Service.
    pki.kubeconfig(os.path.join(kubeconfigs, 'in-cluster.kubeconfig'), 'admin',
                   f'https://{layout.API_SERVICE_IP}:443')
    return pki
