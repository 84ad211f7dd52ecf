"""The time plan: how many epochs fit the training time, re-planned at every epoch end.

No TFX imports. A policy the loop asks at each epoch end (Orbit's split: the loop is mechanism,
this decides; the loop holds a `Replanner`, whose rule is TimePlan's): a length planned from
the data (plan.plan_epochs) is cut, from REPLAN_EPOCH on, to the epochs that fit the time
target at the measured cost of an epoch, and moves again when that cost moves, so a run that
slows down part way (another process takes a core) still ends near its target, and one that
speeds up takes back epochs up to the length from the data.

A plan that changed by one epoch at every wobble of a quiet machine would train a different
model from run to run, so after the first cut it moves only when the measured cost leaves a
band of BAND around the cost that fits: shorter when the epochs left would overrun the time
left by more than that share, longer when one more epoch would still leave that share unused.
The band is a share of the time left, so it narrows as the end nears: early, the estimate has
many epochs to be wrong over, and a change of the end moves the schedule least; at the last
epochs it holds the run to its target.
"""
import dataclasses
import math
from typing import List, Optional

from absl import logging

from training.length import AUTO_MIN_TIMED_EPOCHS

# The first re-plan is at the end of this epoch: the first epoch costs more than the later
# ones (tracing, and decoding the split into the in-memory cache: Fashion-MNIST's first epochs
# took 42-101 s where the second took 35-59 s, bench/bench_quality.py), and the schedule has
# barely decayed by then (cosine: 98% of the peak after 2 of 20 epochs).
REPLAN_EPOCH = 2
# An epoch's cost is the mean of the last few, so one slow epoch (a checkpoint, a neighbour's
# burst) moves the plan less than a lasting change.
RECENT_EPOCHS = 3
# The band: 5% of the time left, about twice the spread of the recent epochs' mean cost on a
# quiet machine (Fashion-MNIST's 18-s epochs, +-1 s).
BAND = 0.05


def fit_epochs(spent_seconds: float, epoch_seconds: float, planned_epochs: float,
               target_seconds: float, min_epochs: int = AUTO_MIN_TIMED_EPOCHS,
               done: int = REPLAN_EPOCH) -> float:
    """The planned epochs, cut to the `done` ones (which took spent_seconds) and the whole
    epochs of epoch_seconds each that fit in what is left of target_seconds; never below
    min_epochs (nor `done`) nor above the plan."""
    if epoch_seconds <= 0 or target_seconds <= 0:
        return planned_epochs
    fit = done + math.floor(max(0.0, target_seconds - spent_seconds) / epoch_seconds)
    return float(min(planned_epochs, max(min_epochs, done, fit)))


@dataclasses.dataclass(frozen=True)
class Change:
    """One change of the plan: at the end of `epoch`, from `before` epochs to `after`."""
    epoch: int
    before: float
    after: float
    spent_seconds: float
    epoch_seconds: float


class TimePlan:
    """Re-plans the epochs at each epoch end; `changes` says when and why it moved.

    ceiling_epochs is the length from the data (never exceeded); target_seconds the training
    seconds to fit; min_epochs the fewest a cut leaves.
    """

    def __init__(self, ceiling_epochs: float, target_seconds: float, min_epochs: int):
        self.ceiling, self.target, self.min_epochs = ceiling_epochs, target_seconds, min_epochs
        self.changes: List[Change] = []

    def at_epoch_end(self, epoch: int, planned: float, spent_seconds: float,
                     epoch_seconds: float) -> float:
        """The epochs to plan after `epoch` (`planned` when it stays): the first cut at
        REPLAN_EPOCH as fit_epochs says; later, only outside the band (module docstring)."""
        if epoch < REPLAN_EPOCH or epoch >= planned:
            return planned
        fit = fit_epochs(spent_seconds, epoch_seconds, self.ceiling, self.target,
                         self.min_epochs, epoch)
        left = self.target - spent_seconds
        if epoch == REPLAN_EPOCH:
            new = min(fit, planned)
        elif (epoch_seconds * (planned - epoch) > left * (1 + BAND)
              or epoch_seconds * (planned + 1 - epoch) < left * (1 - BAND)):
            new = fit
        else:
            new = planned
        if new != planned:
            self.changes.append(Change(epoch, planned, new, spent_seconds, epoch_seconds))
        return new

    def describe(self) -> str:
        """The changes as words for the stop reason ('' when the plan never moved)."""
        parts, later = [], self.changes
        if later and later[0].epoch == REPLAN_EPOCH:
            first, later = later[0], later[1:]
            parts.append(f'planned {first.after:g} of {first.before:g} epochs after the first '
                         f'{first.epoch} took {first.spent_seconds:.0f} s (the last '
                         f'{first.epoch_seconds:.0f} s), to fit {self.target / 60:.1f} min')
        if later:
            moves = ', '.join(f'{c.after:g} at epoch {c.epoch} ({c.epoch_seconds:.0f} s an epoch)'
                              for c in later)
            parts.append(f're-planned {len(later)} time{"s" if len(later) > 1 else ""} as an '
                         f"epoch's cost moved, to fit {self.target / 60:.1f} min: {moves}")
        return '; '.join(parts)


class Replanner:
    """The loop's length as it stands (`options`, a loop.LoopOptions), re-planned to the time.

    `planned` is the schedule's end, a variable checkpointed with the loop's state: a resumed
    attempt takes the length an interrupted one had re-planned to. With a time target and
    epochs, the TimePlan moves it at epoch ends from REPLAN_EPOCH on (never below
    AUTO_MIN_TIMED_EPOCHS, nor the frozen-backbone epochs and one more), and the schedule's
    end moves with it.
    """

    def __init__(self, options, planned=None):
        per_epoch = options.steps_per_epoch
        self.planned = planned
        self.time_plan = (TimePlan(options.max_epochs, options.time_target_seconds,
                                   max(AUTO_MIN_TIMED_EPOCHS, options.params.freeze_epochs + 1))
                          if planned is not None and per_epoch and options.time_target_seconds
                          else None)
        self._resumed = ''
        if planned is not None and per_epoch and int(planned.numpy()) != options.train_steps:
            options = options.with_length(int(planned.numpy()))  # re-planned, then interrupted
            self._resumed = (f'planned {options.max_epochs:g} epochs before this attempt, to '
                             f'fit {options.time_target_seconds / 60:.1f} min')
        self.options = options

    def due(self, step: int, stopped: bool) -> bool:
        """Whether the epoch ending at `step` re-plans (the loop then measures the time)."""
        return bool(self.time_plan) and not stopped and \
            step >= REPLAN_EPOCH * self.options.steps_per_epoch

    def at_epoch_end(self, step: int, seconds: float, epoch_seconds: float) -> None:
        """Re-plans after `seconds` of training at epoch_seconds an epoch; when the epochs
        change, so do `options` and the schedule's end."""
        options = self.options
        epoch = step // options.steps_per_epoch
        epochs = self.time_plan.at_epoch_end(epoch, options.max_epochs, seconds, epoch_seconds)
        if epochs == options.max_epochs:
            if epoch == REPLAN_EPOCH:
                logging.info('%d epochs in %.0f s (the last %.0f s): the %g planned epochs fit '
                             '%.1f min', epoch, seconds, epoch_seconds, options.max_epochs,
                             options.time_target_seconds / 60)
            return
        total = max(step, math.ceil(epochs * options.steps_per_epoch))
        logging.info('Length re-planned at epoch %d: %g epochs instead of %g after %.0f s, '
                     '%.0f s an epoch, to fit %.1f min (%d updates)', epoch, epochs,
                     options.max_epochs, seconds, epoch_seconds,
                     options.time_target_seconds / 60, total)
        self.planned.assign(total)
        self.options = options.with_length(total)

    def changes(self) -> Optional[int]:
        """How often the length moved (None: no time plan)."""
        return len(self.time_plan.changes) if self.time_plan else None

    def describe(self) -> str:
        """The plan's moves as words for the stop reason ('' when it never moved)."""
        return '; '.join(filter(None, (self._resumed,
                                       self.time_plan.describe() if self.time_plan else '')))
