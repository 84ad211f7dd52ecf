"""Telling someone how a local run ended: a JSON summary file, a POST, a command.

After every local run that got as far as running (completed, or a stage failed),
pipeline/local/run.py calls `after_run`:
  1. the run's JSON summary (`payload`) is written next to its log, as
     `<output>/logs/<run>.summary.json`, atomically (a temp name, then a rename), whether or
     not anyone is notified;
  2. `--notify URL` POSTs that JSON (Content-Type application/json), with a short timeout and
     one retry: a receiver that is down delays the exit by at most about 2 x timeout + 2 s;
  3. `--on-finish CMD` runs CMD (split like a shell line, no shell) with the summary file's path
     as its last argument and in $PIPELINE_RUN_SUMMARY; its output goes to the run's log.
A notification that fails (refused, HTTP error, timeout, a command that fails or is missing)
never changes the run's exit code and hides nothing: the console gets one line,
"notification failed: ...", and the log the details. Standard library only (urllib).
Ctrl-C (exit 130) notifies nobody: whoever pressed it is at the console, and waiting for a
receiver would delay the exit they asked for.

On Kubeflow the Pusher's task sends the same payload after the push (pipeline/kubeflow/run_end.py),
built from the run's task records instead of ML Metadata. A run that fails before the Pusher
notifies nobody there: TFX 1.16's exit handler (KubeflowV2DagRunner.set_exit_handler) is handed
only the run's final state, no artifacts, and open-source KFP fills in no error message
(docs/kubeflow.md, "Notifications").
"""
import json
import logging
import os
import shlex
import subprocess
import time
import urllib.error
import urllib.request
from typing import Callable, List, Optional

from pipeline.runs import notify_facts as facts
from pipeline.runs import summary_text
from pipeline.runs.summary import RunSummary

ENV_VAR = 'PIPELINE_RUN_SUMMARY'
COMMAND_TIMEOUT_SECONDS = 600   # a hook may upload or page someone, not run forever
_RETRY_PAUSE_SECONDS = 2.0


def payload(summary: RunSummary, pipeline_name: str, exit_code: int, log_path: str,
            report_path: Optional[str], summary_file: str) -> dict:
    """What a receiver needs to act without opening the report; every field is always there."""
    outcome, version, reasons = facts.outcome(summary)
    drift = facts.drift(summary)
    counts = facts.example_counts(summary)
    served = summary_text.served_now(summary)
    return {
        'pipeline': pipeline_name, 'run_id': summary.run_id, 'exit_code': exit_code,
        'outcome': outcome,                  # pushed | not pushed | failed | did not finish
        'pushed_version': version,
        'reasons': reasons,                  # why not pushed, or the failed stage's error
        'failed_stage': summary.failure[0] if summary.failure else None,
        'error': summary.failure[1] if summary.failure else None,
        # None: not measured (no drift check ran); else its line and every compared value.
        'drift': None if drift is None else {
            'text': drift.text, 'values': drift.values, 'reasons': drift.reasons,
            'compared_version': drift.compared_version},
        'spans': facts.spans(summary),
        'examples': None if counts is None else {'train': counts[0], 'eval': counts[1]},
        'eval_accuracy': facts.eval_accuracy(summary),
        'training_skipped': facts.skipped_training(summary),
        'served_now': None if served is None else {'version': served[0], 'path': served[1]},
        # The Pusher's mode and the labels of models.config when this was written.
        'push_mode': facts.push_mode(summary), 'labels': facts.labels(summary),
        'log': log_path, 'report': report_path, 'summary_file': summary_file,
        'summary': summary_text.format_summary(summary),
    }


def write_summary(path: str, data: dict) -> str:
    """Whole or not at all: a hook never reads half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f'{path}.tmp-{os.getpid()}'
    with open(partial, 'w', encoding='utf-8') as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write('\n')
    os.replace(partial, path)
    return path


def post(url: str, data: dict, timeout: float, attempts: int = 2) -> Optional[str]:
    """POSTs data as JSON; None when a 2xx came back, else why not (after the retry)."""
    body = json.dumps(data, ensure_ascii=False).encode('utf-8')
    error = None
    for attempt in range(attempts):
        if attempt:
            time.sleep(_RETRY_PAUSE_SECONDS)
        request = urllib.request.Request(url, data=body, method='POST', headers={
            'Content-Type': 'application/json; charset=utf-8'})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read()
                return None
        except urllib.error.HTTPError as failed:
            error = f'HTTP {failed.code} {failed.reason}'
        except urllib.error.URLError as failed:
            error = str(failed.reason)
        except (TimeoutError, OSError) as failed:  # a read that timed out, a reset connection
            error = str(failed) or type(failed).__name__
        if 'timed out' in error and 'after' not in error:
            error = f'timed out after {timeout:g} s'
    return f'POST {url}: {error} ({attempts} attempts)'


def run_command(command: str, path: str) -> Optional[str]:
    """Runs the on-finish command; None when it exited 0, else why not."""
    argv = shlex.split(command) + [path]
    try:
        result = subprocess.run(argv, env=dict(os.environ, **{ENV_VAR: path}),
                                stdin=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT_SECONDS)
    except FileNotFoundError:
        return f'on-finish command not found: {argv[0]}'
    except subprocess.TimeoutExpired:
        return f'on-finish command still running after {COMMAND_TIMEOUT_SECONDS} s: stopped'
    except OSError as error:
        return f'on-finish command {argv[0]}: {error.strerror or error}'
    if result.returncode:
        return f'on-finish command exited with status {result.returncode}: {command}'
    return None


def after_run(config, summary: RunSummary, exit_code: int, log_path: str,
              report_path: Optional[str], say: Callable[[str], None]) -> List[str]:
    """What pipeline/local/run.py calls once the summary and report are out: writes the summary
    file next to the log, then notifies as configured. Never raises: any failure, even a bug
    here, is one console line, and the run's exit code stays the run's."""
    try:
        summary_file = os.path.splitext(log_path)[0] + '.summary.json'
        data = payload(summary, config.name, exit_code, log_path, report_path, summary_file)
        return finish(config.notify, data, say)
    except Exception as error:  # pylint: disable=broad-except
        logging.exception('notification failed')
        say(f'notification failed: {type(error).__name__}: {error}')
        return [str(error)]


def finish(notify, data: dict, say: Callable[[str], None],
           path: Optional[str] = None) -> List[str]:
    """Writes the summary file (at `path`, by default data['summary_file']), then notifies as
    `notify` (NotifyConfig) asks, the on-finish command getting that file; one console line per
    outcome; returns the failures. A Kubeflow task gives a local `path` and keeps the file at
    data['summary_file'] in the run's folder itself (pipeline/kubeflow/run_end.py)."""
    failures = []
    path = path or data['summary_file']
    try:
        write_summary(path, data)
    except OSError as error:
        failures.append(f'summary file {path}: {error.strerror or error}')
    if notify.url:
        failed = post(notify.url, data, notify.timeout_seconds)
        if failed:
            failures.append(failed)
        else:
            say(f'Notified {notify.url}')
    if notify.on_finish:
        failed = run_command(notify.on_finish, path)
        if failed:
            failures.append(failed)
        else:
            say(f'On-finish command done: {notify.on_finish}')
    for failure in failures:
        say(f'notification failed: {failure}')
    return failures
