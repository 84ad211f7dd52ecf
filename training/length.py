"""The length policy: how long a training runs and at what batch when the data decides.

Pure rules over counts (no TensorFlow, no data reading), so the command line's --help states
them (training/params.py), plan.py applies them to the counted train split, the report
estimates with them what a failed or unread run was asked, and replan.py cuts the length to
the time. The batch from the data is settled here once (`settle_batch`), and whether workers or
replicas take equal shares of it is one rule (`splits`).
"""
import dataclasses
import math

# Training length from the data (train_epochs 0): about AUTO_EXAMPLES examples seen, as
# AUTO_MIN_EPOCHS to AUTO_MAX_EPOCHS passes over the held-in train examples, but never fewer
# than AUTO_MIN_UPDATES optimizer updates: a few hundred images are a couple of updates per
# epoch, and 20 epochs of them are 40 updates (measured on 189 photo patches: eval 0.88,
# against 1.00 with 400 updates). Fashion-MNIST's 43k held-in images were still improving
# after 10 epochs (train accuracy below eval: underfit), so 1M examples: 20 epochs of them.
# Then, after two epochs (replan.REPLAN_EPOCH) and again at every epoch end as their cost
# moves, the plan is cut to the epochs that fit AUTO_TRAIN_MINUTES of training (the step
# trial's seconds included) at the recent epochs' cost, never below AUTO_MIN_TIMED_EPOCHS
# (early stopping and the schedule's decay need a few): with ingestion, evaluation and export
# (2-3 min for Fashion-MNIST's 60k PNGs on 2 shared cores, bench/bench_quality.py) the default
# run fits a quarter of an hour whatever the data's size (docs/training.md, "Training length").
AUTO_EXAMPLES, AUTO_MIN_EPOCHS, AUTO_MAX_EPOCHS, AUTO_MIN_UPDATES = 1_000_000, 10, 20, 400
AUTO_TRAIN_MINUTES, AUTO_MIN_TIMED_EPOCHS = 12.0, 3
# Batch from the data (global_batch_size 0): AUTO_BATCH, or AUTO_LARGE_BATCH when the held-in
# train split gives at least AUTO_LARGE_BATCH_UPDATES updates an epoch at that batch. On a CPU
# the larger batch about doubles the examples a second (per-step costs are shared by twice the
# examples: bench/bench_step.py), which a time-bound run turns into more epochs; a small split
# keeps the smaller batch and its updates (the AUTO_MIN_UPDATES floor above). A length from the
# data at the larger batch keeps the updates of the smaller one: twice the examples, up to
# twice AUTO_MAX_EPOCHS (docs/training.md, "Training length and early stopping": batch and length).
AUTO_BATCH, AUTO_LARGE_BATCH, AUTO_LARGE_BATCH_UPDATES = 64, 128, 200
# The held-out slice (validation_percent of the train split) is cut to about this many examples
# when it has more: more rank epochs no better and are worth more as training data. Each example
# moves the held-out accuracy by 0.04%, a tenth of the least gain the floor (plan.MIN_HELD_OUT)
# can see; on full Fashion-MNIST (47,921 train images) more images trained on was what moved
# the official test set (docs/benchmarks.md, "The held-out slice as training data": 10% held
# out 0.9265-0.9271 in four runs, 5% 0.9287, none 0.9293-0.9311).
MAX_HELD_OUT = 2_500


def held_out_share(percent: float, held_out: int) -> float:
    """The share of the train split, in percent to 0.01 (training/data.py's buckets), that
    holds out about MAX_HELD_OUT where `percent` held out `held_out` examples: rounded down,
    and at least 0.01% (only tens of millions of examples then hold out more)."""
    return max(0.01, math.floor(100 * percent * MAX_HELD_OUT / held_out) / 100)


def auto_batch(held_in: int) -> int:
    """The global batch when none is configured (AUTO_BATCH* above)."""
    large = held_in // AUTO_LARGE_BATCH >= AUTO_LARGE_BATCH_UPDATES
    return AUTO_LARGE_BATCH if large else AUTO_BATCH


def settle_batch(configured: int, held_in: int = -1) -> int:
    """The global batch: as configured, else from the data (auto_batch of the held-in examples;
    AUTO_BATCH for a fixed length, held_in -1, which trains on the split uncounted)."""
    if configured:
        return configured
    return AUTO_BATCH if held_in < 0 else auto_batch(held_in)


def splits(batch: int, parts: int) -> bool:
    """Whether `parts` (worker processes, or replicas) take equal shares of the global batch. A
    batch from the data (0) is judged at AUTO_BATCH, which every batch the data can settle on
    is a multiple of, so the rule holds before the data is counted."""
    return parts >= 1 and (batch or AUTO_BATCH) % parts == 0


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


@dataclasses.dataclass(frozen=True)
class Length:
    """A length by epochs: the batch settled, updates per epoch, the most epochs, their updates."""
    batch: int
    steps_per_epoch: int
    epochs: float
    train_steps: int


def by_epochs(configured_batch: int, accumulation_steps: int, held_in: int,
              epochs: float) -> Length:
    """The length of `epochs` passes over held_in examples (0 or less: as many as auto_epochs
    says), at the configured batch (0: the one from the data)."""
    batch = settle_batch(configured_batch, held_in)
    per_update = batch * accumulation_steps
    if epochs <= 0:
        epochs = auto_epochs(held_in, per_update, batch_scale(configured_batch, batch))
    per_epoch = max(1, held_in // per_update)
    return Length(batch, per_epoch, epochs, max(1, math.ceil(epochs * per_epoch)))


def time_target_seconds(budget_minutes: float, from_data: bool) -> float:
    """The training seconds a length is cut to fit (replan.py): the time budget when there is
    one, so the schedule decays before the budget stops training; else only a length from the
    data is cut (AUTO_TRAIN_MINUTES), a configured one being the user's. 0 = no cut."""
    return 60 * (budget_minutes or (AUTO_TRAIN_MINUTES if from_data else 0.0))


def after_trial(target_seconds: float, budget_minutes: float, trial_seconds: float) -> float:
    """The target once the step trial ran: the trial is part of training's cost, so the time it
    took comes off a length from the data's target (a user's time budget is kept as given)."""
    if not target_seconds or budget_minutes:
        return target_seconds
    return max(1.0, target_seconds - trial_seconds)

