"""Pods as processes: what the kubelet and a container runtime do with a pod of a compiled KFP
Workflow, for kfp_workflow.Workflow.

Each container is a process in its own mount namespace (`unshare --mount --propagation private`,
plus `--user --map-root-user` when not root). Its root is a tmpfs holding binds of the host's
system folders (/usr, /bin, /lib*, /etc, /dev, /proc, /sys, /var, /opt), what its "image" brings
(Image: folders bound at their own paths, a workdir, PATH and env), the pod's emptyDir volumes at
their mountPaths (shared by the pod's containers, as on a node), a /tmp and a /run of its own,
an /etc/hosts mapping the cluster's Service names (the cluster DNS) and /etc/hostname, and the
service account's token, ca.crt and namespace at /var/run/secrets/kubernetes.io/serviceaccount
(kubelet's projected volume). Then `chroot` into it, `cd` to the workdir, and exec.

The environment is what the kubelet builds (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables):
the image's env, then `envFrom` (ConfigMaps/Secrets; `optional` ones may be missing), then `env`
with `valueFrom.fieldRef` (metadata.name/namespace/uid, labels and annotations,
spec.serviceAccountName, spec.nodeName, status.podIP), `secretKeyRef` and `configMapKeyRef`
read through the Kubernetes API's objects (missing and not optional: the container does not
start, CreateContainerConfigError), `$(VAR)` references expanded
(third_party/forked/golang/expansion); plus the Service variables of the API server
(KUBERNETES_SERVICE_HOST/PORT) and HOSTNAME. `$(VAR)` in command and args is expanded too
(kubelet's kuberuntime container args).
"""
import dataclasses
import os
import re
import shlex
import sys
import time
from typing import Dict, List, Optional, Tuple

import kfp_workflow

SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount'
_SYSTEM = ('usr', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32', 'etc', 'opt', 'var', 'dev',
           'proc', 'sys')
_BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'


@dataclasses.dataclass
class Image:
    """What a container image brings: folders ((host path, path in the container) pairs), PATH
    entries before the system's, a working directory and env (a Dockerfile's ENV/WORKDIR)."""
    binds: List[Tuple[str, str]] = dataclasses.field(default_factory=list)
    path: List[str] = dataclasses.field(default_factory=list)
    workdir: str = '/'
    env: Dict[str, str] = dataclasses.field(default_factory=dict)
    home: str = '/root'


class ContainerConfigError(Exception):
    """kubelet: CreateContainerConfigError (a Secret or ConfigMap, or a key of one, missing)."""


def expand(text: str, env: Dict[str, str]) -> str:
    """third_party/forked/golang/expansion Expand: `$(VAR)` -> its value when defined (else kept),
    `$$` -> `$`."""
    out, i = [], 0
    while i < len(text):
        if text[i] == '$' and i + 1 < len(text):
            if text[i + 1] == '$':
                out.append('$')
                i += 2
                continue
            if text[i + 1] == '(':
                end = text.find(')', i + 2)
                if end != -1:
                    name = text[i + 2:end]
                    out.append(env[name] if name in env else text[i:end + 1])
                    i = end + 1
                    continue
        out.append(text[i])
        i += 1
    return ''.join(out)


class PodRunner:
    """Runs the pods of a workflow; `images` maps an image name (exact, or a prefix ending in
    ':' or '/') to an Image. Every pod's folders stay under `folder` for reading afterwards."""

    def __init__(self, folder, k8s_api, hosts: Dict[str, str], images: Dict[str, Image],
                 log=print):
        self.folder = folder
        self.api = k8s_api
        self.hosts = hosts
        self.images = images
        self.log = log
        self.pods: Dict[str, dict] = {}
        self.records: List[dict] = []

    # -- folders

    def pod_folder(self, pod_name, *parts):
        return kfp_workflow.host_folder(self.folder, pod_name, *parts)

    def read_file(self, pod, container, path) -> Optional[str]:
        """A file of a container's filesystem after it ran: its /tmp, or a volume of the pod."""
        host = self._host_path(pod, container, path)
        if host is None or not os.path.isfile(host):
            return None
        with open(host, encoding='utf-8', errors='replace') as handle:
            return handle.read()

    def _host_path(self, pod, container_name, path):
        name = pod['metadata']['name']
        containers = pod['spec'].get('initContainers', []) + pod['spec']['containers']
        [container] = [c for c in containers if c['name'] == container_name]
        for mount in container.get('volumeMounts', []):
            prefix = mount['mountPath'].rstrip('/') + '/'
            if path.startswith(prefix):
                return os.path.join(self.pod_folder(name, 'volumes', mount['name']),
                                    path[len(prefix):])
        if path.startswith('/tmp/'):
            return os.path.join(self.pod_folder(name, 'containers', container_name, 'tmp'),
                                path[len('/tmp/'):])
        return None

    def _image(self, name) -> Image:
        if name in self.images:
            return self.images[name]
        for key, image in self.images.items():
            if key.endswith((':', '/')) and name.startswith(key):
                return image
        if '*' in self.images:  # every other image
            return self.images['*']
        raise kfp_workflow.WorkflowError(f'no image {name!r} in this harness (ErrImagePull)')

    # -- environment

    def _field(self, pod, path):
        meta = pod['metadata']
        simple = {'metadata.name': meta['name'], 'metadata.namespace': meta['namespace'],
                  'metadata.uid': meta['uid'], 'spec.nodeName': 'harness-node',
                  'spec.serviceAccountName': pod['spec'].get('serviceAccountName', 'default'),
                  'status.podIP': '127.0.0.1', 'status.hostIP': '127.0.0.1'}
        if path in simple:
            return simple[path]
        match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
        if match:
            return meta.get(match.group(1), {}).get(match.group(2), '')
        raise ContainerConfigError(f'unsupported fieldRef {path}')

    def _object_data(self, kind, name, optional):
        store = self.api.secrets if kind == 'secret' else self.api.config_maps
        if name not in store:
            if optional:
                return None
            raise ContainerConfigError(f'{kind} "{name}" not found')
        return store[name]

    def environment(self, pod, container, image: Image) -> Dict[str, str]:
        env = {'PATH': ':'.join(image.path + [_BASE_PATH]), 'HOME': image.home}
        env.update(image.env)
        env.update(self.api.env())
        env['HOSTNAME'] = pod['metadata']['name']
        for source in container.get('envFrom', []):
            for kind in ('configMapRef', 'secretRef'):
                if kind in source:
                    ref = source[kind]
                    data = self._object_data('secret' if kind == 'secretRef' else 'configmap',
                                             ref['name'], ref.get('optional', False))
                    for key, value in (data or {}).items():
                        env[source.get('prefix', '') + key] = value
        for var in container.get('env', []):
            if 'valueFrom' not in var:
                env[var['name']] = expand(str(var.get('value', '')), env)
                continue
            source = var['valueFrom']
            if 'fieldRef' in source:
                env[var['name']] = self._field(pod, source['fieldRef']['fieldPath'])
            elif 'secretKeyRef' in source or 'configMapKeyRef' in source:
                kind = 'secret' if 'secretKeyRef' in source else 'configmap'
                ref = source.get('secretKeyRef') or source.get('configMapKeyRef')
                data = self._object_data(kind, ref['name'], ref.get('optional', False))
                if data is None:
                    continue
                if ref['key'] not in data:
                    if ref.get('optional', False):
                        continue
                    raise ContainerConfigError(
                        f"couldn't find key {ref['key']} in {kind} "
                        f"{pod['metadata']['namespace']}/{ref['name']}")
                env[var['name']] = data[ref['key']]
            else:
                raise ContainerConfigError(f'unsupported valueFrom {sorted(source)}')
        return env

    # -- the pod

    def run_pod(self, pod, node) -> Tuple[int, str]:
        name = pod['metadata']['name']
        self.pods[name] = pod
        pod['status'] = {'phase': 'Running', 'podIP': '127.0.0.1'}
        self.api.pods[name] = pod  # what the API serves while the pod runs
        hosts = os.path.join(self.pod_folder(name), 'hosts')
        with open(hosts, 'w') as handle:
            handle.write('127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
                         f'127.0.0.1\t{name}\n')
            for host_name, address in sorted(self.hosts.items()):
                handle.write(f'{address}\t{host_name}\n')
        with open(os.path.join(self.pod_folder(name), 'hostname'), 'w') as handle:
            handle.write(name + '\n')
        for volume in pod['spec'].get('volumes', []):
            if set(volume) - {'name', 'emptyDir'}:
                return 1, f'volume {volume["name"]}: only emptyDir volumes are served here'
            self.pod_folder(name, 'volumes', volume['name'])
        record = {'pod': name, 'node': node.name, 'containers': []}
        self.records.append(record)
        code, message = 0, ''
        for kind, container in [('init', c) for c in pod['spec'].get('initContainers', [])] + \
                [('main', c) for c in pod['spec']['containers']]:
            started = time.time()
            try:
                code = self._run_container(pod, container)
            except ContainerConfigError as exc:
                code, message = 1, f'CreateContainerConfigError: {exc}'
            record['containers'].append({'name': container['name'], 'exit': code,
                                         'seconds': round(time.time() - started, 2)})
            if code != 0:
                message = message or (f'Error (exit code {code})' if kind == 'main' else
                                      f'init container {container["name"]} failed '
                                      f'(exit code {code})')
                break
        pod['status'] = {'phase': 'Succeeded' if code == 0 else 'Failed'}
        return code, message

    def records_for(self, pod_name) -> List[str]:
        """The containers of a pod that ran (or tried to), in order."""
        return [c['name'] for r in self.records if r['pod'] == pod_name
                for c in r['containers']]

    def log_path(self, pod_name, container_name):
        return os.path.join(self.pod_folder(pod_name, 'containers', container_name), 'log')

    def _run_container(self, pod, container) -> int:
        name = pod['metadata']['name']
        image = self._image(container.get('image', ''))
        env = self.environment(pod, container, image)
        command = [expand(a, env) for a in container.get('command', [])] + \
            [expand(a, env) for a in container.get('args', [])]
        if not command:
            raise ContainerConfigError('no command (the harness knows no image entrypoints)')
        tmp = self.pod_folder(name, 'containers', container['name'], 'tmp')
        root = self.pod_folder(name, 'containers', container['name'], 'root')
        mounts = [(self.pod_folder(name, 'volumes', m['name']), m['mountPath'])
                  for m in container.get('volumeMounts', [])]
        script = self._setup_script(root, image, tmp, mounts, name)
        script_path = os.path.join(self.pod_folder(name, 'containers', container['name']),
                                   'setup.sh')
        with open(script_path, 'w') as handle:
            handle.write(script)
        unshare = ['unshare', '--mount', '--propagation', 'private', '--uts']
        if os.geteuid() != 0:
            unshare[1:1] = ['--user', '--map-root-user']
        args = unshare + ['/bin/bash', script_path, image.workdir or '/', *command]
        log = self.log_path(name, container['name'])
        with open(log, 'ab') as out:
            out.write(f'$ {shlex.join(command)[:2000]}\n'.encode())
        return kfp_workflow.run_logged(args, env, log)

    def _setup_script(self, root, image: Image, tmp, mounts, pod_name) -> str:
        q = shlex.quote
        lines = ['set -e', f'R={q(root)}', '/usr/bin/mount -t tmpfs tmpfs "$R"']
        for top in _SYSTEM:
            host = '/' + top
            if os.path.islink(host):
                lines.append(f'/usr/bin/ln -s {q(os.readlink(host))} "$R"/{top}')
            elif os.path.isdir(host):
                lines.append(f'/usr/bin/mkdir -p "$R"/{top} && '
                             f'/usr/bin/mount --rbind {host} "$R"/{top}')
        binds = [(tmp, '/tmp')] + list(image.binds) + mounts
        for source, target in binds:
            lines.append(f'/usr/bin/mkdir -p "$R"{q(target)} && '
                         f'/usr/bin/mount --bind {q(source)} "$R"{q(target)}')
        # A fresh /run (the image's), and the service account in it (/var/run -> /run).
        run = '/var/run' if not os.path.islink('/var/run') else '/run'
        lines.append(f'/usr/bin/mkdir -p "$R"{run} && /usr/bin/mount -t tmpfs tmpfs "$R"{run}')
        # The path under the new root itself: "$R"/var/run would follow the host's symlink.
        account = run + SERVICE_ACCOUNT[len('/var/run'):]
        lines.append(f'/usr/bin/mkdir -p "$R"{account} && /usr/bin/mount --bind '
                     f'{q(self.api.service_account)} "$R"{account}')
        folder = self.pod_folder(pod_name)
        for file in ('hosts', 'hostname'):
            lines.append(f'/usr/bin/mount --bind {q(os.path.join(folder, file))} '
                         f'"$R"/etc/{file}')
        lines.append(f'/usr/bin/mkdir -p "$R"{q(image.home)}')
        lines.append(f'/usr/bin/hostname {q(pod_name[:63])} 2>/dev/null || true')
        lines.append('WORKDIR="$1"; shift')
        lines.append('exec /usr/sbin/chroot "$R" /bin/sh -c \'cd "$0" && exec "$@"\' '
                     '"$WORKDIR" "$@"')
        return '\n'.join(lines) + '\n'


def python_image(repo: str, workdir='/pipeline', home='/home/pipeline') -> Image:
    """This checkout in place of the pipeline's image (Dockerfile: WORKDIR /pipeline holds the
    checkout, the project installed into the image's Python, HOME=/home/pipeline): the checkout at
    /pipeline and at its own path (the venv's editable install names it), the venv's interpreter
    folder, `python` on PATH from the venv."""
    venv_bin = os.path.dirname(sys.executable) if sys.prefix != sys.base_prefix else \
        os.path.join(repo, '.venv', 'bin')
    base = os.path.realpath(sys.base_prefix)
    binds = [(repo, workdir), (os.path.realpath(repo), os.path.realpath(repo)), (base, base)]
    return Image(binds=binds, path=[venv_bin], workdir=workdir, home=home)


def binary_image(bin_dir: str, workdir='/') -> Image:
    """A KFP image (kfp-driver, kfp-launcher): its program on PATH."""
    bin_dir = os.path.realpath(bin_dir)
    return Image(binds=[(bin_dir, bin_dir)], path=[bin_dir], workdir=workdir)
