"""Shared fixtures: small image folders built from the embedded digits; absl's log level and
TensorFlow's global seed kept from leaking between tests; the groups `make test` runs in
parallel by, and the seconds each took."""
import collections
import logging
import os
import sys

import pytest

from helpers import DIGITS, copy_digits

ROOT = os.path.dirname(os.path.abspath(__file__))
_ABSL_LEVEL = logging.getLogger('absl').level   # before any test ran (_process_state_restored)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items):
    """Groups for `make test`'s two pytest-xdist workers (--dist loadgroup: a group runs in one
    worker). Each file is a group, so a run a file's tests share (a module-scoped fixture) is
    made once; every test of the session run `served_digits` (tests/e2e/conftest.py) is in one
    group, so that run is made once too. Without xdist the marks do nothing.

    Under xdist the groups that run pipelines or train in processes (marked e2e or slow) come
    first, in their own order: the many short files then fill both workers to the end, instead
    of one long scenario running alone at the end (hence --no-loadscope-reorder, the Makefile)."""
    groups, heavy = {}, set()
    for item in items:
        shared = 'served_digits' in getattr(item, 'fixturenames', ())
        groups[item] = 'served_digits' if shared else os.path.relpath(str(item.path), ROOT)
        if item.get_closest_marker('cluster'):
            # One worker runs them all, in order: they share the cluster's cluster-scoped
            # objects (the runtime, the CRDs) and its two cores.
            groups[item] = 'cluster'
        item.add_marker(pytest.mark.xdist_group(groups[item]))
        if any(item.get_closest_marker(m) for m in ('e2e', 'slow', 'cluster')):
            heavy.add(groups[item])
    if os.environ.get('PYTEST_XDIST_WORKER'):  # every worker collects, and sorts alike
        items.sort(key=lambda item: groups[item] not in heavy)  # stable: file order kept


_GROUP_SECONDS = collections.Counter()


def pytest_runtest_logreport(report):
    """Each test's setup, call and teardown seconds, added to its group's (xdist names the group
    after '@' in the id it reports; without xdist, the file). Runs where the reports arrive: the
    controlling process under xdist."""
    nodeid = report.nodeid
    group = nodeid.rsplit('@', 1)[1] if '@' in nodeid else nodeid.split('::', 1)[0]
    _GROUP_SECONDS[group] += report.duration


def pytest_terminal_summary(terminalreporter):
    """Where the suite's time goes, per group: a group runs in one worker, so its sum is also
    the least wall time it can take (docs/testing.md, "How long it takes")."""
    if not _GROUP_SECONDS:
        return
    total = sum(_GROUP_SECONDS.values())
    terminalreporter.write_sep('=', f'seconds per group ({total:.0f} s of worker time)')
    for group, seconds in _GROUP_SECONDS.most_common(30):
        terminalreporter.write_line(f'{seconds:8.1f} s {100 * seconds / total:5.1f}%  {group}')
    rest = len(_GROUP_SECONDS) - 30
    if rest > 0:
        left = total - sum(s for _, s in _GROUP_SECONDS.most_common(30))
        terminalreporter.write_line(f'{left:8.1f} s {100 * left / total:5.1f}%  '
                                    f'the other {rest} groups')


@pytest.fixture
def small_images(tmp_path):
    """3 classes x 5 digits: a handful of real images."""
    return copy_digits(str(tmp_path / 'images'), per_class=5)


@pytest.fixture
def png_bytes():
    folder = os.path.join(DIGITS, '0')
    with open(os.path.join(folder, sorted(os.listdir(folder))[0]), 'rb') as handle:
        return handle.read()


@pytest.fixture(autouse=True)
def _process_state_restored():
    """After each test, the absl logger's level is put back to the session's start. TensorFlow's
    autotrackable._trackable_children (run by every SavedModel export) sets absl's verbosity to
    FATAL and back to what get_verbosity() returned: the root logger's effective WARNING, now
    set explicitly. Left so, a later test's caplog.at_level('INFO') no longer sees absl INFO
    lines (production sets INFO explicitly first: pipeline/runs/logs.py, launch/worker.py). The
    level is the session's, not the test's start: a module or session fixture (an e2e run, an
    export) runs before this fixture and would otherwise be "restored" to.

    And there is no global TensorFlow seed after each test, as in a fresh process: a test that
    trains sets one (training/job.py seeds the run), and with it tf.data's seeded shuffles take
    another order, so an in-process stream no longer matches the same stream in a fresh process."""
    yield
    logging.getLogger('absl').setLevel(_ABSL_LEVEL)
    if 'tensorflow' in sys.modules:  # only tests that loaded it can have set a seed
        sys.modules['tensorflow'].random.set_seed(None)


@pytest.fixture(scope='session')
def seaweedfs():
    """SeaweedFS serving S3 on the loopback for this test process (tests/support/seaweedfs.py)."""
    import seaweedfs as seaweedfs_lib
    server = seaweedfs_lib.Server()
    yield server
    server.stop()


@pytest.fixture
def s3(seaweedfs, monkeypatch):
    """A bucket of this test's own on the SeaweedFS server, and this process configured for it
    as a user's would be: the standard AWS variables, then core/storage.py (the
    variables it derives are set here too, so they are undone after the test)."""
    from core import storage
    for key, value in seaweedfs.env().items():
        monkeypatch.setenv(key, value)
    for key, value in storage.tensorflow_variables(os.environ).items():
        monkeypatch.setenv(key, value)
    storage.enable()
    return S3Bucket(seaweedfs, seaweedfs.new_bucket())


@pytest.fixture
def relay(s3, seaweedfs, monkeypatch):
    """A relay in front of the test's store that answers chosen GETs once with a 500
    (tests/support/s3_fault_proxy.py); this process's reads through boto3, and a new process's
    through tensorflow-io too, go through it from now on."""
    from s3_fault_proxy import FailOnceRelay
    server = FailOnceRelay(seaweedfs.endpoint)
    monkeypatch.setenv('AWS_ENDPOINT_URL', server.endpoint)
    monkeypatch.setenv('S3_ENDPOINT', server.endpoint)
    yield server
    server.stop()


class S3Bucket:
    """A test's bucket: `uri(key)` names a path in it; the server's client lists what is there."""

    def __init__(self, server, name: str):
        self.server, self.name = server, name

    def uri(self, *parts: str) -> str:
        return '/'.join(('s3:/', self.name) + parts)

    def keys(self, prefix: str = ''):
        return self.server.keys(self.name, prefix)
