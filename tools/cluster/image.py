"""The project's image (Dockerfile), built with podman on a base made here, and handed to a
containerd for the kubelet: `python -m tools.cluster.image build [--import SOCKET]`.

No registry is reachable here but PyPI and Debian's mirror, so the Dockerfile's default base
(python:3.11-slim-bookworm) cannot be pulled. The base is made from Debian's own packages:
`debootstrap --variant=minbase bookworm` with python3.11 (its venv module and headers) and
ca-certificates, and a venv at /usr/local, so that `python` and `pip` are Python 3.11 on the
default PATH, as in python:3.11-slim (PEP 668 refuses pip on Debian's system Python; a venv is
what Debian leaves to pip). The Dockerfile is built with `--build-arg BASE=` that base.

Everything is cached under .tools/image/ and in podman's storage, keyed by what goes in, so a
warm call only hashes the build context:
- the base: its rootfs as a tar, keyed by its recipe (BASE_RECIPE), imported into podman as
  localhost/bookworm-python:<key>; made again only when the recipe changes;
- the image: localhost/image-pipeline:<hash of the base, the Dockerfile and every file of the
  build context .dockerignore lets in>; built only when that tag is missing;
- containerd gets it only when a cluster's containerd lacks the tag (its store outlives a
  cluster: layout.IMAGE_STORE), streamed from `podman save` into `ctr images import -`: 77 s
  for the 3.8-GB image, where saving a tar (74 s) and then importing it (48 s) took 122 s and
  kept 3.8 GB on disk per tag.

Podman runs with a containers.conf of ours (CONTAINERS_CONF), written under .tools/image/: crun
fails on this machine's cgroups ("cgroups in hybrid mode not supported"), so runc; and the
containers' ulimits stay under the hard limits, or runc fails with "setrlimit RLIMIT_NOFILE:
Operation not permitted". Progress goes to stdout, every command's output to
.tools/image/build.log.
"""
import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from typing import Dict, Iterator, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK = os.path.join(REPO, '.tools', 'image')
LOG = os.path.join(WORK, 'build.log')
CONTAINERS_CONF = os.path.join(WORK, 'containers.conf')
BASE_REPOSITORY = 'localhost/bookworm-python'
IMAGE_REPOSITORY = 'localhost/image-pipeline'
NAMESPACE = 'k8s.io'    # the kubelet's images: the namespace containerd's CRI plugin reads
HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'
DEFAULT_MIRROR = 'http://deb.debian.org/debian'

# Everything the base is made of; its hash is the base's key, so changing any of it makes the
# base again (and so every image on it).
BASE_RECIPE = {
    'suite': 'bookworm',
    'variant': 'minbase',
    # python3.11-venv: ensurepip and its wheels, which make the venv's pip. python3-distutils:
    # what provides its dependency python3.11-distutils (debootstrap does not resolve virtual
    # packages). python3.11-dev: the headers python:3.11-slim has too, with which the
    # Dockerfile compiles the one dependency that has no wheel (pyfarmhash).
    'packages': ['python3.11', 'python3.11-venv', 'python3-distutils', 'python3.11-dev',
                 'ca-certificates'],
    'setup': [
        # The venv is /usr/local, as python:3.11-slim has its Python: `python`, `pip`, `pip3`
        # in /usr/local/bin, first on the default PATH.
        ['/usr/bin/python3.11', '-m', 'venv', '/usr/local'],
        # pip trusts the system's CA store, as Debian's own pip does: the build mounts the
        # host's store there (a TLS-intercepting egress), and the image's is Debian's.
        ['/bin/sh', '-c', 'printf "[global]\\ncert = /etc/ssl/certs/ca-certificates.crt\\n"'
                          ' > /etc/pip.conf'],
        ['/bin/sh', '-c', 'rm -rf /var/cache/apt/archives/*.deb /var/lib/apt/lists/*'],
    ],
    # What python:3.11-slim's config has that a plain import lacks.
    'changes': ['ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
                'ENV LANG=C.UTF-8', 'CMD ["python3"]'],
}
# Bumped when how the image is built changes in a way the inputs' hash cannot see.
IMAGE_RECIPE = 1

_CONTAINERS_CONF = '''\
# Written by tools/cluster/image.py (passed as CONTAINERS_CONF; /etc is left alone).
[containers]
# Under this machine's hard limits (nofile 20000): above them runc's setrlimit fails.
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
# crun refuses this machine's cgroups ("cgroups in hybrid mode not supported").
runtime = "runc"
# No systemd (and no journald) here.
cgroup_manager = "cgroupfs"
events_logger = "file"
'''


class ImageError(Exception):
    """A tool is missing (one line, with the package to install) or a step failed (one line,
    then the last lines of its output in the log)."""


# -- running commands ------------------------------------------------------------------------

def _say(message: str) -> None:
    print(f'image: {message}', flush=True)


def _log(message: str) -> None:
    os.makedirs(WORK, exist_ok=True)
    with open(LOG, 'a') as handle:
        handle.write(f'\n=== {time.strftime("%Y-%m-%d %H:%M:%S")} {message}\n')


def _require(tool: str, install: str, purpose: str = 'to build the image') -> str:
    path = shutil.which(tool)
    if not path:
        raise ImageError(f'{tool} is not installed (needed {purpose}): '
                         f'apt-get install -y {install}')
    return path


def podman_env() -> Dict[str, str]:
    """The environment every podman command of the project runs with (tests use it too)."""
    os.makedirs(WORK, exist_ok=True)
    try:
        with open(CONTAINERS_CONF) as handle:
            current = handle.read()
    except FileNotFoundError:
        current = None
    if current != _CONTAINERS_CONF:
        scratch = f'{CONTAINERS_CONF}.{os.getpid()}'
        with open(scratch, 'w') as handle:
            handle.write(_CONTAINERS_CONF)
        os.replace(scratch, CONTAINERS_CONF)
    return dict(os.environ, CONTAINERS_CONF=CONTAINERS_CONF)


def _podman_binary() -> str:
    return _require('podman', 'podman buildah runc containernetworking-plugins',
                    'to build and run the image')


def podman(*args: str, check: bool = True, log: bool = True,
           timeout: Optional[float] = None) -> subprocess.CompletedProcess:
    """podman with our containers.conf. Output to the log (log=True) or captured."""
    return _run([_podman_binary(), *args], env=podman_env(), check=check, log=log,
                timeout=timeout)


def _run(command: Sequence[str], env: Optional[Dict[str, str]] = None, check: bool = True,
         log: bool = True, timeout: Optional[float] = None,
         stdin=None) -> subprocess.CompletedProcess:
    if not log:
        result = subprocess.run(list(command), env=env, capture_output=True, text=True,
                                timeout=timeout, stdin=stdin)
        if check and result.returncode:
            last = (result.stderr or result.stdout).strip().splitlines()[-1:]
            raise ImageError(f'{" ".join(command[:3])} failed (exit {result.returncode}): '
                             f'{last[0] if last else "no output"}')
        return result
    _log('$ ' + ' '.join(command))
    with open(LOG, 'a') as handle:
        result = subprocess.run(list(command), env=env, stdout=handle, stderr=subprocess.STDOUT,
                                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                                timeout=timeout)
    if check and result.returncode:
        raise ImageError(f'{" ".join(command[:3])} ... failed (exit {result.returncode}); '
                         f'its output is in {LOG}:\n{_tail(LOG)}')
    return result


def _tail(path: str, lines: int = 15) -> str:
    with open(path, errors='replace') as handle:
        return ''.join(handle.readlines()[-lines:]).rstrip()


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One build at a time: test workers (pytest-xdist) may all ask for the image at once."""
    os.makedirs(WORK, exist_ok=True)
    with open(os.path.join(WORK, 'lock'), 'w') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def image_exists(tag: str) -> bool:
    return podman('image', 'exists', tag, check=False, log=False).returncode == 0


# -- the base --------------------------------------------------------------------------------

def base_key() -> str:
    text = json.dumps(BASE_RECIPE, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def base_tag() -> str:
    return f'{BASE_REPOSITORY}:{base_key()}'


def apt_mirror() -> str:
    """The Debian mirror apt uses here (sources.list(.d), one-line or deb822), for debootstrap."""
    files = ['/etc/apt/sources.list']
    directory = '/etc/apt/sources.list.d'
    if os.path.isdir(directory):
        files += [os.path.join(directory, name) for name in sorted(os.listdir(directory))]
    suite = BASE_RECIPE['suite']
    for path in files:
        try:
            with open(path) as handle:
                text = handle.read()
        except OSError:
            continue
        if path.endswith('.sources'):
            for stanza in re.split(r'\n\s*\n', text):
                fields = dict(re.findall(r'^(\w[\w-]*):\s*(.*)$', stanza, re.M))
                if (fields.get('Types', 'deb').split()[0] == 'deb'
                        and suite in fields.get('Suites', '').split()
                        and 'main' in fields.get('Components', '').split()):
                    return fields['URIs'].split()[0]
        else:
            for line in text.splitlines():
                words = re.sub(r'\[[^]]*\]', '', line.split('#')[0]).split()
                if len(words) >= 4 and words[0] == 'deb' and words[2] == suite:
                    return words[1]
    return DEFAULT_MIRROR


def _mounts_under(directory: str) -> List[str]:
    prefix = os.path.realpath(directory).rstrip('/') + '/'
    with open('/proc/self/mounts') as handle:
        points = [line.split()[1].replace('\\040', ' ') for line in handle]
    return sorted((p for p in points if (p + '/').startswith(prefix)), reverse=True)


def _remove_tree(directory: str) -> None:
    """Removes a rootfs debootstrap made, after unmounting what it may have left mounted in it
    (proc, sys, a bind of /dev when interrupted): rm must never reach through into the host's."""
    if not os.path.exists(directory):
        return
    for point in _mounts_under(directory):
        subprocess.run(['umount', '--lazy', point], check=False)
    if _mounts_under(directory):
        raise ImageError(f'{directory} still has mounts ({_mounts_under(directory)}); '
                         f'unmount them and remove it by hand')
    subprocess.run(['rm', '-rf', '--one-file-system', directory], check=True)


def _make_base_tar(tar_path: str) -> None:
    debootstrap = _require('debootstrap', 'debootstrap', "to make the image's base")
    if os.geteuid() != 0:
        raise ImageError('debootstrap needs root (it makes device nodes and chroots)')
    rootfs = os.path.join(WORK, f'rootfs-{base_key()}')
    _remove_tree(rootfs)   # a run interrupted before
    mirror = apt_mirror()
    recipe = BASE_RECIPE
    try:
        _say(f'debootstrap {recipe["suite"]} from {mirror} (about 2 min)')
        try:
            _run([debootstrap, f'--variant={recipe["variant"]}',
                  '--include=' + ','.join(recipe['packages']), recipe['suite'], rootfs, mirror])
        except ImageError:
            # Its own log names the package at fault; the rootfs holding it is removed below.
            with contextlib.suppress(OSError):
                with open(os.path.join(rootfs, 'debootstrap', 'debootstrap.log')) as handle:
                    _log('debootstrap.log:\n' + handle.read())
            raise
        # A clean environment in the chroot: the host's PIP_* and the like name host paths.
        env = {'PATH': '/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG': 'C.UTF-8',
               'HOME': '/root'}
        for command in recipe['setup']:
            _run(['chroot', rootfs, *command], env=env)
        scratch = tar_path + '.tmp'
        _run(['tar', '--numeric-owner', '--xattrs', '-C', rootfs, '-cf', scratch, '.'])
        os.replace(scratch, tar_path)
    finally:
        _remove_tree(rootfs)
        with contextlib.suppress(FileNotFoundError):
            os.remove(tar_path + '.tmp')


def ensure_base() -> str:
    """The base in podman's storage (from the cached rootfs tar, or debootstrap); its tag."""
    tag = base_tag()
    if image_exists(tag):
        return tag
    tar_path = os.path.join(WORK, f'bookworm-python-{base_key()}.tar')
    if not os.path.exists(tar_path):
        started = time.monotonic()
        _make_base_tar(tar_path)
        _say(f'base rootfs made in {time.monotonic() - started:.0f} s')
        for name in os.listdir(WORK):   # the bases of older recipes
            if name.startswith('bookworm-python-') and name != os.path.basename(tar_path):
                os.remove(os.path.join(WORK, name))
    _say(f'importing the base as {tag}')
    changes = [arg for change in BASE_RECIPE['changes'] for arg in ('--change', change)]
    podman('import', *changes, '--message', 'tools/cluster/image.py: debootstrap base',
           tar_path, tag)
    return tag


# -- the image -------------------------------------------------------------------------------

def _ignore_patterns(context: str) -> List[tuple]:
    """.dockerignore as (negated, regex), the way Docker's patternmatcher reads it."""
    patterns = []
    try:
        with open(os.path.join(context, '.dockerignore')) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return patterns
    for line in lines:
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        negated = line.startswith('!')
        pattern = os.path.normpath(line[1:].strip() if negated else line).lstrip('/')
        regex, i = '', 0
        while i < len(pattern):
            char = pattern[i]
            if pattern.startswith('**/', i):
                regex, i = regex + '(?:.*/)?', i + 3
                continue
            if pattern.startswith('**', i):
                regex, i = regex + '.*', i + 2
                continue
            regex += {'*': '[^/]*', '?': '[^/]'}.get(char, re.escape(char))
            i += 1
        patterns.append((negated, re.compile(regex + r'\Z')))
    return patterns


def _ignored(path: str, patterns: List[tuple]) -> bool:
    """A path is left out if the last pattern matching it, or one of its parents, says so."""
    parents = path.split('/')
    candidates = ['/'.join(parents[:n]) for n in range(1, len(parents) + 1)]
    ignored = False
    for negated, regex in patterns:
        if any(regex.match(candidate) for candidate in candidates):
            ignored = not negated
    return ignored


def context_files(context: str = REPO) -> List[str]:
    """The build context's files, relative, as .dockerignore lets them into the build."""
    patterns = _ignore_patterns(context)
    prune = not any(negated for negated, _ in patterns)   # a `!` may bring back a child
    files = []
    for directory, subdirectories, names in os.walk(context):
        relative = os.path.relpath(directory, context)
        prefix = '' if relative == '.' else relative + '/'
        if prune:
            subdirectories[:] = [d for d in subdirectories if not _ignored(prefix + d, patterns)]
        subdirectories.sort()
        files += [prefix + name for name in sorted(names)
                  if not _ignored(prefix + name, patterns)]
    return files


def inputs_hash(base: str, context: str = REPO) -> str:
    """What the image is made of: the base, the build's recipe, the Dockerfile and
    .dockerignore (which may leave themselves out of the context), and every file COPY can see
    (its path, executable bit and content, or a symlink's target)."""
    digest = hashlib.sha256(json.dumps([base, IMAGE_RECIPE]).encode())
    for name in ('Dockerfile', '.dockerignore', *context_files(context)):
        path = os.path.join(context, name)
        if not os.path.lexists(path):   # no .dockerignore
            continue
        if os.path.islink(path):
            digest.update(f'{name}\0link\0{os.readlink(path)}\0'.encode())
            continue
        content = hashlib.sha256()
        with open(path, 'rb') as handle:
            for block in iter(lambda: handle.read(1 << 20), b''):
                content.update(block)
        executable = os.access(path, os.X_OK)
        digest.update(f'{name}\0{int(executable)}\0{content.hexdigest()}\0'.encode())
    return digest.hexdigest()[:16]


def image_tag(base: Optional[str] = None) -> str:
    return f'{IMAGE_REPOSITORY}:{inputs_hash(base or base_tag())}'


def ensure_image() -> str:
    """The project's image in podman's storage, built if its tag is missing; its tag."""
    with _locked():
        base = ensure_base()
        tag = image_tag(base)
        if image_exists(tag):
            _say(f'{tag} present')
            return tag
        if not os.path.exists(HOST_CA_BUNDLE):
            raise ImageError(f'{HOST_CA_BUNDLE} is missing: pip in the build trusts the '
                             f"host's CA store (apt-get install -y ca-certificates)")
        _say(f'building {tag} (cold about 10 min: pip installs TFX and TensorFlow; '
             f'after a change of code alone, seconds)')
        started = time.monotonic()
        podman('build', '--file', os.path.join(REPO, 'Dockerfile'), '--tag', tag,
               '--build-arg', f'BASE={base}', '--pull=never',
               # The host's network, so no bridge or firewall rule is made for the build; and
               # the host's CA store over the base's for the build only (this machine reaches
               # PyPI through a TLS-intercepting egress): nothing of it stays in the image.
               '--network', 'host', '--volume', f'{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro',
               REPO)
        _say(f'built {tag} in {time.monotonic() - started:.0f} s')
        return tag


def _write_current(tag: str) -> None:
    """.tools/image/current.json: the newest image's tag and its base, for whoever deploys it."""
    scratch = os.path.join(WORK, f'current.json.{os.getpid()}')
    with open(scratch, 'w') as handle:
        json.dump({'image': tag, 'base': base_tag()}, handle, indent=1)
    os.replace(scratch, os.path.join(WORK, 'current.json'))


def build() -> str:
    """Base and image, each only if missing; the image's tag. A containerd gets it when it
    lacks the tag (import_into)."""
    tag = ensure_image()
    _write_current(tag)
    return tag


# -- containerd ------------------------------------------------------------------------------

def _ctr(socket: str, *args: str, log: bool = True, stdin=None) -> subprocess.CompletedProcess:
    ctr = _require('ctr', 'containerd', 'to import the image into containerd')
    return _run([ctr, '--address', socket, '--namespace', NAMESPACE, *args], log=log,
                stdin=stdin)


def containerd_has(socket: str, tag: str) -> bool:
    names = _ctr(socket, 'images', 'list', '--quiet', log=False).stdout.split()
    return tag in names


def import_into(containerd_socket: str, tag: Optional[str] = None) -> str:
    """The image in containerd's k8s.io namespace, where the kubelet finds it (pods name it
    with imagePullPolicy: IfNotPresent or Never); imported only if missing. Its tag."""
    if not os.path.exists(containerd_socket):
        raise ImageError(f'no containerd listens at {containerd_socket} (is the cluster up?)')
    tag = tag or ensure_image()
    with _locked():   # test workers may all ask at once: one import
        if containerd_has(containerd_socket, tag):
            _say(f'{tag} already in containerd ({containerd_socket})')
            return tag
        _say(f'importing {tag} into containerd ({containerd_socket})')
        started = time.monotonic()
        _stream_into(containerd_socket, tag)
        if not containerd_has(containerd_socket, tag):
            raise ImageError(f'{tag} is not in containerd after importing it')
        _say(f'imported in {time.monotonic() - started:.0f} s')
    # containerd's store is kept from cluster to cluster: the earlier tags go (the layers they
    # share with this one stay, the rest is collected by containerd).
    for name in _ctr(containerd_socket, 'images', 'list', '--quiet', log=False).stdout.split():
        if name.startswith(IMAGE_REPOSITORY + ':') and name != tag:
            _ctr(containerd_socket, 'images', 'remove', name)
    return tag


def _stream_into(containerd_socket: str, tag: str) -> None:
    """`podman save` (a docker-archive on its stdout) piped into `ctr images import -`."""
    _log(f'$ podman save --format docker-archive --output /dev/stdout {tag} | ctr ... import -')
    with open(LOG, 'a') as log, subprocess.Popen(
            [_podman_binary(), 'save', '--format', 'docker-archive', '--output', '/dev/stdout',
             tag],
            env=podman_env(), stdout=subprocess.PIPE, stderr=log,
            stdin=subprocess.DEVNULL) as save:
        try:
            _ctr(containerd_socket, 'images', 'import', '-', stdin=save.stdout)
        finally:
            save.stdout.close()   # a failed import: podman ends on the closed pipe
            code = save.wait()
    if code:
        raise ImageError(f'podman save {tag} failed (exit {code}); its output is in {LOG}:\n'
                         f'{_tail(LOG)}')
    # The tars earlier versions saved here for the import (3.8 GB each).
    for name in os.listdir(WORK):
        if name.startswith('image-pipeline-') and name.endswith('.tar'):
            os.remove(os.path.join(WORK, name))


def prune() -> List[str]:
    """Removes the images of older inputs (tags of ours but the current base's and image's),
    then podman's dangling images: the build cache of those, and of any other build."""
    keep = {base_tag(), image_tag()}
    listed = podman('images', '--format', '{{.Repository}}:{{.Tag}}', log=False).stdout.split()
    removed = [tag for tag in listed
               if tag.split(':')[0] in (BASE_REPOSITORY, IMAGE_REPOSITORY) and tag not in keep]
    with _locked():
        if removed:
            podman('rmi', *removed)
        podman('image', 'prune', '--force')
    return removed


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m tools.cluster.image', description=(
        'Build the project image with podman on a local debootstrap base (cached under '
        '.tools/image/) and optionally import it into a containerd.'))
    commands = parser.add_subparsers(dest='command', required=True)
    build_command = commands.add_parser('build', help='base and image')
    build_command.add_argument('--import', dest='socket', metavar='CONTAINERD_SOCKET',
                               help="also import it into that containerd's k8s.io namespace")
    commands.add_parser('tag', help="print the image's tag (hashes the inputs; builds nothing)")
    commands.add_parser('prune', help='remove the images of older inputs and build caches')
    args = parser.parse_args(argv)
    try:
        if args.command == 'tag':
            print(image_tag())
            return 0
        if args.command == 'prune':
            removed = prune()
            _say(f'removed {len(removed)} older image(s): {" ".join(removed) or "none"}')
            return 0
        if args.socket and not os.path.exists(args.socket):   # before minutes of building
            raise ImageError(f'no containerd listens at {args.socket} (is the cluster up?)')
        started = time.monotonic()
        tag = build()
        if args.socket:
            import_into(args.socket, tag)
        _say(f'{tag} ready ({time.monotonic() - started:.1f} s)')
        print(tag)
    except ImageError as error:
        print(f'image: error: {error}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
