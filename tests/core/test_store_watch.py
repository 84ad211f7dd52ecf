"""core/store_watch.py: what counts as the store answering, the watch's bound and its blips, the
one line, and the processes a run leaves. Real sockets on the loopback: a small HTTP server
stands for the store's S3 endpoint (any HTTP answer is the store answering), a port nobody
listens on for a dead store, a socket that never accepts for a hung (SIGSTOPped) one."""
import http.server
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from core import store_watch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Store:
    """An HTTP endpoint that answers every request with `status`, and can go away and come
    back on the same port."""

    def __init__(self, status: int = 200):
        self.status = status
        self.port = None
        self._server = None
        self.start()

    def start(self):
        status = self.status

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self):  # noqa: N802  (http.server's name)
                self.send_response(status)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', self.port or 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    @property
    def endpoint(self):
        return f'http://127.0.0.1:{self.port}'


@pytest.fixture
def aws(monkeypatch):
    """Keys and region as a user sets them; each test points AWS_ENDPOINT_URL somewhere."""
    for key, value in {'AWS_ACCESS_KEY_ID': 'k', 'AWS_SECRET_ACCESS_KEY': 's',
                       'AWS_REGION': 'us-east-1'}.items():
        monkeypatch.setenv(key, value)
    return monkeypatch


def _refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def test_any_answer_below_500_is_the_store_answering(aws):
    for status, answered in ((200, True), (403, True), (404, True), (503, False)):
        store = _Store(status)
        aws.setenv('AWS_ENDPOINT_URL', store.endpoint)
        try:
            found = store_watch.probe(['ml'], timeout=2)
        finally:
            store.stop()
        assert (found is None) == answered, (status, found)
        if not answered:
            assert found == ('ml', 'HTTP 503')


def test_a_dead_or_hung_store_does_not_answer(aws):
    aws.setenv('AWS_ENDPOINT_URL', f'http://127.0.0.1:{_refused_port()}')
    bucket, error = store_watch.probe(['ml'], timeout=2)
    assert bucket == 'ml' and 'connect' in error.lower()
    # Accepted by the kernel into the backlog, never answered: what a SIGSTOPped store does.
    hung = socket.socket()
    hung.bind(('127.0.0.1', 0))
    hung.listen(8)
    aws.setenv('AWS_ENDPOINT_URL', f'http://127.0.0.1:{hung.getsockname()[1]}')
    try:
        bucket, error = store_watch.probe(['ml'], timeout=1)
    finally:
        hung.close()
    assert bucket == 'ml' and ('timeout' in error.lower() or 'timed out' in error.lower()), error


def test_the_watch_forgets_a_blip_and_ends_once_after_the_bound(aws):
    store = _Store()
    aws.setenv('AWS_ENDPOINT_URL', store.endpoint)
    calls, probes = [], []
    ended = threading.Event()

    def ask(buckets, timeout):   # the real probe, its start and end recorded
        started = time.monotonic()
        try:
            return store_watch.probe(buckets, timeout)
        finally:
            probes.append((started, time.monotonic()))

    # A bound well above the blip and probe timeouts a busy machine meets (two pytest workers
    # beside a cluster): the blip must be forgotten however slowly the probes come back.
    watch = store_watch.Watch(['ml', 'landing'], bound=8.0,
                              on_down=lambda down: (calls.append(down), ended.set()),
                              interval=0.2, timeout=2.0, ask=ask).start()
    try:
        time.sleep(0.6)
        store.stop()          # a blip well under the bound...
        time.sleep(1.0)
        store.start()         # ...back on the same port
        deadline = time.monotonic() + 5
        while watch.check() is not None:
            assert time.monotonic() < deadline, 'the store, back, did not answer in 5 s'
        assert calls == []
        stopping = time.monotonic()
        store.stop()          # gone for good
        # The product's bound is 8 s here; the margin is for a busy machine, not a tuning.
        assert ended.wait(60)
        ended_at = time.monotonic()
    finally:
        watch.stop()
    time.sleep(0.5)
    assert len(calls) == 1
    down = calls[0]
    # The bound counts from the start of the first failed probe, which may have begun before
    # the stop and failed because of it (a probe builds its client first: tenths of a second on
    # a busy machine). So the outage is timed from the stop or from the start of a probe then
    # in flight, whichever came first.
    gone = min([stopping] + [start for start, end in probes if start < stopping < end])
    assert down.seconds >= 8.0 and ended_at - gone >= 8.0
    assert (down.endpoint, down.bucket) == (store.endpoint, 'landing')  # the first one asked


def test_the_watch_asks_every_5_s_or_a_tenth_of_a_shorter_bound():
    assert store_watch.Watch(['ml'], 120.0, print).interval == 5.0   # the default bound's
    assert store_watch.Watch(['ml'], 12.0, print).interval == 1.2
    assert store_watch.Watch(['ml'], 3.0, print).interval == 1.0
    assert store_watch.Watch(['ml'], 12.0, print, interval=0.2).interval == 0.2


def test_a_failing_stores_probe_waits_for_an_answer_only_until_the_bound():
    timeouts = []

    def ask(buckets, timeout):
        timeouts.append(timeout)
        return 'ml', 'Read timeout'
    watch = store_watch.Watch(['ml'], 3.0, print, interval=1.0, timeout=5.0, ask=ask)
    watch.check()           # the first failure: the probe's own timeout
    time.sleep(0.5)
    watch.check()           # 0.5 s into the outage: until the bound, 2.5 s
    watch._since -= 10      # pylint: disable=protected-access  (past the bound: at least 1 s)
    watch.check()
    assert timeouts[0] == 5.0 and 1.0 < timeouts[1] <= 2.5 and timeouts[2] == 1.0, timeouts


def test_the_line_names_the_store_bucket_stage_and_operation():
    down = store_watch.StoreDown('http://10.0.0.5:8333', 'ml', 121.4, 'Connect timeout')
    line = down.line('Pusher', 'writing s3://ml/serving/7/')
    assert line.startswith('Pusher: the store at http://10.0.0.5:8333 (bucket ml) did not '
                           'answer for 121 s while writing s3://ml/serving/7/ (Connect timeout)')
    assert '\n' not in line
    assert store_watch.StoreDown('e', 'b', 5, 'x').line().startswith('the store at e (bucket b)')
    with store_watch.doing('writing s3://ml/serving/7/'):
        with store_watch.doing('inner'):
            assert store_watch.current_operation() == 'inner'
        assert store_watch.current_operation() == 'writing s3://ml/serving/7/'
    assert store_watch.current_operation() is None


def test_client_variables_leave_the_users_own():
    assert store_watch.client_variables({}) == store_watch.CLIENT_VARIABLES
    kept = store_watch.client_variables({'AWS_MAX_ATTEMPTS': '2'})
    assert 'AWS_MAX_ATTEMPTS' not in kept and kept['AWS_RETRY_MODE'] == 'standard'


_TREE = textwrap.dedent('''
    import subprocess, sys, time
    from core import store_watch
    # A child with a child of its own, and one in a session of its own (as Beam's and the
    # trainer's workers may be): all are below this process.
    subprocess.Popen([sys.executable, '-c', 'import subprocess, time; '
                      'subprocess.Popen(["sleep", "300"]); time.sleep(300)'])
    subprocess.Popen(['sleep', '300'], start_new_session=True)
    time.sleep(1.5)
    found = store_watch.descendants()
    print(' '.join(map(str, found)), flush=True)
    killed = store_watch.kill_descendants()
    print(' '.join(map(str, killed)), flush=True)
''')


def test_kill_descendants_leaves_no_process_of_the_run():
    result = subprocess.run([sys.executable, '-c', _TREE], cwd=REPO, capture_output=True,
                            text=True, timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert result.returncode == 0, result.stderr[-2000:]
    found, killed = ([int(p) for p in line.split()] for line in result.stdout.splitlines())
    assert len(found) == 3 and set(killed) == set(found)
    deadline = time.monotonic() + 30
    alive = found
    while alive and time.monotonic() < deadline:
        alive = [p for p in found if _alive(p)]
        time.sleep(0.1)
    assert not alive


def _alive(pid: int) -> bool:
    try:
        with open(f'/proc/{pid}/stat') as handle:
            return handle.read().rsplit(')', 1)[1].split()[0] != 'Z'  # a zombie has ended
    except FileNotFoundError:
        return False
