"""The end of a Kubeflow run: retention (--keep-runs) and the notification (--notify, --on-finish).

A step of the Pusher's task, run by pipeline/kubeflow/entrypoint.py once the Pusher's executor has
returned and the task's record is written. Why there and not a task of its own:
- every other task of the pipeline is an ancestor of the Pusher (pipeline/definition/factory.py), so
when
  it ends, every fact of the run is recorded: the records of all tasks
  (pipeline/kubeflow/task_record.py) hold the Examples, the Model, the baseline, the drift check,
  the blessing and the PushedModel with their properties, what the local summary reads from
  ML Metadata;
- a task of its own would be a TFX component, and a stage's executor may not import pipeline/
  (tests/test_import_rules.py), where retention and notification live; its output would need a
  custom artifact type, which TFX's Kubeflow entry point can only import by a one-dot schema
  title (tfx/orchestration/kubeflow/v2/compiler_utils.py _SCHEMA_TITLE_RE);
- a run that fails before the Pusher ends either way without this step: KFP runs a task only
  when its upstream tasks succeeded, and TFX 1.16's exit handler cannot say why a run failed
  (docs/kubeflow.md, "Notifications").

What the step does is compiled into the Pusher's `custom_config` under RUN_END_KEY (`settings`,
pipeline/kubeflow/compiler.py); the Pusher's executor reads its own keys only. With none of
--keep-runs,
--notify and --on-finish there is no step. The step never fails the task: retention's errors are
its summary line, and a notification that fails is one log line, as locally.

The summary (pipeline/runs/notify.py `payload`, the same fields as a local run's) is written beside
the Pusher's record as `run_summary.json`; its `log` and `report` are null (the run's logs are
KFP's, there is no report page on Kubeflow). --on-finish runs in the Pusher's container, with a
local copy of the summary file.
"""
import dataclasses
import json
import logging
import os
import tempfile
from typing import Dict, List, Optional

from ml_metadata.proto import metadata_store_pb2

from core import storage
from pipeline.kubeflow import task_record as records_lib
from pipeline.runs import notify
from pipeline.kubeflow import retention
from pipeline.runs import stages
from pipeline.definition.config_retraining import NotifyConfig, RetentionConfig
from pipeline.runs.summary import RunSummary

RUN_END_KEY = 'run_end'            # in the Pusher's custom_config
SUMMARY_NAME = 'run_summary.json'  # beside the Pusher's task record
_CUSTOM = 'custom:'                # TFX's prefix of a custom property named like a property


def settings(config) -> Optional[dict]:
    """What the step needs, from the PipelineConfig; None when it has nothing to do."""
    if not (config.retention.keep_runs or config.notify.url or config.notify.on_finish):
        return None
    return {'pipeline_name': config.name, 'pipeline_root': config.pipeline_root,
            'serving_dir': config.serving_dir, **dataclasses.asdict(config.retention),
            **dataclasses.asdict(config.notify)}


def from_parameters(parameter_values) -> Optional[dict]:
    """The settings compiled into a task's custom_config parameter, or None."""
    value = parameter_values.get('custom_config')
    if value is None or value.WhichOneof('kind') != 'string_value' or not value.string_value:
        return None
    try:
        found = json.loads(value.string_value)
    except ValueError:
        return None
    return found.get(RUN_END_KEY) if isinstance(found, dict) else None


def run_of(task_folder: str, pipeline_root: str, pipeline_name: str) -> Optional[str]:
    """The run id of <pipeline_root>/<pipeline>/<run id>/<task>/<uuid>, or None when the task
    folder is not laid out so (another orchestrator: Vertex AI names no pipeline folder)."""
    folder = storage.normpath(storage.to_s3(os.path.join(pipeline_root, pipeline_name)))
    task_folder = storage.normpath(storage.to_s3(task_folder))
    if not task_folder.startswith(folder.rstrip('/') + '/'):
        return None
    parts = task_folder[len(folder.rstrip('/')) + 1:].split('/')
    return parts[0] if len(parts) == 3 else None


def _value(value) -> metadata_store_pb2.Value:
    """A JSON value of TFX's ExecutorOutput as ML Metadata holds it: whole numbers as ints (TFX
    writes ints as numbers), other numbers as doubles, strings as they are, anything else as
    its JSON text."""
    out = metadata_store_pb2.Value()
    if isinstance(value, bool):
        out.int_value = int(value)
    elif isinstance(value, (int, float)):
        if float(value).is_integer():
            out.int_value = int(value)
        else:
            out.double_value = float(value)
    elif isinstance(value, str):
        out.string_value = value
    else:
        out.string_value = json.dumps(value)
    return out


def _artifact(entry: dict, number: int) -> metadata_store_pb2.Artifact:
    """An output of a record as the ML Metadata artifact a local summary reads: every property
    a custom property (the local summary reads custom properties), `custom:` ones winning."""
    artifact = metadata_store_pb2.Artifact(id=number, uri=entry['uri'])
    found = entry.get('properties', {})
    for key in sorted(found, key=lambda k: k.startswith(_CUSTOM)):
        artifact.custom_properties[key[len(_CUSTOM):] if key.startswith(_CUSTOM) else key
                                   ].CopyFrom(_value(found[key]))
    return artifact


def summary_from_records(run_id: str, tasks: List[records_lib.TaskRecord], serving_dir: str,
                         custom_config: str) -> RunSummary:
    """The RunSummary a local run reads from ML Metadata, from the run's task records."""
    ordered = sorted((t for t in tasks if t.data), key=lambda t: t.data.get('started', 0))
    outputs: Dict[str, list] = {}
    number = 0
    for task in ordered:
        for entry in task.data.get('outputs', ()):
            number += 1
            outputs.setdefault(entry.get('type', ''), []).append(_artifact(entry, number))
    failed = next((t for t in ordered if t.data.get('state') == records_lib.FAILED), None)
    return RunSummary(
        run_id=run_id, states={t.task: t.data.get('state', 'UNKNOWN') for t in ordered},
        outputs=outputs, execution_properties={
            stages.PUSHER: {'custom_config': custom_config},
            stages.BASELINE: {'serving_dir': serving_dir}},
        failure=None if failed is None else (failed.task, failed.data.get('error') or 'failed'))


def after_push(run_end: dict, task_folder: str, custom_config: str) -> Optional[dict]:
    """Retention, then the summary file and the notification; returns the payload (None when
    the task folder is not in KFP's layout). Never raises."""
    try:
        return _after_push(run_end, task_folder, custom_config)
    except Exception as error:  # pylint: disable=broad-except
        logging.exception('The end of the run failed')
        logging.warning('notification failed: %s: %s', type(error).__name__, error)
        return None


def _say(line: str) -> None:
    """A line of notify.finish into the task's log: a failure as a warning."""
    (logging.warning if line.startswith('notification failed') else logging.info)('%s', line)


def _after_push(run_end: dict, task_folder: str, custom_config: str) -> Optional[dict]:
    root, name = run_end['pipeline_root'], run_end['pipeline_name']
    run_id = run_of(task_folder, root, name)
    if run_id is None:
        logging.warning('No retention or notification: %s is not in open-source KFP\'s layout '
                        '<pipeline_root>/<pipeline>/<run id>/<task>/<uuid>', task_folder)
        return None
    outcome = retention.apply(root, name, run_id,
                                  RetentionConfig.from_properties(run_end).keep_runs,
                                  run_end['serving_dir'])
    logging.info('Retention: %s', outcome.text())
    folder = os.path.join(storage.to_s3(root), name, run_id)
    tasks = records_lib.read_runs(os.path.dirname(folder)).get(run_id, [])
    summary = summary_from_records(run_id, tasks, storage.to_s3(run_end['serving_dir']),
                                   custom_config)
    summary.retention = outcome.text()
    target = os.path.join(storage.to_s3(task_folder), SUMMARY_NAME)
    data = notify.payload(summary, name, 0, None, None, target)
    with tempfile.TemporaryDirectory(prefix='run-summary-') as local:
        path = os.path.join(local, SUMMARY_NAME)
        notify.finish(NotifyConfig.from_properties(run_end), data, _say, path=path)
        if os.path.exists(path):
            storage.copy_file(path, target)
    return data
