"""Unit tests of `runner.py --rollback VERSION`: a kept version served again as a new highest
version, byte for byte, atomically, under the output lock, and recorded for the history."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import runner
from core import versions
from pipeline.runs import rollback, runlock

from helpers import REPO_ROOT


def _model(path, tag):
    os.makedirs(os.path.join(path, 'variables', 'deep'))
    for rel, text in (('saved_model.pb', f'graph {tag}'), ('variables/variables.index', tag),
                      ('variables/deep/x.bin', tag * 100)):
        with open(os.path.join(path, rel), 'w') as handle:
            handle.write(text)
    return str(path)


@pytest.fixture
def output(tmp_path):
    """An output folder whose serving/ holds versions 1, 2, 3 (3 served)."""
    out = tmp_path / 'out'
    for tag in ('a', 'b', 'c'):
        versions.push(_model(tmp_path / tag, tag), str(out / 'serving'), keep=5)
    return str(out)


def _bytes(folder):
    return {rel: open(os.path.join(folder, rel), 'rb').read() for rel in versions._files(folder)}


def test_a_kept_version_becomes_the_new_highest_with_identical_bytes(output, capsys):
    assert runner.main(['--rollback', '1', '--output', output]) == 0
    serving = os.path.join(output, 'serving')
    # Nothing deleted, no temp left.
    assert sorted(os.listdir(serving)) == ['1', '2', '3', '4', 'models.config']
    assert versions.served_version(serving) == 4
    assert _bytes(os.path.join(serving, '4')) == _bytes(os.path.join(serving, '1'))
    said = capsys.readouterr().out
    assert said.startswith('Rolled back: version 4 = copy of version 1 (was serving 3)')
    record, = rollback.read_rollbacks(output)
    assert (record['version'], record['copy_of'], record['previously_served']) == (4, 1, 3)
    assert record['digest'] == versions.model_digest(os.path.join(serving, '1'))
    # Again: the served version 4 holds these bytes already; no version 5.
    assert runner.main(['--rollback', '1', '--output', output]) == 2
    assert capsys.readouterr().err == ('error: the served version 4 already holds the same '
                                       'model as version 1; nothing to do\n')
    assert versions.served_version(serving) == 4
    # A later push's retention keeps the served version, whatever its number.
    assert 4 not in versions.apply_retention(serving, keep=1, served=4)


def test_a_version_that_is_not_kept_is_refused_with_the_kept_ones(output, capsys):
    assert runner.main(['--rollback', '7', '--output', output]) == 2
    err = capsys.readouterr().err
    assert err == (f'error: version 7 is not kept under {output}/serving; kept: 1, 2, 3\n')
    assert sorted(os.listdir(os.path.join(output, 'serving'))) == [
        '1', '2', '3', 'models.config']
    assert rollback.read_rollbacks(output) == []


def test_the_served_version_and_a_missing_serving_folder_are_refused(output, tmp_path, capsys):
    assert runner.main(['--rollback', '3', '--output', output]) == 2
    assert 'version 3 is already the served one' in capsys.readouterr().err
    assert runner.main(['--rollback', '1', '--output', str(tmp_path / 'empty')]) == 2
    assert 'nothing to roll back: no serving folder' in capsys.readouterr().err


def test_a_failed_copy_leaves_no_version_and_no_staging_folder(output, monkeypatch):
    def broken_commit(staged, base_dir):
        raise OSError('disk full')
    monkeypatch.setattr(versions, 'commit', broken_commit)
    with pytest.raises(OSError):
        rollback.rollback(output, 1)
    assert sorted(os.listdir(os.path.join(output, 'serving'))) == [
        '1', '2', '3', 'models.config']
    assert not os.path.exists(os.path.join(output, rollback.ROLLBACKS_FILE))


def test_a_rollback_never_races_a_run_and_with_no_wait_refuses_while_one_runs(output, capsys):
    holder = subprocess.Popen([sys.executable, '-c', textwrap.dedent(f'''
        import sys, time
        sys.path.insert(0, {REPO_ROOT!r})
        from pipeline.runs import runlock
        lock = runlock.OutputLock({output!r}); lock.acquire(True); lock.record('run-x')
        print('held', flush=True); time.sleep(60)''')], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'held'
        assert runner.main(['--rollback', '1', '--output', output, '--no-wait']) == 2
        err = capsys.readouterr().err
        assert err.startswith(f'error: {output} is in use by run run-x (pid {holder.pid})')
        assert sorted(os.listdir(os.path.join(output, 'serving'))) == [
        '1', '2', '3', 'models.config']
    finally:
        holder.kill()
        holder.wait()
    assert runner.main(['--rollback', '1', '--output', output, '--no-wait']) == 0
    lock = runlock.OutputLock(output)  # released again
    lock.acquire(False)
    lock.release()


def test_the_output_comes_from_the_config_file_when_not_given(output, tmp_path):
    config = tmp_path / 'settings.toml'
    config.write_text(f'output_dir = {json.dumps(output)}\n')
    assert rollback.output_folder(None, str(config)) == output
    assert rollback.output_folder('x', str(config)) == os.path.abspath('x')
