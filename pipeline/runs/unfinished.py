"""Marks a run's unfinished executions FAILED in ML Metadata, for a run that ends without TFX.

When a stage raises, TFX's launcher records its execution FAILED itself. A run ended from
outside the stage (the store watch, core/store_watch.py, calls os._exit while the stage waits in
a store client) never gets there: its execution would stay RUNNING for ever, which the report,
the history and anyone reading ML Metadata would take for a run still going. A FAILED
execution's outputs are never cache hits, so the next run does that stage again.
"""
import os
from typing import List

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

_UNFINISHED = (metadata_store_pb2.Execution.NEW, metadata_store_pb2.Execution.RUNNING)


def mark_failed(metadata_path: str, run_id: str) -> List[str]:
    """Sets every NEW or RUNNING execution of the run to FAILED; returns their node names."""
    if not metadata_path or not os.path.isfile(metadata_path):
        return []
    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = metadata_path
    store = metadata_store.MetadataStore(config)
    run = store.get_context_by_type_and_name('pipeline_run', run_id)
    if run is None:
        return []
    unfinished = [e for e in store.get_executions_by_context(run.id)
                  if e.last_known_state in _UNFINISHED]
    for execution in unfinished:
        execution.last_known_state = metadata_store_pb2.Execution.FAILED
    if unfinished:
        store.put_executions(unfinished)
    type_names = {t.id: t.name for t in store.get_execution_types()}
    return [type_names.get(e.type_id, str(e.type_id)).rsplit('.', 1)[-1] for e in unfinished]
