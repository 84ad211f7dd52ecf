"""tests/support/real_cluster.py's wait for the cluster `make test` brings up beside pytest: a
cluster test waits while the `up` named in CLUSTER_UP_PID is at work, and fails at once, saying
where `up` printed, when no `up` is (the cluster is not there and nothing is bringing it)."""
import os
import subprocess
import sys

import pytest

import real_cluster


def _answers_after(monkeypatch, calls: int) -> list:
    """cluster.running() false for `calls` calls, then true; returns the calls' log."""
    seen = []

    def running(where):
        seen.append(where)
        return len(seen) > calls
    monkeypatch.setattr(real_cluster.cluster, 'running', running)
    monkeypatch.setattr(real_cluster.time, 'sleep', lambda seconds: None)
    return seen


def test_a_cluster_test_waits_while_the_up_is_at_work(monkeypatch):
    seen = _answers_after(monkeypatch, 3)
    monkeypatch.setenv('CLUSTER_UP_PID', str(os.getpid()))  # alive: at work
    assert real_cluster.kubeconfig() == real_cluster.WHERE.kubeconfig
    assert len(seen) == 4


def test_without_an_up_at_work_it_fails_at_once_naming_the_log(monkeypatch):
    ended = subprocess.Popen([sys.executable, '-c', 'pass'])   # an `up` that has ended
    ended.wait()
    for pid in (None, '', str(ended.pid)):   # no `up` named (a cluster test run alone), ended
        seen = _answers_after(monkeypatch, 1000)
        if pid is None:
            monkeypatch.delenv('CLUSTER_UP_PID', raising=False)
        else:
            monkeypatch.setenv('CLUSTER_UP_PID', pid)
        with pytest.raises(RuntimeError, match=r'not running.*\.tools/cluster-up\.log'):
            real_cluster.kubeconfig()
        assert len(seen) == 1


def test_an_up_that_never_ends_fails_after_the_bound(monkeypatch):
    seen = _answers_after(monkeypatch, 10 ** 9)
    monkeypatch.setenv('CLUSTER_UP_PID', str(os.getpid()))
    clock = iter(range(0, 10 ** 6, 100))
    monkeypatch.setattr(real_cluster.time, 'monotonic', lambda: next(clock))
    with pytest.raises(RuntimeError, match=f'did not come up within {real_cluster.UP_SECONDS} s'):
        real_cluster.kubeconfig()
    assert 0 < len(seen) <= real_cluster.UP_SECONDS // 100 + 2
