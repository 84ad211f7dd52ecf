"""Horizontal flips from evidence: when mirroring keeps the labels, and the model needs it.

No TFX imports. A mirrored shirt is a shirt; a mirrored 3, b or arrow is not what its label says.
And flips, like any augmentation, trade fitting the train images for generalising beyond them:
a model that does not yet fit its train images better than unseen ones only learns slower with
them (Fashion-MNIST in 9 epochs: test 0.9069 with flips against 0.9120 without, train and
held-out accuracy alike at about 0.91). So `flip auto` asks the data twice (the default stays
off: docs/training.md, "Augmentation", says why):

1. Does mirroring keep the labels? At an epoch end, the model, trained that far on unmirrored
   images, scores the held-out slice as it is and mirrored left-right. Where mirroring keeps
   labels, the mirrored images keep most of the accuracy above chance (1 / the classes); where
   it changes them, little or none (two classes that mirror into each other score below
   chance). They must keep at least MIN_KEPT of it. A model not yet halfway from chance to
   perfect cannot tell: it is measured again at the next epoch end, up to LAST_PROBE_EPOCH,
   then flips stay off.
2. Does the model need it? From then on, at each epoch end, the model also scores a sample of
   the train images (unaugmented, about TRAIN_SAMPLE of them, by the held-out slice's hash so
   that every class is in it) at the same moment as the held-out
   slice; flips start when it scores MIN_GAP or more higher on the images it trains on than on
   the held-out ones: it has begun to fit what it sees better than what it has not. (The
   accuracy of the epoch's own train batches will not do: it averages a model that moved all
   epoch, and early in training it is above the held-out accuracy of the epoch's end model
   without any overfitting: Fashion-MNIST's first epoch, 0.7914 against 0.7359.)

Flips join the train stream from the next epoch on. Without a held-out slice there is nothing
to measure on, and a table has no image to mirror: flips stay off, and the reason says why.

The choice is a policy the loop asks at each epoch end (Orbit's split); it returns whether the
train stream must be rebuilt. The decision and its figures are variables in the loop's
checkpoint, so a resumed run builds its stream with the same choice, and the stream is keyed by
position (augment.py), so it continues with exactly the examples an uninterrupted run would have
seen.
"""
import math
from typing import Callable, Dict, Optional

from absl import logging
import tensorflow as tf

from training.choices import FLIP_CHOICES

# Measured from the end of the first epoch (the earliest with a model to measure with, so
# kept flips augment all but that epoch), at most until the end of LAST_PROBE_EPOCH.
PROBE_EPOCH, LAST_PROBE_EPOCH = 1, 3
# The share of the held-out accuracy above chance the mirrored images must keep: half.
# Measured with the default model, each after 1-3 epochs (docs/training.md, "Augmentation"):
# Fashion-MNIST, whose labels mirroring keeps, 76-80% (its shoes all point one way in training,
# so the mirrored ones score lower though their labels hold); the 8x8 digits 20-30%; left and
# right arrows, which mirror into each other, 4-25%.
MIN_KEPT = 0.5


def kept_share(plain: float, mirrored: float, num_classes: int) -> float:
    """The mirrored images' accuracy above chance as a share of the unmirrored one's."""
    chance = 1.0 / num_classes
    return (mirrored - chance) / max(plain - chance, 1e-9)


def can_tell(plain: float, num_classes: int) -> bool:
    """Whether a model this accurate can tell: at least halfway from chance to perfect."""
    return plain >= (1.0 + 1.0 / num_classes) / 2


# How much better the model must score train images than held-out ones: 2 points, about 2.2
# standard deviations of the difference of two accuracies near 0.9 on 2,000 and 2,500 images
# (length.MAX_HELD_OUT; about three near 0.95).
MIN_GAP = 0.02
# About this many train images are scored against the held-out slice (sample_percent).
TRAIN_SAMPLE = 2000


def sample_percent(held_in: int, held_out_percent: float) -> int:
    """The whole percent of the train split that holds about TRAIN_SAMPLE of its held_in
    examples (at least 1, at most all of them)."""
    total = held_in * 100 / max(1, 100 - held_out_percent)
    return max(1, min(math.floor(100 - held_out_percent),
                      math.ceil(100 * TRAIN_SAMPLE / max(1.0, total))))

# The states: not measured yet; flips on; off for good (mirroring changes the labels, or it
# could not be told); the labels keep, and the model does not need flips yet.
UNDECIDED, ON, OFF, KEEPS = 0, 1, 2, 3


class FlipChoice(tf.Module):
    """`mode` on, off or auto; with auto, evaluate(kind) -> {'accuracy': ...} scores the
    held-out slice ('held_out'), the same mirrored ('mirrored') or the train sample ('train'),
    of num_classes classes (None: nothing to measure on, `unmeasured` says why). Create it under
    the strategy's scope, like the loop's StoppingState."""

    def __init__(self, mode: str, num_classes: int = 2,
                 evaluate: Optional[Callable[[str], Dict[str, float]]] = None,
                 unmeasured: str = ''):
        super().__init__(name='flip_choice')
        if mode not in FLIP_CHOICES:
            raise ValueError(f'flip must be one of {FLIP_CHOICES}, got {mode!r}')
        self.mode, self.num_classes, self._evaluate = mode, max(2, num_classes), evaluate
        self._unmeasured = unmeasured or 'no held-out slice to measure it on'

        def variable(value, dtype, name):
            return tf.Variable(value, dtype=dtype, trainable=False, name=name)
        # The decision and the figures it was made from, checkpointed: a resumed run keeps both.
        self.state = variable(UNDECIDED, tf.int64, 'flip_state')
        self.epoch = variable(0, tf.int64, 'measured_epoch')      # when the labels were tested
        self.plain = variable(-1.0, tf.float64, 'plain')
        self.mirrored = variable(-1.0, tf.float64, 'mirrored')
        # The last epoch whose train sample and held-out slice were scored, and their scores.
        self.gap_epoch = variable(0, tf.int64, 'gap_epoch')
        self.train = variable(-1.0, tf.float64, 'train_accuracy')
        self.held_out = variable(-1.0, tf.float64, 'held_out_accuracy')

    @property
    def measures(self) -> bool:
        """Whether the choice is made by measuring (auto with a held-out slice)."""
        return self.mode == 'auto' and self._evaluate is not None

    def flip_now(self) -> bool:
        """Whether the train stream built now mirrors images."""
        return self.mode == 'on' or (self.measures and int(self.state.numpy()) == ON)

    def at_epoch_end(self, epoch: int, held_out_accuracy: float) -> bool:
        """At the end of `epoch`, whose held-out accuracy the loop just measured; True when
        flips start now (the loop then rebuilds the train stream)."""
        if not self.measures:
            return False
        state = int(self.state.numpy())
        if state == UNDECIDED and PROBE_EPOCH <= epoch <= LAST_PROBE_EPOCH:
            state = self._test_labels(epoch, held_out_accuracy)
        if state != KEEPS:
            return False
        train_accuracy = self._evaluate('train')['accuracy']
        self.gap_epoch.assign(epoch)
        self.train.assign(train_accuracy)
        self.held_out.assign(held_out_accuracy)
        if train_accuracy - held_out_accuracy < MIN_GAP:
            return False
        self.state.assign(ON)
        logging.info('Flips on from epoch %d: %s', epoch + 1, self.reason())
        return True

    def _test_labels(self, epoch: int, plain: float) -> int:
        if plain < 0:  # the loop had no held-out score for this epoch end
            plain = self._evaluate('held_out')['accuracy']
        mirrored = self._evaluate('mirrored')['accuracy']
        self.epoch.assign(epoch)
        self.plain.assign(plain)
        self.mirrored.assign(mirrored)
        if not can_tell(plain, self.num_classes) and epoch < LAST_PROBE_EPOCH:
            logging.info('Flips: held-out accuracy %.4f after epoch %d is too close to chance to '
                         'tell whether mirroring keeps the labels; measured again after the '
                         'next', plain, epoch)
            return UNDECIDED
        keeps = can_tell(plain, self.num_classes) and kept_share(
            plain, mirrored, self.num_classes) >= MIN_KEPT
        self.state.assign(KEEPS if keeps else OFF)
        logging.info('Flips: %s', self._labels_text())
        return KEEPS if keeps else OFF

    def _labels_text(self) -> str:
        plain, mirrored = float(self.plain.numpy()), float(self.mirrored.numpy())
        epoch = int(self.epoch.numpy())
        if not can_tell(plain, self.num_classes):
            return (f'held-out accuracy {plain:.4f} after epoch {epoch} was still too close to '
                    'chance to tell whether mirroring keeps the labels')
        share = kept_share(plain, mirrored, self.num_classes)
        keeps = share >= MIN_KEPT
        return (f'after epoch {epoch} the held-out images mirrored scored {mirrored:.4f} against '
                f'{plain:.4f} as they are, {share:.0%} of the accuracy above chance, so '
                f'mirroring {"keeps" if keeps else "changes"} the labels (the line: '
                f'{MIN_KEPT:.0%})')

    def reason(self) -> str:
        """Why flips are on or off, for the log, the Model and the summary."""
        if self.mode != 'auto':
            return 'asked'
        if not self.measures:
            return f'auto: {self._unmeasured}'
        state = int(self.state.numpy())
        if state == UNDECIDED:
            return 'auto: training ended before the held-out slice could tell'
        text = f'auto: {self._labels_text()}'
        if state == OFF:
            return text
        train, held_out = float(self.train.numpy()), float(self.held_out.numpy())
        if state == ON:
            return (f'{text}; after epoch {int(self.gap_epoch.numpy())} the model scored its '
                    f'train images higher than the held-out ones ({train:.4f} against '
                    f'{held_out:.4f}), so flips were on from the next epoch')
        return (f'{text}; but the model never scored its train images higher than the held-out '
                f'ones by {MIN_GAP:.0%} (after epoch {int(self.gap_epoch.numpy())}: {train:.4f} '
                f'against {held_out:.4f}), so flips, which trade fitting for generalising, '
                'stayed off')
