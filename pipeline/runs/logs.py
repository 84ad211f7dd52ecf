"""Where a run's output goes: its log file gets everything, the console only what people read.

TFX's launcher logs every ExecutionInfo and node proto at INFO level (thousands of lines per run)
which buries the progress lines people look for. Those dumps are dropped unless verbose is asked
for. The rest (TFX's INFO chatter, Beam's worker relays, TensorFlow's C++ start-up lines, Keras's
SavedModel dump) goes to `<output>/logs/<run>.log`, not to the console: `to_file` points file
descriptors 1 and 2 at the log, because much of it never passes through Python's sys.stdout or
logging (TensorFlow's C++ logging writes to fd 2, and Beam's worker processes inherit it). The
console keeps a descriptor of its own for the lines pipeline/local/console.py writes.
"""
import contextlib
import logging
import os
import sys
import threading
from typing import Iterator, TextIO

_MAX_LINES = 12  # longer INFO messages are proto dumps, not progress
_verbose = False


class _DropDumps(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        return record.getMessage().count('\n') < _MAX_LINES


def configure(verbose: bool = False) -> None:
    """Call once, before TensorFlow is imported, from the entry point."""
    global _verbose
    _verbose = verbose
    # TensorFlow's C++ start-up chatter (CUDA plugin registration on a CPU machine) is noise here.
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1' if verbose else '2')
    logging.basicConfig(level=logging.INFO, force=True,
                        format='%(asctime)s %(levelname).1s %(message)s', datefmt='%H:%M:%S')
    if not verbose:
        for handler in logging.getLogger().handlers:
            handler.addFilter(_DropDumps())
        # The report reads the training events; TensorBoard's reader logs each file it finishes.
        logging.getLogger('tensorboard').setLevel(logging.WARNING)
    from absl import logging as absl_logging  # after basicConfig, so absl uses our handler
    absl_logging.set_verbosity(absl_logging.INFO)


def is_verbose() -> bool:
    return _verbose


class _Follow(threading.Thread):
    """Copies a growing file to a descriptor (`--verbose`: the log streams to the console)."""

    def __init__(self, path: str, fd: int):
        super().__init__(name='log-follower', daemon=True)
        self._path, self._fd, self._done = path, fd, threading.Event()
        self._file = open(path, 'rb')
        self._file.seek(0, os.SEEK_END)

    def run(self) -> None:
        while not self._done.wait(0.2):
            self._copy()

    def _copy(self) -> None:
        while chunk := self._file.read(65536):
            os.write(self._fd, chunk)

    def stop(self) -> None:
        self._done.set()
        self.join()
        self._copy()  # whatever was written after the last poll
        self._file.close()


@contextlib.contextmanager
def to_file(path: str, verbose: bool = False) -> Iterator[TextIO]:
    """Sends descriptors 1 and 2 (and so sys.stdout, sys.stderr and child processes) to the
    file path, appending, until the block ends; yields a text stream to the original stdout.
    With verbose the file is also copied to the console as it grows."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    console = os.fdopen(os.dup(saved[0]), 'w', buffering=1, encoding='utf-8', errors='replace')
    follower = _Follow(path, console.fileno()) if verbose else None
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    if follower:
        follower.start()
    try:
        yield console
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        console.flush()
        if follower:
            follower.stop()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        console.close()
