"""Go binaries kept across clones, keyed by everything that builds them.

A fresh clone on a warm machine has Go's module and build caches, but `go build -o` still links
every binary again: 45 CPU-seconds (24 s on 2 cores) for the cluster's and the S3 server's, while
the virtualenv's install, the step `make test` waits on, runs beside them on the same 2 cores.
This keeps each target's outputs in a cache outside the clone, under a key made of the target's
outputs, its prerequisites' bytes (the go.mod and go.sum that pin the versions, a main.go), the
Makefiles (their recipes hold the flags), the Go version and Go's environment; a recipe restores
them, or builds and saves them:

    python3 tools/bincache.py restore --in $^ --out $@ || { <build> && \\
        python3 tools/bincache.py save --in $^ --out $@; }

Standard library only: it runs before the virtualenv exists. Restored files are hard links where
the cache is on the clone's filesystem (no copy of a gigabyte of binaries), else copies; each is
renamed into place whole and stamped now, so make sees it newer than its prerequisites and an
interrupted restore leaves no partial binary behind. An entry is saved whole too (a folder
renamed into place), so two clones building at once cannot mix their outputs. `rm -rf` of the
folder (`BINCACHE_DIR`, else ~/.cache/tfx-pipeline-bin) empties it; Go's own caches are unaffected.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The recipes' flags live in these, so a changed flag is a new key.
MAKEFILES = ('Makefile', 'tools/controllers.mk')
# Go's environment that changes what a build produces (CGO_ENABLED is in the recipes).
GO_ENVIRONMENT = ('GOFLAGS', 'GOOS', 'GOARCH', 'GOAMD64', 'GOEXPERIMENT', 'GOTOOLCHAIN')


def cache_dir() -> str:
    return os.environ.get('BINCACHE_DIR') or os.path.join(
        os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'tfx-pipeline-bin')


def _go_version() -> str:
    try:
        return subprocess.run(['go', 'env', 'GOVERSION'], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit(f'bincache: Go is needed to build these binaries ({error})')


def key(inputs: Sequence[str], outputs: Sequence[str]) -> str:
    """The hex digest naming a target's entry: its outputs' paths, its inputs' and the
    Makefiles' bytes, the Go version and Go's environment."""
    digest = hashlib.sha256()

    def add(label: str, value: bytes) -> None:
        digest.update(f'{label}\0{len(value)}\0'.encode() + value)

    for path in outputs:
        add('out', path.encode())
    for path in [*inputs, *MAKEFILES]:
        with open(os.path.join(ROOT, path), 'rb') as handle:
            add(path, handle.read())
    add('go', _go_version().encode())
    for name in GO_ENVIRONMENT:
        add(name, os.environ.get(name, '').encode())
    return digest.hexdigest()[:32]


def _place(source: str, target: str) -> None:
    """source at target, whole (a link or a copy renamed into place), stamped now."""
    folder = os.path.dirname(os.path.abspath(target))
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f'.{os.path.basename(target)}.bincache-{os.getpid()}')
    try:
        os.link(source, temporary)
    except OSError:   # another filesystem: a copy
        shutil.copy2(source, temporary)
    try:
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
    os.utime(target)


def restore(inputs: Sequence[str], outputs: Sequence[str]) -> bool:
    """Puts the target's cached outputs in place; False (nothing changed) if not all cached."""
    entry = os.path.join(cache_dir(), key(inputs, outputs))
    cached = [os.path.join(entry, str(i)) for i in range(len(outputs))]
    if not all(os.path.isfile(path) for path in cached):
        return False
    for source, target in zip(cached, outputs):
        _place(source, target)
    print(f'bincache: {" ".join(outputs)} from {entry}')
    return True


def save(inputs: Sequence[str], outputs: Sequence[str]) -> None:
    """Keeps the built outputs under the target's key (the first complete entry stays)."""
    entry = os.path.join(cache_dir(), key(inputs, outputs))
    if os.path.isdir(entry):
        return
    os.makedirs(cache_dir(), exist_ok=True)
    staging = tempfile.mkdtemp(prefix='.saving-', dir=cache_dir())
    try:
        for i, path in enumerate(outputs):
            try:
                os.link(path, os.path.join(staging, str(i)))
            except OSError:
                shutil.copy2(path, os.path.join(staging, str(i)))
        os.rename(staging, entry)
    except OSError:
        if not os.path.isdir(entry):   # not another clone's entry landing first: a real fault
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog='bincache', description=__doc__.split('\n', 1)[0])
    parser.add_argument('action', choices=('restore', 'save'))
    parser.add_argument('--in', dest='inputs', nargs='+', required=True,
                        help="the target's prerequisites (paths from the repository's root)")
    parser.add_argument('--out', dest='outputs', nargs='+', required=True,
                        help='the files the recipe builds')
    args = parser.parse_args(argv)
    if args.action == 'restore':
        return 0 if restore(args.inputs, args.outputs) else 1
    save(args.inputs, args.outputs)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
