"""Which checkpoint a training resumes from (tf.train.latest_checkpoint, without its silence),
and when the loop saves one (save_due).

TensorFlow reads the `checkpoint` index and takes any failure to read or parse it as "no
checkpoint" (checkpoint_management.get_checkpoint_state logs a warning and returns None). On a
bucket a read can fail that way for a moment (storage.read_if_exists says how), and a rerun
would then train from step 0 over the checkpoints it was meant to resume from, whose newest two
its own first saves delete. Here the index is read through storage (an outage raises
StoreUnanswered, the bytes are the file's), and an index that cannot be parsed, or names a
checkpoint without its files, is an error naming the folder: never a fresh start.
"""
import os
from typing import Optional

from google.protobuf import text_format
from tensorflow.python.training import checkpoint_state_pb2

from core import storage

INDEX = 'checkpoint'   # TensorFlow's name for the index CheckpointManager rewrites at each save


class CheckpointsUnreadable(RuntimeError):
    """The folder has a checkpoint index, but not a checkpoint it can be followed to."""


def latest(directory: str) -> Optional[str]:
    """The newest checkpoint's prefix in directory, or None when it has no index (no save has
    finished there: TensorFlow writes a checkpoint's files first and the index last)."""
    index = os.path.join(directory, INDEX)
    text = storage.read_text(index)
    if text is None:
        return None
    state = checkpoint_state_pb2.CheckpointState()
    try:
        text_format.Parse(text, state)
    except text_format.ParseError as error:
        raise CheckpointsUnreadable(
            f'the checkpoint index {index} does not parse ({" ".join(str(error).split())[:120]}); '
            f'remove {directory} to train from the start') from error
    prefix = state.model_checkpoint_path
    if not prefix:
        return None
    if '://' not in prefix and not os.path.isabs(prefix):   # CheckpointManager writes it relative
        prefix = os.path.join(directory, prefix)
    if not storage.exists(prefix + '.index'):
        raise CheckpointsUnreadable(
            f'the checkpoint index {index} names {os.path.basename(prefix)}, whose files are not '
            f'there; remove {directory} to train from the start')
    return prefix


def save_due(step: int, interval: int, stopped: bool, last_step: int) -> bool:
    """The loop's checkpoint rhythm: every `interval` updates, and at the end (stopped, or the
    planned last update). Not at every epoch end: a resumed run replays the steps since the
    last checkpoint and judges their epoch ends again, the same way (saves cost time)."""
    return step % interval == 0 or stopped or step == last_step
