"""Unit tests of the output lock: one run per output folder, a second waits or gives up."""
import os
import threading

import pytest

from pipeline.runs import runlock


def test_a_second_run_that_does_not_wait_is_told_who_holds_the_output(tmp_path):
    first = runlock.OutputLock(str(tmp_path))
    first.acquire(wait=False)
    first.record('2026-01-01T00:00:00')
    with pytest.raises(runlock.OutputBusy) as busy:
        runlock.OutputLock(str(tmp_path)).acquire(wait=False)
    assert str(busy.value) == f'run 2026-01-01T00:00:00 (pid {os.getpid()})'
    first.release()
    second = runlock.OutputLock(str(tmp_path))
    second.acquire(wait=False)  # free again once released
    second.release()


def test_a_second_run_that_waits_says_so_once_and_runs_when_the_first_ends(tmp_path):
    first = runlock.OutputLock(str(tmp_path))
    first.acquire(wait=False)
    first.record('run-a')
    waited, acquired = [], threading.Event()
    second = runlock.OutputLock(str(tmp_path))

    def take():
        second.acquire(wait=True, on_wait=waited.append)
        acquired.set()

    thread = threading.Thread(target=take)
    thread.start()
    while not waited:  # the waiter reports the holder before it blocks
        assert thread.is_alive()
        threading.Event().wait(0.01)
    assert waited == [f'run run-a (pid {os.getpid()})'] and not acquired.is_set()
    first.release()
    thread.join(timeout=30)
    assert acquired.is_set() and waited == [f'run run-a (pid {os.getpid()})']
    second.record('run-b')
    with pytest.raises(runlock.OutputBusy, match='run run-b'):
        runlock.OutputLock(str(tmp_path)).acquire(wait=False)
    second.release()


def test_a_holder_that_has_not_named_itself_yet_is_another_run(tmp_path):
    stale = tmp_path / runlock.LOCK_NAME
    stale.write_text('123 old-run\n')  # left by a run that ended
    first = runlock.OutputLock(str(tmp_path))
    first.acquire(wait=False)
    with pytest.raises(runlock.OutputBusy, match='^another run$'):
        runlock.OutputLock(str(tmp_path)).acquire(wait=False)
    first.release()
