"""What each Kubeflow task leaves beside its outputs for retention: inputs, outputs, state, times.

Locally retention reads a run's executions, their input and output artifacts and their states
from this process's ML Metadata (pipeline/runs/retention.py). On Kubeflow Pipelines that store is
the cluster's, behind its gRPC service, whose address reaches KFP's driver and launcher as flags
(backend/src/v2/compiler/argocompiler/container.go: --mlmd_server_address), not the task's own
process; what a task does know is its own ExecutorInput. So every task
(pipeline/kubeflow/entrypoint.py) writes one small JSON file into its own task folder, the folder
KFP made for its outputs:

    <pipeline_root>/<pipeline>/<run id>/<task>/<uuid>/task_record.json
    (backend/src/v2/metadata/client.go GetPipeline: the run's root is <root>/<pipeline>/<run id>;
     driver/driver.go provisionOutputs: each output at <run root>/<task>/<uuid>/<key>)

holding what the ML Metadata records hold for retention and for the run's notification: each
input's URI and type (a cache hit or an older span reaches a task as an input, so what a run
uses is what its tasks name), each output's URI and type with its properties as the task wrote
them (TFX's ExecutorOutput: an Examples' `window`, a PushedModel's `pushed_destination`, the
DriftCheck's `drift_text`, ...), the state (COMPLETE or FAILED) and when it started and ended.
The launcher's own output, `executor-logs`, is named too: it is the run's as much as TFX's
outputs are. A cached task runs no pod and writes nothing, but its outputs are inputs of the
tasks after it. pipeline/kubeflow/retention.py and pipeline/kubeflow/run_end.py read the records
back (`read_runs`).

A record is written whole or not at all (one object, one write). No TFX imports.
"""
import dataclasses
import json
import logging
import os
import time
from typing import Dict, Iterable, List, Optional

import tensorflow as tf

from core import storage

RECORD_NAME = 'task_record.json'
VERSION = 1
COMPLETE, FAILED = 'COMPLETE', 'FAILED'


def type_name(artifact_type) -> str:
    """'Examples' of an ArtifactTypeSchema: its instanceSchema's title (TFX compiles
    `title: tfx.Examples`), else its schemaTitle (`system.Artifact`), without the namespace."""
    kind = artifact_type.WhichOneof('kind')
    title = ''
    if kind == 'instance_schema':
        title = next((line.split(':', 1)[1].strip() for line in
                      artifact_type.instance_schema.splitlines() if line.startswith('title:')), '')
    elif kind == 'schema_title':
        title = artifact_type.schema_title
    return title.rsplit('.', 1)[-1]


def task_root(executor_input) -> Optional[str]:
    """The folder KFP made for this task's outputs (each output is <task root>/<key>), or None
    when the outputs share none (no outputs, or another orchestrator's layout)."""
    parents = {storage.normpath(os.path.dirname(storage.normpath(a.uri)))
               for lst in executor_input.outputs.artifacts.values() for a in lst.artifacts}
    return parents.pop() if len(parents) == 1 else None


def _output_properties(output_file: Optional[str]) -> Dict[str, dict]:
    """{output key: its metadata} from TFX's ExecutorOutput file."""
    text = storage.read_text(output_file) if output_file else None
    if text is None:
        return {}
    written = json.loads(text)
    result = {}
    for key, artifacts in written.get('artifacts', {}).items():
        for artifact in artifacts.get('artifacts', ())[:1]:
            result[key] = artifact.get('metadata', {})
    return result


def make(prepared, original, state: str, started: float, error: Optional[str] = None,
         output_file: Optional[str] = None, run_end: bool = False) -> dict:
    """The record of one task: `prepared` is the ExecutorInput TFX got (inputs typed as the task
    declares them), `original` the one KFP handed over (every output, executor-logs too).
    run_end: this task ends the run (pipeline/kubeflow/run_end.py), so its record marks the run
    finished."""
    properties = _output_properties(output_file)
    inputs = [{'key': key, 'uri': storage.to_s3(a.uri), 'type': type_name(a.type),
               'id': a.name} for key, lst in sorted(prepared.inputs.artifacts.items())
              for a in lst.artifacts]
    outputs = [{'key': key, 'uri': storage.to_s3(a.uri), 'type': type_name(a.type),
                'properties': properties.get(key, {})}
               for key, lst in sorted(original.outputs.artifacts.items()) for a in lst.artifacts]
    return {'version': VERSION, 'state': state, 'started': started, 'ended': time.time(),
            'error': error, 'run_end': run_end, 'inputs': inputs, 'outputs': outputs}


def write(record: dict, folder: str) -> str:
    """Writes the record into the task folder; returns its path."""
    path = os.path.join(storage.to_s3(folder), RECORD_NAME)
    if '://' not in folder:   # a bucket needs no folder (and gets no folder object)
        os.makedirs(folder, exist_ok=True)
    with tf.io.gfile.GFile(path, 'w') as handle:
        handle.write(json.dumps(record, indent=1, sort_keys=True))
    return path


@dataclasses.dataclass(frozen=True)
class TaskRecord:
    run: str          # the run folder's name: KFP's run id
    task: str         # the task's name in the DAG
    folder: str       # <pipeline folder>/<run>/<task>/<uuid>
    data: dict        # what `make` wrote; {} for a task folder without a record


def _names(folder: str) -> List[str]:
    """The entries of a folder (a bucket's listing gives sub-folders with a trailing '/')."""
    if not tf.io.gfile.isdir(folder):
        return []
    return sorted({name.rstrip('/') for name in tf.io.gfile.listdir(folder)} - {''})


def read_runs(pipeline_folder: str) -> Dict[str, List[TaskRecord]]:
    """{run id: its task folders, each with its record} under <pipeline_root>/<pipeline>. A task
    folder without a record (a task killed before it wrote one, a run older than records) has
    data {}; an unreadable record is logged and read as {}."""
    runs: Dict[str, List[TaskRecord]] = {}
    for run in _names(pipeline_folder):
        run_folder = os.path.join(pipeline_folder, run)
        if not tf.io.gfile.isdir(run_folder):
            continue
        runs[run] = []
        for task in _names(run_folder):
            for unique in _names(os.path.join(run_folder, task)):
                folder = os.path.join(run_folder, task, unique)
                if tf.io.gfile.isdir(folder):
                    runs[run].append(TaskRecord(run, task, folder, _read(folder)))
    return runs


def _read(folder: str) -> dict:
    path = os.path.join(folder, RECORD_NAME)
    try:
        text = storage.read_text(path)
        return {} if text is None else json.loads(text)
    except storage.StoreUnanswered:   # an outage is not an unreadable record
        raise
    except (ValueError, OSError, tf.errors.OpError) as error:
        logging.warning('Unreadable task record %s: %s', path, error)
        return {}


def uris(records: Iterable[TaskRecord], side: str) -> List[str]:
    """Every artifact URI the records name on one side ('inputs' or 'outputs')."""
    return [entry['uri'] for record in records for entry in record.data.get(side, ())]
