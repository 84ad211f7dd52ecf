"""Training progress as events: where the running training is, for whoever listens.

    unsubscribe = progress.subscribe(lambda event: print(event.step, event.total))

The loop (loop.py) publishes a `Progress` event when it starts, after every update and when it
ends; a console (pipeline/local/console.py) subscribes. Nothing here is state to read: a listener
keeps what it needs of the last event it got.

Across processes: a training worker (launch/worker.py) writes its events as lines on its output
(`LineWriter`, `to_line`); the launcher that relays that output (launch/sequence.py) turns
them back into events (`from_line`) and publishes them in its own process, so a console
subscribed there follows the chief worker's training as it would an in-process one.
"""
import dataclasses
import json
import time
from typing import Callable, List, Optional, TextIO

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Progress:
    """One moment of a training: updates done, of how many, and where its checkpoints are."""
    step: int = 0
    total: int = 0
    start_step: int = 0        # where this process began: 0, or the step resumed from
    checkpoint_dir: str = ''   # '' = no checkpoints
    running: bool = False

    def checkpoint_step(self) -> int:
        """The step a rerun resumes from: the newest complete checkpoint's (read from disk, so
        a save cut short counts as not made), 0 when there is none."""
        latest = self.checkpoint_dir and tf.train.latest_checkpoint(self.checkpoint_dir)
        return int(latest.rsplit('-', 1)[1]) if latest else 0


Listener = Callable[[Progress], None]
_listeners: List[Listener] = []


def subscribe(listener: Listener) -> Callable[[], None]:
    """Calls `listener` with every event published in this process from now on (it runs
    between training updates: it must be quick); returns what unsubscribes it."""
    _listeners.append(listener)

    def unsubscribe() -> None:
        if listener in _listeners:
            _listeners.remove(listener)
    return unsubscribe


def publish(event: Progress) -> None:
    for listener in list(_listeners):
        listener(event)


class Reporter:
    """What the loop holds: the training's current event, published at every change."""

    def __init__(self):
        self.event = Progress()

    def update(self, **changes) -> None:
        self.event = dataclasses.replace(self.event, **changes)
        publish(self.event)


# Marks an event among a worker's log lines; what follows is the event as JSON.
LINE_PREFIX = 'training-progress '


def to_line(event: Progress) -> str:
    return LINE_PREFIX + json.dumps(dataclasses.asdict(event), sort_keys=True)


def from_line(line: str) -> Optional[Progress]:
    """The event a line of to_line carries; None for any other line."""
    if not line.startswith(LINE_PREFIX):
        return None
    try:
        return Progress(**json.loads(line[len(LINE_PREFIX):]))
    except (ValueError, TypeError):  # cut short (a killed worker): an ordinary line then
        return None


class LineWriter:
    """A listener writing events as lines to a stream. A change of step alone is written at
    most every `interval_s` (a worker's log is not a place for one line per update); any other
    change (start, end, an early stop) at once, so the relayed events end where training did."""

    def __init__(self, stream: TextIO, interval_s: float = 1.0):
        self._stream, self._interval = stream, interval_s
        self._last: Optional[Progress] = None
        self._written = 0.0

    def __call__(self, event: Progress) -> None:
        now = time.monotonic()
        only_step = (self._last is not None
                     and dataclasses.replace(self._last, step=event.step) == event)
        self._last = event
        if only_step and now - self._written < self._interval:
            return
        self._written = now
        self._stream.write(to_line(event) + '\n')
        self._stream.flush()
