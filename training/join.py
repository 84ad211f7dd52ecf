"""The held-out slice joins training for the schedule's last part, when early stopping has no
reason to keep it out.

No TFX imports. Early stopping holds a slice of the train split out (data.py) to rank epochs and
to stop on a plateau; the model never learns from it. On Fashion-MNIST in a timed run (19-22
epochs on 2 cores) the slice was worth more as training data: trained on from the start
(`--validation-percent 0`) the same minutes gave test 0.9311 against 0.9265-0.9271 in four runs
holding it out (docs/benchmarks.md). But from the start nothing would be left to stop on.

So the slice is held out while it can tell something, and joins when it no longer can: patience
counts only from the epoch in which the schedule enters its last quarter (stopping.patience_start;
before it, held-out accuracy swings by more than an epoch gains), and that is where the choice
is made. If, at the end of that epoch or a later one (while at least MIN_JOINED_EPOCHS are left),
the held-out loss is the lowest of the run (the model still generalises better with every epoch,
so patience, which counts from the last epoch that improved the accuracy or the loss, is not
counting down), the slice joins the train stream from the next epoch on, and the model's final
weights are kept. If the loss never reaches a new low there, the slice stays out and early
stopping works as before: its protection is given up only where it had nothing to protect from.
The eval split, never trained on, still measures the model that is pushed, and the Evaluator
still refuses one that regresses against the served model.

The choice is a policy the loop asks at each epoch end (Orbit's split); it returns whether the
train stream must be rebuilt. The decision and its figures are variables in the loop's
checkpoint, so a resumed run builds its stream as the interrupted one had (data.train_dataset's
`joined_at`).
"""
from typing import Optional

from absl import logging
import tensorflow as tf

# At least this many epochs must be left to train on the joined slice; fewer would rebuild
# the stream (and refill its decoded cache) for little.
MIN_JOINED_EPOCHS = 2


class HeldOutJoin(tf.Module):
    """Whether and when the held-out slice of `held_out_examples` joined the train stream;
    enabled only with a held-out slice and epochs. Create it under the strategy's scope, like
    the loop's StoppingState."""

    def __init__(self, held_out_examples: int = 0):
        super().__init__(name='held_out_join')
        self.held_out_examples = held_out_examples

        def variable(value, dtype, name):
            return tf.Variable(value, dtype=dtype, trainable=False, name=name)
        # The epoch after which the slice joined (0: not joined), the stream position (examples
        # of the global stream) from which it is in it, and the figures of the last check.
        self.epoch = variable(0, tf.int64, 'joined_epoch')
        self.examples = variable(0, tf.int64, 'joined_examples')
        self.checked_epoch = variable(0, tf.int64, 'checked_epoch')
        self.loss = variable(-1.0, tf.float64, 'checked_loss')
        self.lowest_loss = variable(-1.0, tf.float64, 'lowest_loss')
        self.first_epoch = variable(0, tf.int64, 'first_epoch')

    @property
    def enabled(self) -> bool:
        return self.held_out_examples > 0

    @property
    def joined(self) -> bool:
        return int(self.epoch.numpy()) > 0

    def joined_at(self) -> Optional[int]:
        """The global stream's position from which the slice is in it; None while it is not."""
        return int(self.examples.numpy()) if self.joined else None

    def at_epoch_end(self, epoch: int, examples: int, planned_epochs: float, first_epoch: int,
                     loss: float, lowest_loss: float) -> bool:
        """At the end of `epoch` (`examples` consumed so far), of `planned_epochs`, where
        patience counts from `first_epoch` and the epoch's held-out loss was `loss` (the run's
        lowest so far `lowest_loss`, this one included): True when the slice joins now (the loop
        then rebuilds the train stream)."""
        if not self.enabled or self.joined or epoch < first_epoch or loss < 0 \
                or planned_epochs - epoch < MIN_JOINED_EPOCHS:
            return False
        self.checked_epoch.assign(epoch)
        self.loss.assign(loss)
        self.lowest_loss.assign(lowest_loss)
        self.first_epoch.assign(first_epoch)
        if loss > lowest_loss:
            return False
        self.epoch.assign(epoch)
        self.examples.assign(examples)
        logging.info('Held-out slice joins training from epoch %d: %s', epoch + 1,
                     self.describe())
        return True

    def describe(self) -> str:
        """The choice as words for the stop reason ('' when there was nothing to choose)."""
        if not self.enabled or not int(self.checked_epoch.numpy()):
            return ''
        loss, lowest = float(self.loss.numpy()), float(self.lowest_loss.numpy())
        first = int(self.first_epoch.numpy())
        if self.joined:
            epoch = int(self.epoch.numpy())
            return (f'the {self.held_out_examples:,} held-out examples joined training from '
                    f'epoch {epoch + 1}: their loss was still reaching new lows ({loss:.4f} '
                    f'after epoch {epoch}, where patience counts from epoch {first}), so the '
                    "final weights were kept")
        return (f'the {self.held_out_examples:,} held-out examples stayed out: their loss did '
                f'not reach a new low from epoch {first} on while {MIN_JOINED_EPOCHS} epochs '
                f'were left (after epoch {int(self.checked_epoch.numpy())}: {loss:.4f} against '
                f'the lowest {lowest:.4f})')
