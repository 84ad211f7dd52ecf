"""Settings of what happens around a run (core/settings.py).

NotifyConfig: who is told how a run ended (pipeline/runs/notify.py; on Kubeflow from the Pusher's
task, pipeline/kubeflow/run_end.py). `--notify URL` POSTs a JSON summary; `--on-finish CMD` runs a
command with the summary file's path. Both also come from the config file's [notify] table
(config.example.toml); flags win.

RetentionConfig: what a run keeps of older runs in pipeline_root (pipeline/runs/retention.py; on
Kubeflow pipeline/kubeflow/retention.py), `--keep-runs K` or the [retention] table.

The [drift] table is the drift stage's own DriftParams (components/drift/params.py).
"""
import dataclasses
import re
import shlex
from typing import ClassVar, Optional

from core.settings import Settings, setting


def _split_error(command: Optional[str]) -> Optional[str]:
    """Why the command does not split as pipeline/runs/notify.py runs it (no shell), or None: bad
    quoting fails here, not when the run ends."""
    try:
        shlex.split(command or '')
    except ValueError as error:
        return str(error)
    return None


@dataclasses.dataclass(frozen=True)
class NotifyConfig(Settings):
    GROUP: ClassVar[str] = 'execution'
    url: Optional[str] = setting(
        None, "POST the run's JSON summary here when it ends (pushed, not pushed and why, "
        'failed stage, drift); a failure to notify never fails the run', '--notify',
        metavar='URL', check=(lambda url: url is None or re.match(r'https?://[^/\s]+', url)
                              is not None, 'must be an http:// or https:// URL'))
    on_finish: Optional[str] = setting(
        None, "run CMD when the run ends (with --kubeflow: in the Pusher's container), with the "
        "JSON summary file's path as its last argument and in $PIPELINE_RUN_SUMMARY",
        '--on-finish', metavar='CMD',
        check=(lambda command: command is None or bool(command.strip()), 'must be a command'))
    # Short, so an unreachable receiver delays the exit by seconds.
    timeout_seconds: float = setting(
        10.0, 'per attempt; one retry; a failure never fails the run',
        check=(lambda seconds: 0 < seconds <= 300, 'must be in (0, 300]'))

    def _checks(self):
        error = _split_error(self.on_finish)
        yield error is None, f'on_finish must be a command line: {error}: {self.on_finish!r}'


@dataclasses.dataclass(frozen=True)
class RetentionConfig(Settings):
    """keep_runs K: every artifact of the newest K runs stays; older runs' artifacts are deleted
    unless the training window or a kept serving version still needs them. 0 keeps everything.
    The default, 3: today's run, and the two before it to compare with (their statistics,
    evaluation and model stay on disk and their reports stay whole); anything older is only
    kept while it is still used, so the disk holds about max(K, push.keep_versions) runs and
    the window's spans, whatever the number of runs.
    """
    GROUP: ClassVar[str] = 'execution'
    keep_runs: int = setting(
        3, "after each run (with --kubeflow: in the Pusher's task, every task then uncached), "
        'delete the artifacts of runs older than the newest K from the pipeline root, but what '
        'the training window and the kept serving versions use; 0 = keep everything',
        '--keep-runs', metavar='K',
        check=(lambda count: count >= 0, 'must be >= 0 (0 keeps every run)'))
