"""The pod sandbox image, packed from .tools/pause (tools/pause/main.go) as a docker-archive tar:
containerd needs one for every pod and cannot pull registry.k8s.io/pause here. One layer with
one file; the tar is made the same, byte for byte, every time (fixed mtimes and owners)."""
import hashlib
import io
import json
import os
import tarfile

NAME = 'localhost/kcl-pause:1'


def _add(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    archive.addfile(info, io.BytesIO(data))


def pack(binary: str, out: str) -> str:
    with open(binary, 'rb') as handle:
        program = handle.read()
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode='w', format=tarfile.USTAR_FORMAT) as archive:
        _add(archive, 'pause', program, 0o755)
    layer_bytes = layer.getvalue()
    diff_id = 'sha256:' + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps({
        'architecture': 'amd64', 'os': 'linux',
        'config': {'Entrypoint': ['/pause']},
        'rootfs': {'type': 'layers', 'diff_ids': [diff_id]},
        'history': [{'created_by': 'tools/cluster/pause_image.py'}]}, sort_keys=True).encode()
    config_name = hashlib.sha256(config).hexdigest() + '.json'
    manifest = json.dumps([{'Config': config_name, 'RepoTags': [NAME],
                            'Layers': ['layer/layer.tar']}]).encode()
    scratch = out + '.tmp'
    with tarfile.open(scratch, 'w', format=tarfile.USTAR_FORMAT) as archive:
        _add(archive, 'layer/layer.tar', layer_bytes)
        _add(archive, config_name, config)
        _add(archive, 'manifest.json', manifest)
    os.replace(scratch, out)
    return out
