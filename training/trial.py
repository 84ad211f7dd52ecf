"""Precision and XLA of the train step, chosen by a short timed trial on this machine.

No TFX imports. `auto` precision and `auto` XLA (TrainParams.mixed_precision and .xla) are
decided by timing the job's real train step (its model builder, input shape, classes, global
batch, accumulation, optimizer and strategy) on random images of its shape, for each candidate:
- precision: the one asked; for `auto`, float32 and, on a CPU with bfloat16 instructions,
  mixed_bfloat16 (a CPU without them emulates bfloat16, which lost 2x-14x in
  bench/bench_precision.py, so it is not timed); on a GPU, mixed_float16 (no trial);
- XLA: the one asked; for `auto`, off and on (StepFunctions' jit_compile: the forward and
  backward pass compiled by XLA).
Each candidate is built and traced, run for WARMUP_UPDATES updates, then timed in ROUNDS turns
of about SECONDS each, the order reversed every turn so that a change in the machine's load
hits all alike; each keeps its best turn. The fastest wins, but it replaces the first candidate
(float32 without XLA when both are auto: the exact and simplest step) only when it is at least
MARGIN faster, since on a shared machine turns of the same step differ by a few per cent
(bench/bench_step.py and docs/benchmarks.md, "Train step").

No trial, and the first candidate's settings with precision by the multiply-add rule of
precision.choose_policy, when:
- the planned training is under TRIAL_MIN_FLOP of arithmetic (speed.train_flops_per_example x
  the examples it plans to train): the trial costs four builds and traces and 8 s of timing
  (27-32 s for the default model on Fashion-MNIST at load 2-6 on 2 cores, 80-109 s at load
  15-22: docs/training.md, "Mixed precision"), which such a run cannot win back (the embedded
  digits plan 0.4 TFLOP: about 10 s);
- several worker processes train together: each would time its own process and could choose
  differently, and their collectives need the same step on every worker;
- the input is a table: the trial's random batches are images.
"""
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

import tensorflow as tf

from training import speed, teardown

WARMUP_UPDATES = 2
ROUNDS = 2
SECONDS = 1.0
MARGIN = 1.05
# ~150 s of the default model's training at the rate bench_step measured on 2 shared cores
# (about 100 GFLOP/s), where a trial costs about a fifth of the run; Fashion-MNIST's default
# run plans 54 TFLOP.
TRIAL_MIN_FLOP = 15e12


class Candidate(NamedTuple):
    policy: str
    xla: bool

    @property
    def label(self) -> str:
        return self.policy + (' + XLA' if self.xla else '')


class Decision(NamedTuple):
    """What the step trains with, why (one sentence each), and the trial's images/s by label
    (empty without a trial)."""
    policy: str
    xla: bool
    precision_reason: str
    xla_reason: str
    figures: Dict[str, float] = {}

    def trial_text(self) -> str:
        """'float32 1,520 img/s; mixed_bfloat16 1,430 (0.94x); ...' or ''."""
        return describe(self.figures)


def candidates(policies: Sequence[str], xla: str) -> List[Candidate]:
    """Every (policy, XLA) to time, the default first: policies in the order given, XLA off
    before on."""
    flags = {'auto': (False, True), 'on': (True,), 'off': (False,)}[xla]
    return [Candidate(policy, flag) for policy in policies for flag in flags]


def choose(figures: Dict[Candidate, float], margin: float = MARGIN) -> Candidate:
    """The fastest candidate if it beats the first (the default) by `margin`, else the first."""
    default = next(iter(figures))
    fastest = max(figures, key=figures.get)
    return fastest if figures[fastest] >= margin * figures[default] else default


def describe(figures: Dict[str, float]) -> str:
    """The trial's figures for people, each as a ratio to the first."""
    if not figures:
        return ''
    base = next(iter(figures.values()))
    return '; '.join(f'{label} {rate:,.0f} img/s' + (f' ({rate / base:.2f}x)' if i else '')
                     for i, (label, rate) in enumerate(figures.items()))


def run(build: Callable[[Candidate], 'object'], dataset: tf.data.Dataset,
        options: Sequence[Candidate], examples_per_update: int, rounds: Optional[int] = None,
        seconds: Optional[float] = None, warmup: int = WARMUP_UPDATES,
        log: Optional[Callable[[str], None]] = None) -> Dict[Candidate, float]:
    """Images/s of each candidate's train step (see the module docstring); rounds and
    seconds default to ROUNDS and SECONDS.

    build(candidate) returns a StepFunctions with that candidate's policy and jit_compile; the
    caller sets Keras' global policy inside it and restores it after.
    """
    rounds = ROUNDS if rounds is None else rounds
    seconds = SECONDS if seconds is None else seconds
    runs = {}
    for candidate in options:
        start = time.perf_counter()
        runs[candidate] = _Run(build(candidate), dataset)
        runs[candidate].warm_up(warmup)
        if log:
            log(f'trial: {candidate.label} built and traced in '
                f'{time.perf_counter() - start:.1f} s')
    for turn in range(rounds):
        for candidate in (options if turn % 2 == 0 else list(reversed(options))):
            runs[candidate].time(examples_per_update, seconds)
    figures = {candidate: run_.best for candidate, run_ in runs.items()}
    # The candidates' iterators wait seconds to tens of seconds to be torn down, off the
    # training's time (teardown.py): they go in a thread, and this one trains.
    box, runs = [runs], None   # the thread's is then the only reference
    teardown.drop_in_background(box, 'drop-step-trial')
    return figures


class _Run:
    """One candidate's step and its own iterator over the trial's batches; the best rate."""

    def __init__(self, steps, dataset: tf.data.Dataset):
        self.steps = steps
        self.iterator = iter(steps.strategy.experimental_distribute_dataset(dataset))
        self.step_seconds, self.best = 0.0, 0.0

    def warm_up(self, updates: int) -> None:
        for _ in range(updates):
            self.steps.train_step(self.iterator)
        start = time.perf_counter()
        float(self.steps.train_step(self.iterator)[0])
        self.step_seconds = time.perf_counter() - start

    def time(self, examples_per_update: int, seconds: float) -> None:
        rate = speed.time_steps(lambda: self.steps.train_step(self.iterator),
                                examples_per_update, seconds, self.step_seconds)
        self.best = max(self.best, rate)
