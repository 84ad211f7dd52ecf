"""A run whose object store stops answering ends by itself, within a bound, saying so in one line.

No TFX imports. Without this, a store that dies or hangs during a run holds the run for as long
as its clients' own retry policies last, per object: tensorflow-io's default is 5-minute timeouts
and 11 attempts (a Stat is two requests, so about 51 s against a refused port and hours against
a hung one), and Beam's S3 IO wraps boto3's retries in its own 7 retries with up to ~10 minutes
of backoff. Meanwhile the run holds its output's lock, so every later scheduled run waits too
(docs/storage.md, "When the store fails"). Two parts:

1. **The clients' own bounds** (`client_variables`, put into the environment by
   core/storage.py's enable(), so every process of the run inherits them): short connect and
   request timeouts for tensorflow-io, and the AWS SDKs' "standard" retry mode with a fixed
   number of attempts, which both tensorflow-io's AWS C++ SDK and botocore (under Beam) read
   from AWS_RETRY_MODE and AWS_MAX_ATTEMPTS. The attempts and their backoff still ride out a
   blip of about 30 s. A variable the user set wins.
2. **The watch** (`Watch`): a thread that asks the store (a HEAD of each bucket, short timeouts,
   one attempt) every few seconds. A blip shorter than the bound is forgotten at the next
   answer; once the store has not answered for `bound` seconds (default 120, `--store-timeout`),
   it calls the run's `on_down` once with a `StoreDown`, and the run records the failure and
   ends its process tree (pipeline/local/run.py, pipeline/kubeflow/entrypoint.py). That is the
   guarantee: no client's policy (Beam's retry decorator cannot be configured) can hold the run
   longer than the bound plus one probe.

`doing(text)` names the operation in progress for the line (the Pusher's copy sets it); without
one the run names the stage's own work on the store.
"""
import contextlib
import dataclasses
import logging
import os
import signal
import threading
import time
from typing import Callable, Iterable, Iterator, List, Optional, Tuple

DEFAULT_BOUND_SECONDS = 120.0
# How a Kubeflow task learns --store-timeout: the compiled spec puts it in the container's
# environment (pipeline/kubeflow/compiler.py object_store_env) when it is not the default.
BOUND_VARIABLE = 'STORE_TIMEOUT_SECONDS'
# A blip the clients ride out: the store back within this, a run goes on (retries with backoff).
BLIP_SECONDS = 30.0
PROBE_INTERVAL_SECONDS = 5.0
PROBE_TIMEOUT_SECONDS = 5.0
# sysexits.h EX_TEMPFAIL: a temporary failure, to be retried (a scheduler's retry policy may
# key on it); a stage that fails for any other reason exits 1.
EXIT_STORE_DOWN = 75

# Per client, what a store that stops answering costs one operation (measured in
# docs/benchmarks.md, "When the store fails"). tensorflow-io: S3_CONNECT_TIMEOUT_MSEC and
# S3_REQUEST_TIMEOUT_MSEC (tensorflow_io/core/filesystems/s3/s3_filesystem.cc
# GetDefaultClientConfig, 300,000 ms each by default; the request timeout is curl's low-speed
# limit, so a slow transfer that moves keeps going); its AWS SDK reads AWS_RETRY_MODE and
# AWS_MAX_ATTEMPTS (aws-cpp-sdk-core ClientConfiguration InitRetryStrategy: without "standard"
# it keeps the legacy 11 attempts whatever AWS_MAX_ATTEMPTS says). botocore reads the same two
# variables; its 60-s timeouts have no variable, and Beam's S3 IO takes no client config.
CLIENT_VARIABLES = {
    'S3_CONNECT_TIMEOUT_MSEC': '10000',
    # Longer than a SIGSTOPped store's usual pause, so a request waits it out rather than retry.
    'S3_REQUEST_TIMEOUT_MSEC': '20000',
    'AWS_RETRY_MODE': 'standard',
    # The C++ SDK's standard backoff is random(0, 1) x 2^attempt s, at most 20 s: 8 attempts
    # ride out a store restarting (refused) for about 30 s or more; an `exists` (two requests)
    # took 92 s to give up against a refused port. botocore's standard backoff is much shorter
    # (8 attempts: 4 s), which is why storage.exists/children retry on their own.
    'AWS_MAX_ATTEMPTS': '8',
}

_doing: List[str] = []
_log = logging.getLogger(__name__)


def bound_from_env(environ=None) -> float:
    """The bound a process started without flags uses (a Kubeflow task): BOUND_VARIABLE, else
    the default."""
    environ = os.environ if environ is None else environ
    try:
        seconds = float(environ.get(BOUND_VARIABLE) or DEFAULT_BOUND_SECONDS)
    except ValueError:
        seconds = DEFAULT_BOUND_SECONDS
    return seconds if seconds > 0 else DEFAULT_BOUND_SECONDS


def client_variables(environ) -> dict:
    """CLIENT_VARIABLES that environ does not set already (the user's own win)."""
    return {k: v for k, v in CLIENT_VARIABLES.items() if k not in environ}


@contextlib.contextmanager
def doing(text: str) -> Iterator[None]:
    """Names the store operation in progress (e.g. 'writing serving/7/'), for the line a
    failure prints."""
    _doing.append(text)
    try:
        yield
    finally:
        _doing.remove(text)


def current_operation() -> Optional[str]:
    return _doing[-1] if _doing else None


@dataclasses.dataclass(frozen=True)
class StoreDown:
    """The store stopped answering: where, since how long, and the last probe's error."""
    endpoint: str
    bucket: str
    seconds: float
    error: str

    def line(self, stage: Optional[str] = None, operation: Optional[str] = None) -> str:
        """The one line a run ends with, e.g. "Pusher: the store at http://h:8333 (bucket ml)
        did not answer for 120 s while writing serving/7/ (...); ..."."""
        where = f'{stage}: ' if stage else ''
        what = f' while {operation}' if operation else ''
        return (f'{where}the store at {self.endpoint} (bucket {self.bucket}) did not answer for '
                f'{self.seconds:.0f} s{what} ({self.error}); nothing half-written is used: run '
                'again once the store is back')


def endpoint(environ=None) -> str:
    environ = os.environ if environ is None else environ
    return environ.get('AWS_ENDPOINT_URL') or 'the AWS S3 endpoint'


def probe(buckets: Iterable[str], timeout: float = PROBE_TIMEOUT_SECONDS
          ) -> Optional[Tuple[str, str]]:
    """(bucket, error) for the first bucket whose store does not answer, or None when all do.
    Any answer below 500 counts (a 403 or 404 is the store answering); no answer, a timeout or a
    5xx does not."""
    from botocore import exceptions  # pylint: disable=import-outside-toplevel
    from core import storage  # pylint: disable=import-outside-toplevel  (it imports this module)
    client = storage.s3_client(timeout)
    for bucket in buckets:
        try:
            client.head_bucket(Bucket=bucket)
        except exceptions.ClientError as error:
            status = error.response.get('ResponseMetadata', {}).get('HTTPStatusCode') or 0
            if status >= 500:
                return bucket, f'HTTP {status}'
        except (exceptions.BotoCoreError, OSError) as error:
            return bucket, ' '.join(str(error).split())[:160] or type(error).__name__
    return None


def probe_interval(bound: float) -> float:
    """How often the watch asks: every PROBE_INTERVAL_SECONDS, or a tenth of a shorter bound
    (at least 1 s). The watch sees an outage up to one interval late and ends the run at the
    first probe past the bound, so a fixed 5 s added up to 10 s to a 12-s bound; a tenth keeps
    the overshoot in proportion (the default bound's interval is unchanged)."""
    return max(1.0, min(PROBE_INTERVAL_SECONDS, bound / 10))


class Watch:
    """Asks the store every `interval` s (probe_interval(bound) by default); calls
    on_down(StoreDown) once when it has not answered for `bound` s, counted from the start of
    the first probe that failed."""

    def __init__(self, buckets: Iterable[str], bound: float,
                 on_down: Callable[[StoreDown], None], interval: Optional[float] = None,
                 timeout: float = PROBE_TIMEOUT_SECONDS,
                 ask: Callable[..., Optional[Tuple[str, str]]] = probe):
        self.buckets, self.bound, self.on_down = sorted(set(buckets)), bound, on_down
        self.interval = probe_interval(bound) if interval is None else interval
        self.timeout, self._ask = timeout, ask
        self._since: Optional[float] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> 'Watch':
        if self.buckets:
            self._thread = threading.Thread(target=self._loop, name='store-watch', daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def check(self) -> Optional[StoreDown]:
        """One probe now: a StoreDown (seconds since the first failed probe) when the store does
        not answer, else None (and any earlier failure is forgotten). While the store is already
        failing, the probe waits for an answer only until the bound is reached (at least 1 s):
        a hung store's full 5-s timeout from the last probe before the bound ended the run up to
        that much later."""
        if not self.buckets:
            return None
        started = time.monotonic()
        timeout = self.timeout
        if self._since is not None:
            timeout = min(timeout, max(1.0, self._since + self.bound - started))
        failed = self._ask(self.buckets, timeout)
        if failed is None:
            if self._since is not None:
                _log.warning('The store at %s answers again after %.0f s', endpoint(),
                             time.monotonic() - self._since)
            self._since = None
            return None
        if self._since is None:
            self._since = started
            _log.warning('The store at %s does not answer (bucket %s: %s); the run ends if it '
                         'does not answer for %.0f s', endpoint(), failed[0], failed[1],
                         self.bound)
        return StoreDown(endpoint(), failed[0], time.monotonic() - self._since, failed[1])

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                down = self.check()
            except Exception:  # pylint: disable=broad-except  (a bug here must not end the run)
                _log.exception('store probe failed')
                continue
            if down is not None and down.seconds >= self.bound and not self._stop.is_set():
                self._stop.set()
                self.on_down(down)
                return


def descendants(pid: Optional[int] = None) -> List[int]:
    """The pids of every process below pid (this process by default), children first; read
    from /proc, so it sees Beam's and the trainer's workers whatever group they are in."""
    pid = os.getpid() if pid is None else pid
    children = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/stat', 'rb') as handle:
                # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
                parent = int(handle.read().rsplit(b')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(name))
    found, queue = [], list(children.get(pid, ()))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue.extend(children.get(child, ()))
    return found


def kill_descendants() -> List[int]:
    """SIGKILLs every process below this one (they would outlive the run, and a forked one
    holds the output lock's descriptor); returns their pids. They are stopped first and the
    tree read again, so one forked meanwhile is seen before its parent dies and it is
    re-parented out of the tree."""
    found = descendants()
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        if sig == signal.SIGSTOP:
            found = list(dict.fromkeys(found + descendants()))
    return found
