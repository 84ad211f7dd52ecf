"""How long a training job runs, and whether its train split is cached: planned from the data.

The plan is made once, before anything is built (job.train_and_export calls plan_epochs): the
train split's held-in and held-out records are counted, a held-out share too small to rank
epochs goes back into training and one larger than ranking needs is cut
(length.MAX_HELD_OUT), and the length policy (training/length.py: the batch from the data,
the epochs, the time to fit) turns the counts into the loop's options, the batch settled in
them; the loop then re-plans the epochs to the time (training/replan.py). No TFX imports:
the executor decides the in-memory cache with fits_in_cache, and the report estimates updates
with resolve_train_steps.
"""
import dataclasses
from typing import Any, Mapping, NamedTuple, Tuple

from absl import logging

from core import inputs
from training import data, length


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
# TrainJob.epochs of a length from the data (train_epochs 0: training/length.py); 0 there is a
# fixed length (train_steps).
AUTO_EPOCHS = -1.0


def resolve_train_steps(exec_properties: Mapping[str, Any], num_train_examples: int) -> int:
    """train_steps as given, or an estimate of the most updates train_epochs can take, from
    the trainer's properties (the executor's, or as ML Metadata recorded them for the report).

    With epochs the trainer counts the held-in part of the train split itself and stops
    early; this estimate (the whole split, less the held-out share, at most
    length.MAX_HELD_OUT) is for people.
    """
    steps = int(exec_properties['train_steps'])
    if steps > 0:
        return steps
    percent = int(exec_properties.get('validation_percent') or 0)
    held_in = max(num_train_examples * (100 - percent) // 100,
                  num_train_examples - length.MAX_HELD_OUT)
    return length.by_epochs(int(exec_properties['global_batch_size']),
                            int(exec_properties['accumulation_steps']), held_in,
                            float(exec_properties['train_epochs'])).train_steps


class Planned(NamedTuple):
    job: Any            # the TrainJob, its length, batch and held-out share settled
    held_out: int       # held-out examples (0: none)
    note: str           # why there is no early stopping ('' when there is)
    held_out_note: str  # why the held-out share is not the one asked ('' when it is)


def plan_epochs(job, replicas: int = 1) -> Planned:
    """The TrainJob planned from the data, and what was decided on the way.

    Counts the train split's held-in and held-out records (no decoding; once more when the
    slice is cut: length.MAX_HELD_OUT); an epoch is one pass over the held-in part, and the learning
    rate decays over the maximum of epochs. The batch from the data (global_batch_size 0) is
    settled here, in the job's parameters, and must split evenly over the `replicas` that
    train it.
    """
    params = job.options.params
    if job.epochs == 0:  # a fixed length trains on the whole train split, uncounted
        options = _with_batch(job.options, length.settle_batch(params.global_batch_size),
                              replicas)
        return Planned(dataclasses.replace(job, held_out_percent=0, options=options), 0, '',
                       '')
    percent = job.held_out_percent
    held_in, held_out = data.count_split(job.train_pattern, percent)
    note = '' if percent else 'no held-out slice (validation_percent is 0)'
    held_out_note = ''
    if percent and held_out < MIN_HELD_OUT:
        note = (f'only {held_out} held-out examples (fewer than {MIN_HELD_OUT}), so they were '
                f'trained on')
        held_in, held_out, percent = held_in + held_out, 0, 0
    elif held_out > length.MAX_HELD_OUT:
        asked, percent = percent, length.held_out_share(percent, held_out)
        held_in, held_out = data.count_split(job.train_pattern, percent)
        held_out_note = (f'{percent:g}%, not {asked:g}%: {length.MAX_HELD_OUT:,} rank '
                         'epochs as well, and the rest are trained on')
        logging.info('Held-out slice: %s', held_out_note)
    planned = length.by_epochs(params.global_batch_size, params.accumulation_steps, held_in,
                               job.epochs)
    if params.freeze_epochs >= planned.epochs:
        raise ValueError(f'freeze_epochs ({params.freeze_epochs}) must be fewer than the '
                         f'{planned.epochs:g} epochs planned')
    options = dataclasses.replace(
        _with_batch(job.options, planned.batch, replicas), train_steps=planned.train_steps,
        steps_per_epoch=planned.steps_per_epoch, max_epochs=planned.epochs,
        time_target_seconds=length.time_target_seconds(params.time_budget_minutes,
                                                       from_data=job.epochs < 0))
    logging.info('Epochs: %d held-in and %d held-out train examples; %d updates per epoch, up '
                 'to %g epochs%s (%d updates)', held_in, held_out, planned.steps_per_epoch,
                 planned.epochs, '' if job.epochs > 0 else ' (from the data)',
                 planned.train_steps)
    return Planned(dataclasses.replace(job, options=options, held_out_percent=percent,
                                       epochs=planned.epochs), held_out, note, held_out_note)


def _with_batch(options, batch: int, replicas: int):
    """The loop options with the settled global batch, which must split over the replicas."""
    if not length.splits(batch, replicas):
        raise ValueError(f'global_batch_size {batch} does not split evenly over {replicas} '
                         'replicas')
    if options.params.global_batch_size == batch:
        return options
    logging.info('Batch from the data: %d', batch)
    return dataclasses.replace(options, params=dataclasses.replace(
        options.params, global_batch_size=batch))
