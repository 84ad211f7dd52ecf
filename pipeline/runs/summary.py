"""Reads one pipeline run back from ML Metadata: states, outputs, settings, failure.

Everything printed at the end of `runner.py --local` comes from ML Metadata, not from in-process
state, so the summary (put into words by pipeline/runs/summary_text.py) shows exactly what was
recorded (and cached steps report their reused outputs). The local runner names its run, and
reads that run (`read_run`), not the newest one: another run into the same output may have
started since. Only a failure's message is in-process state: TFX records that an execution
failed, not why. Tests use `read_latest_run`.
"""
import dataclasses
import json
import os
from typing import Dict, List, Optional, Tuple

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from core import properties
from training.result import TrainResult


_STATE_NAMES = {v: k for k, v in metadata_store_pb2.Execution.State.items()}


@dataclasses.dataclass
class RunSummary:
    run_id: str
    states: Dict[str, str]                                   # node -> COMPLETE / CACHED / FAILED
    outputs: Dict[str, List[metadata_store_pb2.Artifact]]    # artifact type -> artifacts
    # node -> its execution's properties (TFX records a component's exec_properties there),
    # e.g. the trainer's batch size and learning rate, for the report's settings section.
    execution_properties: Dict[str, Dict[str, object]] = dataclasses.field(default_factory=dict)
    # (stage, first lines of its error) when a stage failed; None when none did.
    failure: Optional[Tuple[str, str]] = None
    # How this process ran Beam and why (pipeline/definition/beam_mode.py); like failure, not in ML
    # Metadata.
    beam: Optional[str] = None
    # When ML Metadata recorded the run (ms since the epoch); read_runs fills it in.
    created_ms: Optional[int] = None
    # What retention kept and deleted after the run (pipeline/runs/retention.py); not in ML
    # Metadata.
    retention: Optional[str] = None

    def _models(self, baseline: bool) -> List[metadata_store_pb2.Artifact]:
        # Both the trainer and the baseline component output Models; only the baseline's
        # carries `served_version`.
        return [m for m in self.outputs.get('Model', [])
                if (properties.SERVED_VERSION in m.custom_properties) == baseline]

    def trained_model(self) -> Optional[metadata_store_pb2.Artifact]:
        models = self._models(baseline=False)
        return models[0] if models else None

    def baseline_model(self) -> Optional[metadata_store_pb2.Artifact]:
        models = self._models(baseline=True)
        return models[0] if models else None

    def training_result(self) -> Optional[TrainResult]:
        """What the trainer recorded on its Model (None when there is no trained Model)."""
        model = self.trained_model()
        return None if model is None else TrainResult.from_properties(custom_properties(model))


def custom_property(artifact: metadata_store_pb2.Artifact, key: str):
    """The value of a custom property whatever its type, or None when it is absent."""
    if key not in artifact.custom_properties:
        return None
    value = artifact.custom_properties[key]
    return getattr(value, value.WhichOneof('value'))


def custom_properties(artifact: metadata_store_pb2.Artifact) -> Dict[str, object]:
    """Every custom property of the artifact, name -> value whatever its type."""
    return {key: custom_property(artifact, key) for key in artifact.custom_properties}


def class_names(examples: metadata_store_pb2.Artifact) -> List[str]:
    """Class names in label-index order, as ingestion recorded them on the Examples."""
    return json.loads(custom_property(examples, properties.CLASS_NAMES) or '[]')


def _execution_properties(executions, type_names) -> Dict[str, Dict[str, object]]:
    """node -> {name: value}: TFX puts an exec property in `properties` when the execution type
    declares it, else in `custom_properties`; both are read."""
    result = {}
    for execution in sorted(executions, key=lambda e: e.id):
        node = type_names.get(execution.type_id, str(execution.type_id)).rsplit('.', 1)[-1]
        values = list(execution.custom_properties.items()) + list(execution.properties.items())
        result[node] = {k: getattr(v, v.WhichOneof('value')) for k, v in values
                        if v.WhichOneof('value')}
    return result


def _store(metadata_path: str) -> metadata_store.MetadataStore:
    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = metadata_path
    config.sqlite.connection_mode = metadata_store_pb2.SqliteMetadataSourceConfig.READONLY
    return metadata_store.MetadataStore(config)


def _runs_of(store: metadata_store.MetadataStore,
             pipeline_name: str) -> List[metadata_store_pb2.Context]:
    pipeline = store.get_context_by_type_and_name('pipeline', pipeline_name)
    if pipeline is None:
        return []
    ours = {e.id for e in store.get_executions_by_context(pipeline.id)}
    return [c for c in store.get_contexts_by_type('pipeline_run')
            if ours & {e.id for e in store.get_executions_by_context(c.id)}]


def read_latest_run(metadata_path: str, pipeline_name: str) -> Optional[RunSummary]:
    """Returns the newest run of the pipeline, or None if it never ran."""
    store = _store(metadata_path)
    runs = _runs_of(store, pipeline_name)
    if not runs:
        return None
    return _summarise(store, max(runs, key=lambda c: (c.create_time_since_epoch, c.id)))


def read_runs(metadata_path: str, pipeline_name: str) -> List[RunSummary]:
    """Every run of the pipeline, oldest first, each with its creation time in ms ([] when the
    store is absent or the pipeline never ran): the report's history."""
    if not metadata_path or not os.path.isfile(metadata_path):
        return []
    store = _store(metadata_path)
    runs = sorted(_runs_of(store, pipeline_name), key=lambda c: (c.create_time_since_epoch, c.id))
    return [dataclasses.replace(_summarise(store, run), created_ms=run.create_time_since_epoch)
            for run in runs]


def read_run(metadata_path: str, run_id: str) -> Optional[RunSummary]:
    """Returns the run named run_id, or None when it recorded nothing (or the store is absent)."""
    if not os.path.isfile(metadata_path):  # the run stopped before TFX created the store
        return None
    store = _store(metadata_path)
    run = store.get_context_by_type_and_name('pipeline_run', run_id)
    return None if run is None else _summarise(store, run)


def _summarise(store: metadata_store.MetadataStore,
               run: metadata_store_pb2.Context) -> RunSummary:
    executions = store.get_executions_by_context(run.id)
    type_names = {t.id: t.name for t in store.get_execution_types()}
    states = {}
    for execution in sorted(executions, key=lambda e: e.id):
        node = type_names.get(execution.type_id, str(execution.type_id)).rsplit('.', 1)[-1]
        states[node] = _STATE_NAMES.get(execution.last_known_state, 'UNKNOWN')
    events = store.get_events_by_execution_ids([e.id for e in executions])
    output_ids = [e.artifact_id for e in events if e.type == metadata_store_pb2.Event.OUTPUT]
    artifact_types = {t.id: t.name for t in store.get_artifact_types()}
    outputs: Dict[str, List[metadata_store_pb2.Artifact]] = {}
    for artifact in store.get_artifacts_by_id(output_ids):
        outputs.setdefault(artifact_types[artifact.type_id], []).append(artifact)
    return RunSummary(run_id=run.name, states=states, outputs=outputs,
                      execution_properties=_execution_properties(executions, type_names))


def drift_artifact(summary: RunSummary) -> Optional[metadata_store_pb2.Artifact]:
    """DriftCheck's output (an ExampleAnomalies like ExampleValidator's, told apart by its
    drift_text), or None when it did not run."""
    return next((a for a in summary.outputs.get('ExampleAnomalies', [])
                 if properties.DRIFT_TEXT in a.custom_properties), None)


def drift_values(summary: RunSummary) -> List[dict]:
    """Every drift value DriftCheck measured ({feature, measure, value, threshold, exceeded})."""
    drift = drift_artifact(summary)
    if drift is None:
        return []
    return json.loads(custom_property(drift, properties.DRIFT_VALUES) or '[]')
