"""Unit tests of serving versions: integer and monotonic, atomic, idempotent, with retention."""
import os
import signal
import textwrap
import time

import pytest

from core import versions

import warm_python

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _fake_model(path, tag: str, extra_files: int = 0, size: int = 16):
    """A folder shaped like a SavedModel; `tag` makes its bytes (and so its identity) differ."""
    os.makedirs(os.path.join(path, 'variables'), exist_ok=True)
    with open(os.path.join(path, 'saved_model.pb'), 'w') as handle:
        handle.write(f'graph {tag}')
    with open(os.path.join(path, 'variables', 'variables.index'), 'w') as handle:
        handle.write(f'index {tag}')
    for i in range(extra_files):
        with open(os.path.join(path, 'variables', f'shard-{i:05d}'), 'wb') as handle:
            handle.write(os.urandom(size))
    return str(path)


def _complete(version_dir, model_dir):
    return sorted(versions._files(version_dir)) == sorted(versions._files(model_dir))


def test_versions_are_integers_counting_up_from_one(tmp_path):
    base = str(tmp_path / 'serving')
    results = [versions.push(_fake_model(tmp_path / f'm{i}', str(i)), base, keep=10)
               for i in range(3)]
    assert [r.version for r in results] == [1, 2, 3]
    assert all(r.created for r in results)
    assert sorted(os.listdir(base)) == ['1', '2', '3', 'models.config']
    assert results[-1].path == os.path.join(base, '3')
    assert _complete(results[-1].path, str(tmp_path / 'm2'))


def test_next_version_follows_the_highest_even_a_timestamp(tmp_path):
    base = tmp_path / 'serving'
    _fake_model(base / '1796221291', 'stock pusher')  # what the stock Pusher left behind
    result = versions.push(_fake_model(tmp_path / 'm', 'new'), str(base), keep=5)
    assert result.version == 1796221292


def test_same_model_again_makes_no_new_version(tmp_path):
    base = str(tmp_path / 'serving')
    model = _fake_model(tmp_path / 'm', 'a')
    first = versions.push(model, base, keep=5)
    copy = _fake_model(tmp_path / 'copy', 'a')  # same bytes at another path: the same model
    second = versions.push(copy, base, keep=5)
    assert (second.version, second.created) == (first.version, False)
    assert sorted(os.listdir(base)) == ['1', 'models.config']


def test_older_copy_of_the_model_is_pushed_again_to_become_served(tmp_path):
    base = str(tmp_path / 'serving')
    a, b = _fake_model(tmp_path / 'a', 'a'), _fake_model(tmp_path / 'b', 'b')
    assert [versions.push(m, base, keep=5).version for m in (a, b, a)] == [1, 2, 3]


def test_retention_keeps_the_newest_n_and_never_the_served_one(tmp_path):
    base = str(tmp_path / 'serving')
    removed = []
    for i in range(6):
        result = versions.push(_fake_model(tmp_path / f'm{i}', str(i)), base, keep=2)
        removed.extend(result.removed)
    assert versions.list_versions(base) == [5, 6]
    assert removed == [1, 2, 3, 4]
    # keep=1 keeps exactly the served one.
    result = versions.push(_fake_model(tmp_path / 'm6', '6'), base, keep=1)
    assert versions.list_versions(base) == [7] and result.removed == (5, 6)
    with pytest.raises(ValueError, match='keep must be >= 1'):
        versions.push(str(tmp_path / 'm6'), base, keep=0)


def test_failure_after_copy_before_rename_leaves_only_complete_versions(tmp_path):
    base = str(tmp_path / 'serving')
    model = _fake_model(tmp_path / 'm', 'a', extra_files=3)
    versions.push(model, base, keep=5)
    other = _fake_model(tmp_path / 'other', 'b', extra_files=3)
    staged = versions.stage(other, base)  # the copy finished; the process dies before commit()
    assert os.path.isdir(staged)
    assert versions.list_versions(base) == [1]  # the staged copy is not a version
    assert _complete(os.path.join(base, '1'), model)
    result = versions.push(other, base, keep=5)  # the next push cleans up and completes
    assert result.version == 2 and not os.path.exists(staged)
    assert sorted(os.listdir(base)) == ['1', '2', 'models.config']
    assert _complete(result.path, other)


def test_not_a_saved_model_is_refused_without_leaving_anything(tmp_path):
    os.makedirs(tmp_path / 'empty')
    base = str(tmp_path / 'serving')
    with pytest.raises(ValueError, match='Not a SavedModel'):
        versions.push(str(tmp_path / 'empty'), base, keep=5)
    assert os.listdir(base) == []


_PUSH_FOREVER = textwrap.dedent('''
    import sys
    from core import versions
    model, base = sys.argv[1], sys.argv[2]
    print('ready', flush=True)
    while True:
        versions.push(model, base, keep=1000)
        versions.apply_retention(base, keep=1, served=max(versions.list_versions(base)))
        # Alternate contents so every push really copies.
        with open(model + '/saved_model.pb', 'a') as handle:
            handle.write('x')
''')


def _wait_for_staging(base, timeout=60.0):
    """Polls until a push has started copying into a staging folder."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        staging = [n for n in os.listdir(base) if n.startswith(versions.TMP_PREFIX)
                   and not n.startswith(versions.TMP_PREFIX + 'old-')]  # not a retention delete
        if any(os.path.exists(os.path.join(base, n, 'variables')) for n in staging):
            return
        time.sleep(0.001)
    raise AssertionError('no push started within the timeout')


def test_killing_pushes_midway_leaves_only_complete_versions(tmp_path):
    """SIGKILL a process that pushes a 300-file model in a loop, while it is copying."""
    base = str(tmp_path / 'serving')
    os.makedirs(base)
    model = _fake_model(tmp_path / 'm', 'a', extra_files=300, size=4096)
    script = tmp_path / 'push_forever.py'
    script.write_text(_PUSH_FOREVER)
    killed_mid_copy = 0
    for attempt in range(3):
        # A child of the warm interpreter (TensorFlow, which core.versions imports, imported
        # once), not a fresh `python` importing it for each of the three processes; it is
        # killed alike, mid-copy.
        out = tmp_path / f'push_forever{attempt}.out'
        process = warm_python.start([str(script), model, base], REPO,
                                    dict(os.environ, PYTHONPATH=REPO), str(out),
                                    str(tmp_path / 'push_forever.err'))
        deadline = time.monotonic() + 60
        while 'ready' not in (out.read_text() if out.exists() else ''):
            assert process.poll() is None and time.monotonic() < deadline, 'no pusher started'
            time.sleep(0.01)
        _wait_for_staging(base)
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=60) == -signal.SIGKILL
        killed_mid_copy += any(n.startswith(versions.TMP_PREFIX) for n in os.listdir(base))
        for version in versions.list_versions(base):
            files = versions._files(os.path.join(base, str(version)))
            assert len(files) == 302 and 'saved_model.pb' in files, (version, len(files))
    assert killed_mid_copy >= 1, 'no kill landed mid-copy; the test exercised nothing'
    result = versions.push(model, base, keep=1000)
    assert not [n for n in os.listdir(base) if n.startswith(versions.TMP_PREFIX)]
    assert _complete(result.path, model)


def _fake_version(serving_dir, name, complete=True):
    folder = os.path.join(serving_dir, name)
    os.makedirs(os.path.join(folder, 'variables'))
    if complete:
        open(os.path.join(folder, 'saved_model.pb'), 'wb').close()


def test_served_version_is_the_newest_complete_integer_version(tmp_path):
    assert versions.served_version(str(tmp_path / 'absent')) is None
    assert versions.served_version(str(tmp_path)) is None
    for name in ('9', '10', '2'):
        _fake_version(str(tmp_path), name)
    assert versions.served_version(str(tmp_path)) == 10  # numeric, not by name
    _fake_version(str(tmp_path), '11', complete=False)  # no graph file: TF Serving skips it
    _fake_version(str(tmp_path), '.tmp-push-12')
    open(tmp_path / '13', 'w').close()                  # a file, not a version folder
    assert versions.served_version(str(tmp_path)) == 10
