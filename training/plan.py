"""How long a training job runs, and whether its train split is cached: planned from the data.

The length rule (train_epochs 0: AUTO_* in training/params.py, which --help states; the cut
to the time, re-planned at each epoch end, is training/replan.py's, which the loop asks), the
held-out share too small to rank epochs, and the in-memory cache budget. No TFX imports: the
executor plans the job with these, the report estimates updates with resolve_train_steps, and
job.train_and_export calls plan_epochs before it builds anything.
"""
import dataclasses
import math
from typing import Any, Mapping, Tuple

from absl import logging

from core import inputs
from training import data
from training.params import (AUTO_BATCH, AUTO_EXAMPLES, AUTO_LARGE_BATCH,
                             AUTO_LARGE_BATCH_UPDATES, AUTO_MAX_EPOCHS, AUTO_MIN_EPOCHS,
                             AUTO_MIN_UPDATES, AUTO_TRAIN_MINUTES)


# Decoded float32 pixels of a train split up to this size are cached in memory.
CACHE_BUDGET_BYTES = 1 << 30


# A cached table row is its serialized Example: about this many bytes per column.
_ROW_BYTES_PER_COLUMN = 64


def fits_in_cache(num_examples: int, image_shape: Tuple[int, int, int],
                  spec: inputs.InputSpec = inputs.InputSpec()) -> bool:
    """Whether the decoded train split (float32 pixels, or a table's records) fits the budget."""
    if spec.kind == 'tabular':
        per_example = _ROW_BYTES_PER_COLUMN * (len(spec.numeric) + len(spec.categorical) + 1)
    else:
        height, width, channels = image_shape
        per_example = height * width * channels * 4
    return 0 < num_examples * per_example <= CACHE_BUDGET_BYTES


# Fewer held-out examples than this cannot rank epochs: one example would move the accuracy
# by 0.2% or more, about what an epoch gains late in training (measured on the digits: 130
# held out stopped at epoch 14 of 20 with eval 0.9865, against 0.9919 training on all of
# them). They go back into training instead, and every epoch runs.
MIN_HELD_OUT = 500
# Training length from the data (train_epochs 0): AUTO_* in training/params.py (--help says it).
AUTO_EPOCHS = -1.0


def auto_batch(held_in: int) -> int:
    """The global batch when none is configured (AUTO_BATCH* in training/params.py)."""
    large = held_in // AUTO_LARGE_BATCH >= AUTO_LARGE_BATCH_UPDATES
    return AUTO_LARGE_BATCH if large else AUTO_BATCH


def auto_epochs(held_in: int, examples_per_update: int, scale: float = 1.0) -> float:
    """The most epochs for a train split of held_in examples, when none are configured; `scale`
    multiplies the examples and the epoch cap (the larger batch from the data: batch_scale)."""
    epochs = min(AUTO_MAX_EPOCHS * scale,
                 max(AUTO_MIN_EPOCHS, math.ceil(AUTO_EXAMPLES * scale / max(1, held_in))))
    per_epoch = max(1, held_in // examples_per_update)
    return float(max(epochs, math.ceil(AUTO_MIN_UPDATES / per_epoch)))


def batch_scale(configured: int, batch: int) -> float:
    """How much longer a length from the data is at this batch: the larger batch from the data
    keeps the smaller one's updates (twice the examples); a configured batch keeps the rule."""
    return 1.0 if configured else batch / AUTO_BATCH


def resolve_train_steps(exec_properties: Mapping[str, Any], num_train_examples: int) -> int:
    """train_steps as given, or an estimate of the most updates train_epochs can take, from
    the trainer's properties (the executor's, or as ML Metadata recorded them for the report).

    With epochs the trainer counts the held-in part of the train split itself and stops
    early; this estimate (the whole split, less the held-out share) is for people.
    """
    steps = int(exec_properties['train_steps'])
    if steps <= 0:
        held_in = num_train_examples * (100 - int(exec_properties.get('validation_percent') or 0))
        held_in //= 100
        configured = int(exec_properties['global_batch_size'])
        batch = configured or auto_batch(held_in)
        per_update = batch * int(exec_properties['accumulation_steps'])
        epochs = float(exec_properties['train_epochs']) or auto_epochs(
            held_in, per_update, batch_scale(configured, batch))
        steps = max(1, math.ceil(epochs * max(1, held_in // per_update)))
    return max(1, steps)


def plan_epochs(job) -> Tuple[Any, int, str]:
    """(the TrainJob with its length planned, held-out examples, why there is no early stopping).

    Counts the train split's held-in and held-out records once (no decoding); an epoch is one
    pass over the held-in part, and the learning rate decays over the maximum of epochs.
    """
    if job.epochs == 0:  # a fixed length trains on the whole train split, uncounted
        return dataclasses.replace(job, held_out_percent=0,
                                   options=_with_batch(job.options, AUTO_BATCH)), 0, ''
    percent = job.held_out_percent
    held_in, held_out = data.count_split(job.train_pattern, percent)
    note = '' if percent else 'no held-out slice (validation_percent is 0)'
    if percent and held_out < MIN_HELD_OUT:
        note = (f'only {held_out} held-out examples (fewer than {MIN_HELD_OUT}), so they were '
                f'trained on')
        held_in, held_out, percent = held_in + held_out, 0, 0
    configured = job.options.params.global_batch_size
    options = _with_batch(job.options, auto_batch(held_in))
    epochs = job.epochs if job.epochs > 0 else auto_epochs(
        held_in, options.examples_per_update,
        batch_scale(configured, options.params.global_batch_size))
    if options.params.freeze_epochs >= epochs:
        raise ValueError(f'freeze_epochs ({options.params.freeze_epochs}) must be fewer than the '
                         f'{epochs:g} epochs planned')
    per_epoch = max(1, held_in // options.examples_per_update)
    total = max(1, math.ceil(epochs * per_epoch))
    # Cut to the time budget when there is one, so the schedule decays before the budget
    # stops training; else only a length from the data is cut (a configured one is the user's).
    budget = options.params.time_budget_minutes
    target = 60 * (budget or (AUTO_TRAIN_MINUTES if job.epochs < 0 else 0.0))
    options = dataclasses.replace(options, train_steps=total, steps_per_epoch=per_epoch,
                                  max_epochs=epochs, time_target_seconds=target)
    logging.info('Epochs: %d held-in and %d held-out train examples; %d updates per epoch, up '
                 'to %g epochs%s (%d updates)', held_in, held_out, per_epoch, epochs,
                 '' if job.epochs > 0 else ' (from the data)', total)
    return (dataclasses.replace(job, options=options, held_out_percent=percent, epochs=epochs),
            held_out, note)


def _with_batch(options, batch: int):
    """The loop options with `batch` as the global batch when none was configured (0)."""
    if options.params.global_batch_size:
        return options
    logging.info('Batch from the data: %d', batch)
    return dataclasses.replace(options, params=dataclasses.replace(
        options.params, global_batch_size=batch))
