"""TrainResult: what one training did, typed, and the one codec that writes and reads it.

The loop (loop.run_training) fills what it measured, the job (job.train_and_export) adds how it
ran, and the chief writes the whole as `metrics.json` (`to_metrics`); launch/ reads a worker's
file back (`from_metrics`). The trainer's executor records it on the Model in ML Metadata
(`to_properties`, components/trainer/result_record.py) and the run summary and the report read
it back (`from_properties`, pipeline/runs/summary.py). Each field is a property of the Model
under the field's name, a name other code, the docs and users read: never rename one, add the
old name to OLDER_NAMES instead.

None is "not recorded": a fixed length has no epochs, a table no flips, a run without a trial
no trial, and a Model recorded by an older version lacks what came later. Reading ignores names
it does not know (the Model's other properties: input shape, window, ...). No TFX imports.
"""
import dataclasses
import json
import math
import typing
from typing import Any, Dict, Mapping, Optional, Tuple, Union

# The names older versions recorded, and the field each is now: read when the field's own name
# is absent (the field's name wins over an old one).
OLDER_NAMES = {
    'replicas': 'num_replicas',   # before the local workers (5c87b3e) recorded num_workers too
}


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """One training's figures and decisions (each None when not recorded: module docstring)."""
    # The loop (training/loop.py): the last log window's train loss and accuracy, then eval_fn's.
    train_loss: Optional[float] = None
    train_accuracy: Optional[float] = None
    eval_loss: Optional[float] = None
    eval_accuracy: Optional[float] = None
    start_step: Optional[int] = None       # > 0: this attempt resumed from a checkpoint
    skipped_updates: Optional[int] = None  # updates the loss scale skipped (mixed_float16)
    steps_run: Optional[int] = None
    stop_reason: Optional[str] = None      # one sentence (stopping.stop_reason)
    examples_per_second: Optional[float] = None   # training rate, tracing update left out
    input_wait_fraction: Optional[float] = None
    epoch_seconds: Optional[Tuple[float, ...]] = None   # each epoch's wall seconds
    plan_changes: Optional[int] = None     # with a time target: how often the length moved
    epochs_run: Optional[float] = None     # with epochs
    best_epoch: Optional[int] = None       # with epochs; 0 = none evaluated
    held_out_accuracy: Optional[float] = None   # the best epoch's, when there was one
    held_out_loss: Optional[float] = None
    # The job (training/job.py).
    held_out_examples: Optional[int] = None     # with epochs
    held_out_reason: Optional[str] = None       # when the share is not the one asked
    # Images: whether flips were used. ML Metadata records every other number as a double; the
    # executor recorded this one as an int, beside the Model's input shape, and readers read one.
    flip: Optional[bool] = dataclasses.field(default=None, metadata={'property': int})
    flip_reason: Optional[str] = None
    mixed_precision: Optional[str] = None  # the policy it trained under
    precision_reason: Optional[str] = None
    xla: Optional[bool] = None
    xla_reason: Optional[str] = None
    step_trial: Optional[str] = None       # the timed trial's figures, when one ran
    step_trial_seconds: Optional[float] = None
    train_flops_per_example: Optional[float] = None   # against the matmul peak (speed.py)
    train_flops_per_second: Optional[float] = None
    peak_flops_per_second: Optional[float] = None
    peak_dtype: Optional[str] = None
    peak_fraction: Optional[float] = None
    global_batch_size: Optional[int] = None   # the batch used (configured, or from the data)
    num_replicas: Optional[int] = None
    num_workers: Optional[int] = None
    input_sharding: Optional[str] = None
    warm_start_version: Optional[int] = None  # -1: not warm-started
    # The launcher (launch/launchers.py): Kubeflow's cluster API that ran the pods, TrainJob or
    # TFJob (pipeline/kubeflow/jobs/launcher.py); None elsewhere.
    training_api: Optional[str] = None
    # The trainer (components/trainer/unchanged.py): the served model handed on, untrained.
    training_skipped: Optional[bool] = None

    # -- metrics.json: JSON's own numbers (ints stay ints), a flag as 0 or 1, a list as text.

    def to_metrics(self) -> Dict[str, Any]:
        return {name: _plain(value) for name, value in self._recorded()}

    @classmethod
    def from_metrics(cls, values: Mapping[str, Any]) -> 'TrainResult':
        return cls._read(values)

    # -- ML Metadata custom properties of the Model: every number a double (flip an int), and
    # a non-finite one (a diverged loss) as its text: TFX's Kubeflow entry point writes the
    # executor output as JSON, which has no NaN or Infinity, so the task would fail after
    # training instead of reporting the value.

    def to_properties(self) -> Dict[str, Union[int, float, str]]:
        return {name: _property(value, _FIELDS[name].metadata.get('property', float))
                for name, value in self._recorded()}

    @classmethod
    def from_properties(cls, values: Mapping[str, Any]) -> 'TrainResult':
        """From a Model's custom properties as ML Metadata hands them back (name -> value),
        whichever version recorded them."""
        return cls._read(values)

    def _recorded(self):
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None]

    @classmethod
    def _read(cls, values: Mapping[str, Any]) -> 'TrainResult':
        found = {OLDER_NAMES[name]: value for name, value in values.items()
                 if name in OLDER_NAMES}
        found.update((name, value) for name, value in values.items() if name in _FIELDS)
        return cls(**{name: _decode(_TYPES[name], value) for name, value in found.items()
                      if value is not None})


_FIELDS = {f.name: f for f in dataclasses.fields(TrainResult)}
# Each field's type, Optional[X] as X.
_TYPES = {name: next(a for a in typing.get_args(kind) if a is not type(None))
          for name, kind in typing.get_type_hints(TrainResult).items()}


def _plain(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, tuple):
        return json.dumps(list(value))
    return value


def _property(value, kind):
    value = _plain(value)
    if isinstance(value, str):
        return value
    if kind is int:
        return int(value)
    return float(value) if math.isfinite(value) else repr(float(value))


def _decode(kind, value):
    if kind is str:
        return str(value)
    if kind is bool:
        return bool(float(value))
    if kind is int:
        return int(float(value))
    if kind is float:
        return float(value)   # also 'nan', 'inf', '-inf': a non-finite number as text
    return tuple(float(v) for v in (json.loads(value) if isinstance(value, str) else value))
