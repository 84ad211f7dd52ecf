"""KFP's driver and launcher images for the real cluster, made of our transcriptions.

KFP 2.17's `driver` and `launcher-v2` cannot be built here (the Go proxy refuses
github.com/kubeflow/pipelines), so the pods Argo starts for a run get our transcriptions behind
the same command-line flags (kfp_driver_cli.py, kfp_launcher_cli.py), as one program file each:
a zipapp (a zip of the transcriptions with a `#!/usr/bin/env python` line) at /usr/local/bin/driver
and /usr/local/bin/launcher-v2. A zipapp is one file, so the launcher's `--copy` (KFP's
CopyThisBinary) copies it as it is into the pod's /kfp-launcher, where the task's own container
(the project's image) runs it. With `KFP_BIN_DIR` naming KFP's own `driver` and `launcher-v2`
(built by hand), those are the two files instead.

The images are the project's image plus one layer with those two files, made in the node's
containerd and never in podman: only the new layer, its config and manifest go into an OCI
archive, whose manifest names the project image's layers already in containerd's content store
(importing the 3.8 GB image again would take minutes). The names are those the API server's
V2_DRIVER_IMAGE and V2_LAUNCHER_IMAGE give the compiler, tagged with a hash of the layer: a
tag other than `latest` is not pulled when present (IfNotPresent), and a change to a
transcription makes a new tag. Test support only: the product's image has no transcription.
"""
import hashlib
import io
import json
import os
import subprocess
import tarfile
import tempfile
import zipfile
from typing import Dict, Optional, Tuple

SUPPORT = os.path.dirname(os.path.abspath(__file__))
# What kfp_driver_cli.py and kfp_launcher_cli.py import from this folder (modulefinder).
MODULES = ('fake_kfp_rules', 'kfp_argo_compiler', 'kfp_argo_templates', 'kfp_driver',
           'kfp_driver_cli', 'kfp_go_json', 'kfp_goflag', 'kfp_k8s_client', 'kfp_launcher_cli',
           'kfp_launcher_v2', 'kfp_mlmd', 'kfp_mlmd_client', 'kfp_objectstore', 'kfp_protojson',
           'kfp_task_api', 'warm_python')
DRIVER_REPOSITORY = 'ghcr.io/kubeflow/kfp-driver'
LAUNCHER_REPOSITORY = 'ghcr.io/kubeflow/kfp-launcher'
NAMESPACE = 'k8s.io'
# Which transcription runs is chosen by the name it is run by: `driver`, `launcher-v2`, or the
# launcher's copy `/kfp-launcher/launch`.
# KFP's programs are Go binaries that start in milliseconds; the transcriptions need only the
# protos of kfp-pipeline-spec and kfp-kubernetes, and the kfp SDK's own __init__ (its client,
# the Kubernetes client, the DSL) took 0.6 s of the 0.85 s a transcription took to import, in
# each of a run's 20 pods. `kfp` is therefore made a bare package over the same folders first.
_MAIN = b'''import importlib.util, os, sys, types
_kfp = importlib.util.find_spec('kfp')
_bare = sys.modules['kfp'] = types.ModuleType('kfp')
_bare.__path__, _bare.__spec__ = list(_kfp.submodule_search_locations), _kfp
if os.path.basename(sys.argv[0]) == 'driver':
    import kfp_driver_cli as program
else:
    import kfp_launcher_cli as program
sys.exit(program.main())
'''


def _fixed(name: str, data: bytes, mode: int) -> Tuple[tarfile.TarInfo, io.BytesIO]:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    return info, io.BytesIO(data)


def program() -> bytes:
    """The zipapp: the same bytes for the same transcriptions (fixed dates, sorted names)."""
    buffer = io.BytesIO()
    buffer.write(b'#!/usr/bin/env python\n')
    with zipfile.ZipFile(buffer, 'a', zipfile.ZIP_DEFLATED) as archive:
        for module in sorted(MODULES):
            with open(os.path.join(SUPPORT, module + '.py'), 'rb') as handle:
                archive.writestr(zipfile.ZipInfo(module + '.py', (1980, 1, 1, 0, 0, 0)),
                                 handle.read())
        archive.writestr(zipfile.ZipInfo('__main__.py', (1980, 1, 1, 0, 0, 0)), _MAIN)
    return buffer.getvalue()


def layer(bin_dir: Optional[str] = None) -> bytes:
    """The layer: our zipapp as both programs, or KFP's own `driver` and `launcher-v2` from
    bin_dir (built by hand from KFP's source, never committed: docs/kubeflow.md)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode='w', format=tarfile.USTAR_FORMAT) as archive:
        for name in ('driver', 'launcher-v2'):
            if bin_dir:
                with open(os.path.join(bin_dir, name), 'rb') as handle:
                    data = handle.read()
            else:
                data = program()
            archive.addfile(*_fixed('usr/local/bin/' + name, data, 0o755))
    return out.getvalue()


def _ctr(socket: str, *args: str, stdin=None) -> bytes:
    done = subprocess.run(['ctr', '--address', socket, '-n', NAMESPACE, *args], input=stdin,
                          capture_output=True)
    if done.returncode:
        raise RuntimeError(f'ctr {" ".join(args)}: {done.stderr.decode().strip()}')
    return done.stdout


def _manifest_digest(socket: str, reference: str) -> str:
    for line in _ctr(socket, 'images', 'ls').decode().splitlines()[1:]:
        fields = line.split()
        if fields and fields[0] == reference:
            return fields[2]
    raise RuntimeError(f'containerd has no image {reference}')


def _digest(data: bytes) -> str:
    return 'sha256:' + hashlib.sha256(data).hexdigest()


def ensure(socket: str, base: str, bin_dir: Optional[str] = None) -> Dict[str, str]:
    """The driver and launcher images on `base` (the project's image, in containerd), imported
    unless present: {'driver': name, 'launcher': name}."""
    new_layer = layer(bin_dir)
    base_digest = _manifest_digest(socket, base)
    tag = hashlib.sha256(base_digest.encode() + new_layer).hexdigest()[:16]
    names = {'driver': f'{DRIVER_REPOSITORY}:{tag}', 'launcher': f'{LAUNCHER_REPOSITORY}:{tag}'}
    present = _ctr(socket, 'images', 'ls', '-q').decode().split()
    if all(name in present for name in names.values()):
        return names
    manifest = json.loads(_ctr(socket, 'content', 'get', base_digest))
    config = json.loads(_ctr(socket, 'content', 'get', manifest['config']['digest']))
    config['rootfs']['diff_ids'].append(_digest(new_layer))
    config.setdefault('history', []).append({'created_by': 'tests/support/kfp_images.py'})
    config_bytes = json.dumps(config, sort_keys=True).encode()
    manifest['config'] = dict(manifest['config'], digest=_digest(config_bytes),
                              size=len(config_bytes))
    manifest['layers'].append({'mediaType': 'application/vnd.docker.image.rootfs.diff.tar',
                               'digest': _digest(new_layer), 'size': len(new_layer)})
    manifest_bytes = json.dumps(manifest).encode()
    index = {'schemaVersion': 2, 'manifests': [
        {'mediaType': manifest['mediaType'], 'digest': _digest(manifest_bytes),
         'size': len(manifest_bytes),
         'annotations': {'io.containerd.image.name': name,
                         'org.opencontainers.image.ref.name': name.rsplit(':', 1)[1]}}
        for name in names.values()]}
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, 'programs.tar')
        with tarfile.open(path, 'w', format=tarfile.USTAR_FORMAT) as archive:
            archive.addfile(*_fixed('oci-layout', b'{"imageLayoutVersion": "1.0.0"}', 0o644))
            archive.addfile(*_fixed('index.json', json.dumps(index).encode(), 0o644))
            for blob in (new_layer, config_bytes, manifest_bytes):
                archive.addfile(*_fixed('blobs/sha256/' + _digest(blob)[7:], blob, 0o644))
        _ctr(socket, 'images', 'import', path)
    # containerd's store outlives the cluster (tools/cluster/layout.py, IMAGE_STORE): earlier
    # tags go, or each would keep an older project image's layers.
    for name in present:
        if name.rsplit(':', 1)[0] in (DRIVER_REPOSITORY, LAUNCHER_REPOSITORY) and \
                name not in names.values():
            _ctr(socket, 'images', 'remove', name)
    return names
