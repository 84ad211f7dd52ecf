"""Images of one static binary, packed as docker-archive tars: containerd cannot pull here.

- the pod sandbox image, from .tools/pause (tools/pause/main.go): containerd needs one for every
  pod and cannot pull registry.k8s.io/pause;
- Argo's executor image, from .tools/controllers/argoexec, under the name the workflow-controller
  puts in every workflow pod (quay.io/argoproj/argoexec:<version>, workflow/controller/config.go):
  its `init` container copies argoexec into the pod's /var/run/argo, its `wait` container reports
  the outputs, and the main container runs the task under `argoexec emissary`. It runs as
  upstream's does, as user 8737 (its Dockerfile's USER): KFP's pods say runAsNonRoot.

One layer; the tar is made the same, byte for byte, every time (fixed mtimes and owners)."""
import hashlib
import io
import json
import os
import re
import tarfile
from typing import Sequence

PAUSE = 'localhost/kcl-pause:1'
_ARGO_MODULE = 'github.com/argoproj/argo-workflows/v4'


def argoexec_name(go_mod: str) -> str:
    """The executor image the workflow-controller built from go_mod (tools/argo/go.mod) names."""
    with open(go_mod) as handle:
        found = re.search(rf'^\s*(?:require\s+)?{re.escape(_ARGO_MODULE)}\s+(v\S+)', handle.read(),
                          re.MULTILINE)
    if not found:
        raise RuntimeError(f'{go_mod} pins no {_ARGO_MODULE}')
    return f'quay.io/argoproj/argoexec:{found.group(1)}'


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    archive.addfile(info, io.BytesIO(data))


def _folder(archive: tarfile.TarFile, name: str, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, 0
    archive.addfile(info)


def pack(binary: str, out: str, name: str, path: str, entrypoint: Sequence[str],
         folders: Sequence[str] = (), user: str = '') -> str:
    """A tar of the image `name` holding `binary` at `path` (and empty world-writable `folders`,
    e.g. tmp), run as `entrypoint` by `user` (none: root)."""
    with open(binary, 'rb') as handle:
        program = handle.read()
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode='w', format=tarfile.USTAR_FORMAT) as archive:
        for folder in folders:
            _folder(archive, folder, 0o1777)
        parent = os.path.dirname(path)
        if parent:
            _folder(archive, parent, 0o755)
        _add(archive, path, program, 0o755)
    layer_bytes = layer.getvalue()
    diff_id = 'sha256:' + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps({
        'architecture': 'amd64', 'os': 'linux',
        'config': dict({'Entrypoint': list(entrypoint)}, **({'User': user} if user else {})),
        'rootfs': {'type': 'layers', 'diff_ids': [diff_id]},
        'history': [{'created_by': 'tools/cluster/binary_image.py'}]}, sort_keys=True).encode()
    config_name = hashlib.sha256(config).hexdigest() + '.json'
    manifest = json.dumps([{'Config': config_name, 'RepoTags': [name],
                            'Layers': ['layer/layer.tar']}]).encode()
    scratch = out + '.tmp'
    with tarfile.open(scratch, 'w', format=tarfile.USTAR_FORMAT) as archive:
        _add(archive, 'layer/layer.tar', layer_bytes)
        _add(archive, config_name, config)
        _add(archive, 'manifest.json', manifest)
    os.replace(scratch, out)
    return out
