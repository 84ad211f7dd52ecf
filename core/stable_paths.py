"""Folders that outlive an execution: the trainer's checkpoints, a failed ingestion's quarantine.

Both are computed from the pipeline root and a stable key, never by climbing folders from an
artifact URI, because every orchestrator lays its artifacts out differently:

    LocalDagRunner     <pipeline_root>/<node>/<key>/<execution id>
    open-source KFP    <pipeline_root>/<pipeline>/<run id>/<task>/<uuid>/<key>
                       (backend/src/v2/metadata/client.go GetPipeline: the run's root is
                       <root>/<pipeline>/<run id>; driver.go provisionOutputs adds
                       <task>/<uuid>/<key>)
    Vertex AI          <pipeline_root>/<project number>/<job>/<task>_<id>/<key>

so two levels up from a Model is a node folder in the first, a per-run task folder in the second.
Here the layout is ours and the same everywhere:

    <pipeline_root>/_checkpoints/<node>/<key>/       the key hashes what makes the training the same
    <pipeline_root>/_quarantine/<node>/<key>.jsonl   the key hashes the Examples URI
    <pipeline_root>/_spans/<node>/<key>.json         the key hashes a span's identity: where
                                                     its ingested data is (components/ingest/
                                                     spans/span_index.py)

The leading underscore keeps them clear of every orchestrator's own folders: our node ids are
class names, KFP pipeline names never start with one (apiserver/common/utils.go
pipelineNamePattern `^[a-z0-9][a-z0-9-]{0,127}$`), and Vertex's project numbers are digits.

The pipeline root reaches the executors as the execution property `pipeline_root`, set by
pipeline/definition/factory.py from PipelineConfig.pipeline_root. TFX's executor context does not
carry it under the Kubeflow entry point, and KFP's own `{{$.pipeline_root}}` is the per-run folder
(client.go GetPipeline), which would make checkpoints per run again. No TFX imports.
"""
import hashlib
import json
import os
from typing import Any, Dict, Iterable

PIPELINE_ROOT = 'pipeline_root'  # the execution property naming the pipeline root
CHECKPOINTS = '_checkpoints'
QUARANTINE = '_quarantine'
SPANS = '_spans'
_KEY_CHARS = 16  # 64 bits of sha256: a collision within one pipeline root is negligible


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:_KEY_CHARS]


def pipeline_root(exec_properties: Dict[str, Any]) -> str:
    """The `pipeline_root` property; refuses an execution compiled without it."""
    root = exec_properties.get(PIPELINE_ROOT) or ''
    if not root:
        raise ValueError(f'The execution property {PIPELINE_ROOT!r} is missing: it names where '
                         'checkpoints and kept quarantines go (pipeline/definition/factory.py '
                         'sets it); '
                         'recompile or rebuild the pipeline')
    return root


def checkpoint_dir(root: str, node: str, data_keys: Iterable[str],
                   exec_properties: Dict[str, Any]) -> str:
    """`<root>/_checkpoints/<node>/<key>`: the key hashes what stands for the data and every
    execution property but the pipeline root (the folder already says which root), so every
    attempt of the same training finds the same folder and a different training never does.

    The data keys are, per span of the training window, its input fingerprint with the
    ingestion parameters that shape its records (trainer/executor.py), or its folder's URI when
    it has no fingerprint. The same spans ingested the same way are the same records (shards are
    chosen by a hash of each record's split key), so a retried task, a rerun whose ingestion
    was a cache hit, and a rerun on open-source KFP (where ingestion runs again and copies the
    same shards to a new URI) all find the same folder; a new span or changed file changes the
    fingerprint, hence a fresh start: only the same records may resume the same example stream.
    """
    properties = {k: v for k, v in exec_properties.items() if k != PIPELINE_ROOT}
    key = _digest({'examples': sorted(key.rstrip('/') for key in data_keys),
                   'properties': properties})
    return os.path.join(root, CHECKPOINTS, node, key)


def kept_quarantine_path(root: str, node: str, examples_uri: str) -> str:
    """`<root>/_quarantine/<node>/<key>.jsonl`, the key hashing the Examples URI: unique per
    execution (every orchestrator gives each one its own output URI), the same for a retried
    attempt that reuses the URI, which then replaces the copy it made before."""
    return os.path.join(root, QUARANTINE, node, _digest(examples_uri.rstrip('/')) + '.jsonl')


def span_index_path(root: str, node: str, identity: Dict[str, Any]) -> str:
    """`<root>/_spans/<node>/<key>.json`, the key hashing a span's identity (input base, span,
    input fingerprint, ingestion parameters): one file per span ingested one way, so concurrent
    runs never write the same file for different things."""
    return os.path.join(root, SPANS, node, _digest(identity) + '.json')
