"""Settings of scheduled retraining (issue 18), kept out of pipeline/config.py (over size).

NotifyConfig: who is told how a run ended (pipeline/notify.py; on Kubeflow from the Pusher's
task, pipeline/kfp_run_end.py). `--notify URL` POSTs a JSON summary; `--on-finish CMD` runs a
command with the summary file's path. Both also come from the config file's [notify] table
(config.example.toml); flags win.

RetentionConfig: what a run keeps of older runs in pipeline_root (pipeline/retention.py; on
Kubeflow pipeline/retention_kfp.py), `--keep-runs K` or the [retention] table.

DriftConfig: how far a new span may drift from the served model's training data before the run
refuses to push (components/drift/), `--max-label-drift` or the [drift] table.
"""
import dataclasses
import re
import shlex
from typing import Optional


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclasses.dataclass(frozen=True)
class NotifyConfig:
    url: Optional[str] = None          # POST the run's JSON summary here (http:// or https://)
    on_finish: Optional[str] = None    # command line; the summary file's path is appended
    # Per attempt; one retry. Short, so an unreachable receiver delays the exit by seconds.
    timeout_seconds: float = 10.0

    def __post_init__(self):
        _check(self.url is None or re.match(r'https?://[^/\s]+', self.url) is not None,
               f'url must be an http:// or https:// URL, got {self.url!r}')
        _check(self.on_finish is None or bool(self.on_finish.strip()),
               'on_finish must be a command, got an empty string')
        try:  # split as pipeline/notify.py runs it (no shell): bad quoting fails here, not later
            shlex.split(self.on_finish or '')
        except ValueError as error:
            raise ValueError(f'on_finish must be a command line: {error}: '
                             f'{self.on_finish!r}') from None
        _check(0 < self.timeout_seconds <= 300,
               f'timeout_seconds must be in (0, 300], got {self.timeout_seconds}')


@dataclasses.dataclass(frozen=True)
class RetentionConfig:
    """keep_runs K: every artifact of the newest K runs stays; older runs' artifacts are deleted
    unless the training window or a kept serving version still needs them. 0 keeps everything.
    The default, 3: today's run, and the two before it to compare with (their statistics,
    evaluation and model stay on disk and their reports stay whole); anything older is only
    kept while it is still used, so the disk holds about max(K, push.keep_versions) runs and
    the window's spans, whatever the number of runs.
    """
    keep_runs: int = 3

    def __post_init__(self):
        _check(self.keep_runs >= 0, f'keep_runs must be >= 0 (0 keeps every run), got '
                                    f'{self.keep_runs}')


@dataclasses.dataclass(frozen=True)
class DriftConfig:
    """How far the new span's data may move from the data the served model was trained on
    before the run refuses to push (components/drift/). 1.0 switches a check off: no
    L-infinity distance or Jensen-Shannon divergence (base 2) exceeds it.

    Defaults: a class-mix shift of 30 points (L∞ 0.30: e.g. one class from 25% to 55%) is
    far beyond sampling noise (a 4-class span of 1,000 images moves a share by about 0.03)
    and is the size of shift that visibly biases a classifier; the issue's drifted day was
    0.59. The same 0.30 holds for other categorical columns and for the image size and
    colour-mode mixes (a share moving by 30 points changes what the model sees). Numeric
    columns: Jensen-Shannon 0.15, about a one-standard-deviation shift of the mean, while two
    samples of 150 rows of the same distribution measure up to about 0.07.
    """
    max_label_drift: float = 0.30        # L-infinity of the label (class) mix
    max_categorical_drift: float = 0.30  # L-infinity of other categorical (CSV string) columns
    max_numeric_drift: float = 0.15      # Jensen-Shannon divergence of numeric (CSV) columns
    max_image_drift: float = 0.30        # L-infinity of the image size and colour-mode mixes

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            _check(0.0 <= value <= 1.0, f'{field.name} must be in [0, 1], got {value}')
