"""One local run per output folder at a time: an advisory lock on `<output>/run.lock`.

Two runs into one output would share its ML Metadata store, checkpoints and serving/ folder:
both could train from the same checkpoints, and each push would pick "the next version" from
a folder the other is writing. The lock is fcntl.flock on a file in the output folder: the
kernel releases it when its holder exits, however it exits (even SIGKILL), so a crashed run
never leaves a stale lock. The holder writes its pid and run id into the file, so whoever
waits for it, or gives up, can say which run holds the output.
"""
import fcntl
import os
import sys
from typing import Callable, Optional, Tuple

LOCK_NAME = 'run.lock'


class OutputBusy(Exception):
    """The output is locked by another run and the caller chose not to wait."""


class OutputLock:
    """Holds the lock of one output folder until release() or the process ends."""

    def __init__(self, output_dir: str):
        self.path = os.path.join(output_dir, LOCK_NAME)
        self._fd: Optional[int] = None

    def acquire(self, wait: bool, on_wait: Callable[[str], None] = lambda holder: None) -> None:
        """Takes the lock. When another run holds it: raises OutputBusy naming the holder if
        not wait, else calls on_wait(holder) once and blocks until that run ends."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            if not wait:
                os.close(fd)
                raise OutputBusy(holder) from None
            on_wait(holder)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:  # Ctrl-C while waiting: nothing is held
                os.close(fd)
                raise
        os.ftruncate(fd, 0)  # the previous holder's name is stale until record()
        self._fd = fd

    def record(self, run_id: str) -> None:
        """Writes who holds the lock, for runs that find it taken."""
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f'{os.getpid()} {run_id}\n'.encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor releases the flock
            self._fd = None

    @staticmethod
    def _holder(fd: int) -> str:
        # The holder writes right after it takes the lock; in between the file may be empty.
        text = os.pread(fd, 200, 0).decode(errors='replace').split()
        if len(text) == 2:
            return f'run {text[1]} (pid {text[0]})'
        return 'another run'



def take(output_dir: str, wait: bool, busy_hint: str,
         interrupted: str) -> Tuple[Optional[OutputLock], int]:
    """The output's lock, taken as a command does (`runner.py --local`, `--rollback`): it says
    so while waiting. Returns (lock, 0), or (None, exit code) after printing why: 2 when the
    output is busy and wait is False (busy_hint says what to do), 130 on Ctrl-C while waiting
    (interrupted says what did not happen)."""
    lock = OutputLock(output_dir)
    try:
        lock.acquire(wait, on_wait=lambda holder: print(
            f'{output_dir} is in use by {holder}; waiting for it to finish', flush=True))
    except OutputBusy as busy:
        print(f'error: {output_dir} is in use by {busy}; {busy_hint}', file=sys.stderr)
        return None, 2
    except KeyboardInterrupt:
        print(f'interrupted while waiting for the output folder; {interrupted}', flush=True)
        return None, 130
    return lock, 0
