"""`runner.py --promote VERSION` and `--reject VERSION --reason TEXT`: a person's decision on a
candidate, written into TF Serving's model config.

In `candidate` push mode a blessed model goes out as the `canary` version beside `stable`
(core/serving_labels.py). Promoting makes a kept version `stable` (the canary, or
any other kept version); rejecting drops the canary label, so TF Serving unloads that version at
its next poll of models.config while the files stay for inspection until retention trims them.
Each decision takes the output folder's run lock, as a run and a rollback do
(pipeline/runs/runlock.py), works on a local, gs:// or s3:// serving folder (--serving-dir, or the
config file's serving_uri), and is appended, as one JSON line written with one write(), to
`<output>/approvals.jsonl`, beside rollbacks.jsonl: when, who (the user and host), what, the
labels before and after, and the reason given.
"""
import datetime
import getpass
import json
import os
import socket
import sys
from typing import Optional

from pipeline.runs import rollback as rollback_lib
from pipeline.runs import runlock
from pipeline.definition.config import PipelineConfig

APPROVALS_FILE = 'approvals.jsonl'
ACTIONS = ('promote', 'reject')


def read_approvals(output_dir: str) -> list:
    """Every decision recorded for this output folder, oldest first ([] when none)."""
    path = os.path.join(os.path.abspath(output_dir), APPROVALS_FILE)
    if not os.path.isfile(path):
        return []
    with open(path, encoding='utf-8') as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):   # no name for this uid (a container)
        user = f'uid {os.getuid()}'
    return f'{user}@{socket.gethostname()}'


def decide(output_dir: str, serving: str, action: str, version: int,
           reason: Optional[str] = None) -> dict:
    """Applies the decision to serving's models.config and records it; returns the record.
    The caller holds the output lock. serving_labels.LabelError when it cannot be done."""
    from core import serving_labels, versions  # TensorFlow: once flags are good
    kept = versions.complete_versions(serving)
    if version not in kept:
        raise serving_labels.LabelError(f'version {version} is not kept under {serving}; kept: '
                                        + (', '.join(map(str, kept)) or 'none'))
    name, before = serving_labels.read_config(serving) or (
        '', serving_labels.Labels(stable=versions.served_version(serving)))
    after = (serving_labels.promote if action == 'promote' else serving_labels.reject)(
        before, version)
    versions.label(serving, name or PipelineConfig.name, after)
    record = {'time': datetime.datetime.now().isoformat(timespec='seconds'), 'by': _who(),
              'action': action, 'version': version, 'reason': reason or '',
              'before': {'stable': before.stable, 'canary': before.canary},
              'after': {'stable': after.stable, 'canary': after.canary}}
    rollback_lib.append_record(output_dir, APPROVALS_FILE, record)
    return record


def main(action: str, version: int, output: Optional[str], config_file: Optional[str],
         wait: bool, serving_dir: Optional[str] = None, reason: Optional[str] = None) -> int:
    """runner.py --promote / --reject: 0 when done, 2 with a one-line error otherwise."""
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')   # as rollback: one line on the console
    try:
        folder = rollback_lib.output_folder(output, config_file)
        serving = rollback_lib.serving_folder(folder, serving_dir, config_file)
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    from core import serving_labels, storage
    storage.enable_for([serving])
    os.makedirs(folder, exist_ok=True)
    lock, code = runlock.take(folder, wait, f'{action} when it has finished, or without '
                              '--no-wait to wait for it', 'nothing changed')
    if lock is None:
        return code
    try:
        lock.record(f'{action}-{version}')
        record = decide(folder, serving, action, version, reason)
    except serving_labels.LabelError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    finally:
        lock.release()
    after = serving_labels.Labels(**record['after'])
    done = {'promote': 'Promoted', 'reject': 'Rejected'}[action]
    print(f'{done} version {version}: labels now {after.text()} in '
          f'{serving_labels.config_path(serving)}', flush=True)
    return 0
