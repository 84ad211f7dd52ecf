"""tools/bincache.py: Go binaries kept across clones under a key of everything that builds them.

Each test has a repository of its own (its Makefiles and a tool's go.mod) and a cache folder of
its own; Go itself answers the version, as in `make`."""
import os
import subprocess
import sys
import time

import pytest

from tools import bincache

INPUTS = ['tools/x/go.mod', 'tools/x/go.sum']
OUTPUTS = ['.tools/x/a', '.tools/x/b']


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / 'clone'
    (root / 'tools' / 'x').mkdir(parents=True)
    (root / 'Makefile').write_text('all:\n')
    (root / 'tools' / 'controllers.mk').write_text('# controllers\n')
    (root / 'tools' / 'x' / 'go.mod').write_text('module x\n')
    (root / 'tools' / 'x' / 'go.sum').write_text('')
    monkeypatch.setattr(bincache, 'ROOT', str(root))
    monkeypatch.setenv('BINCACHE_DIR', str(tmp_path / 'cache'))
    monkeypatch.chdir(root)
    return root


def _build(root, text='binary'):
    """As `go build -o` writes its outputs: a file already there is removed first, so a new
    one is written (cmd/go/internal/work/shell.go, mayberemovefile), never the cache's."""
    for i, path in enumerate(OUTPUTS):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).unlink(missing_ok=True)
        (root / path).write_text(f'{text} {i}')
        os.chmod(root / path, 0o755)


def _clear(root):
    for path in OUTPUTS:
        (root / path).unlink()


def test_a_saved_build_is_restored_whole_executable_and_newer_than_its_inputs(repo):
    assert not bincache.restore(INPUTS, OUTPUTS)      # nothing cached yet
    _build(repo)
    bincache.save(INPUTS, OUTPUTS)
    _clear(repo)
    old = time.time() - 3600                            # a cache entry made an hour ago
    entry = os.path.join(bincache.cache_dir(), bincache.key(INPUTS, OUTPUTS))
    for i in range(len(OUTPUTS)):
        os.utime(os.path.join(entry, str(i)), (old, old))
    assert bincache.restore(INPUTS, OUTPUTS)
    for i, path in enumerate(OUTPUTS):
        assert (repo / path).read_text() == f'binary {i}'
        assert os.access(repo / path, os.X_OK)
        assert os.path.getmtime(repo / path) > os.path.getmtime(repo / INPUTS[0]) - 1
        assert os.path.getmtime(repo / path) > old + 3000   # make sees it up to date
    assert not [name for name in os.listdir(repo / '.tools' / 'x') if 'bincache' in name]


@pytest.mark.parametrize('change', ['go.sum', 'Makefile', 'controllers.mk', 'GOFLAGS'])
def test_anything_that_changes_the_build_is_a_new_key(repo, monkeypatch, change):
    _build(repo)
    bincache.save(INPUTS, OUTPUTS)
    _clear(repo)
    if change == 'go.sum':
        (repo / 'tools' / 'x' / 'go.sum').write_text('x v1.0.1 h1:abc=\n')
    elif change == 'Makefile':
        (repo / 'Makefile').write_text("all:\n\tgo build -ldflags '-s'\n")
    elif change == 'controllers.mk':
        (repo / 'tools' / 'controllers.mk').write_text('# controllers, -trimpath\n')
    else:
        monkeypatch.setenv('GOFLAGS', '-race')
    assert not bincache.restore(INPUTS, OUTPUTS)
    assert not (repo / OUTPUTS[0]).exists()


def test_an_entry_missing_an_output_restores_nothing(repo):
    _build(repo)
    bincache.save(INPUTS, OUTPUTS)
    _clear(repo)
    entry = os.path.join(bincache.cache_dir(), bincache.key(INPUTS, OUTPUTS))
    os.unlink(os.path.join(entry, '1'))
    assert not bincache.restore(INPUTS, OUTPUTS)
    assert not (repo / OUTPUTS[0]).exists() and not (repo / OUTPUTS[1]).exists()


def test_the_first_complete_entry_stays_and_a_rebuilt_target_does_not_change_it(repo):
    _build(repo, 'first')
    bincache.save(INPUTS, OUTPUTS)
    _build(repo, 'second')       # the target built again
    bincache.save(INPUTS, OUTPUTS)
    _clear(repo)
    assert bincache.restore(INPUTS, OUTPUTS)
    assert (repo / OUTPUTS[0]).read_text() == 'first 0'
    assert not [n for n in os.listdir(bincache.cache_dir()) if n.startswith('.saving-')]


def test_the_command_line_exits_one_on_a_miss_and_zero_on_a_hit(repo):
    env = {**os.environ, 'PYTHONPATH': os.path.dirname(os.path.dirname(bincache.__file__))}
    command = [sys.executable, '-c',
               f'import sys; from tools import bincache; bincache.ROOT = {str(repo)!r}; '
               'sys.exit(bincache.main(sys.argv[1:]))']
    arguments = ['--in', *INPUTS, '--out', *OUTPUTS]
    assert subprocess.run([*command, 'restore', *arguments], env=env).returncode == 1
    _build(repo)
    assert subprocess.run([*command, 'save', *arguments], env=env).returncode == 0
    _clear(repo)
    done = subprocess.run([*command, 'restore', *arguments], env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0 and 'bincache: .tools/x/a .tools/x/b from ' in done.stdout
    assert (repo / OUTPUTS[1]).read_text() == 'binary 1'
