"""Settings of scheduled retraining: small frozen dataclasses that pipeline/config.py composes.

(pipeline/config.py is over size; each part of scheduled retraining adds its own class here.)
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class RetentionConfig:
    """What a local run keeps of older runs in pipeline_root (pipeline/retention.py).

    keep_runs K: every artifact of the newest K runs stays; older runs' artifacts are deleted
    unless the training window or a kept serving version still needs them. 0 keeps everything.
    The default, 3: today's run, and the two before it to compare with (their statistics,
    evaluation and model stay on disk and their reports stay whole); anything older is only
    kept when it is still used, so the disk holds about K runs, the window's spans and the
    models of the kept serving versions, whatever the number of runs.
    """
    keep_runs: int = 3

    def __post_init__(self):
        if self.keep_runs < 0:
            raise ValueError(f'keep_runs must be >= 0 (0 keeps every run), got {self.keep_runs}')
