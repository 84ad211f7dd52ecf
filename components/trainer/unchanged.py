"""No retraining on unchanged data: what a model was trained from, and the served model's match.

Every exported model carries `assets.extra/training_record.json` (TF Serving ignores
assets.extra; it travels with the model into serving/<version>/): the input fingerprint of its
training window (per span, what ingestion recorded: file names, sizes and modification times,
as TFX's FileBasedDriver computes it; core/window.py), a digest of the ingestion
parameters that shaped the records (another train/eval split is other data), a digest of the
trainer's parameters, and a digest of the model builder's source file, so an edited
architecture retrains even under the same import path. A new span changes the window, hence
the record; a rerun with nothing new has the same window and skips.

When a run's record equals the served model's, training is pointless: the same data, settings
and code would make the same model. The trainer then hands the served model on as its output
instead of training; the Evaluator finds it equal to the baseline and the Pusher, finding the
same bytes already served, makes no new version. Nothing here imports TFX.
"""
import dataclasses
import hashlib
import importlib
import json
import os
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from core import storage
from training.result import TrainResult

RECORD_PATH = os.path.join('assets.extra', 'training_record.json')
# Properties that say where things are, not how the model is trained: a moved output folder
# (another pipeline root) must not retrain an unchanged model.
_NOT_PARAMETERS = ('serving_dir', 'skip_unchanged', 'pipeline_root')


def builder_digest(builder_path: str) -> str:
    """sha256 of the source file of the builder's module ('' when it has none)."""
    module_name = builder_path.replace(':', '.').rsplit('.', 1)[0]
    try:
        path = importlib.import_module(module_name).__file__
        with open(path, 'rb') as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except (ImportError, OSError, TypeError):
        return ''


def training_record(input_fingerprint: str, properties: Dict[str, Any],
                    data_parameters: str = '') -> Dict[str, str]:
    """What a model is trained from: the input (the training window's fingerprint, and the
    ingestion parameters that shaped its records), the parameters and the builder's code."""
    parameters = {k: str(v) for k, v in sorted(properties.items()) if k not in _NOT_PARAMETERS}
    return {
        'input_fingerprint': input_fingerprint,
        'ingest_parameters_sha256': hashlib.sha256(data_parameters.encode()).hexdigest(),
        'parameters_sha256': hashlib.sha256(
            json.dumps(parameters, sort_keys=True).encode()).hexdigest(),
        'builder_sha256': builder_digest(str(properties.get('model_builder', ''))),
    }


def write_record(export_dir: str, record: Dict[str, str], result: TrainResult) -> None:
    """Stores what the model was trained from, and its metrics (a skipped run reports them)."""
    path = os.path.join(export_dir, RECORD_PATH)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(path, 'w') as handle:
        json.dump({'trained_from': record, 'metrics': result.to_metrics()}, handle, indent=2,
                  sort_keys=True)


def read_record(model_dir: str) -> Optional[Dict[str, Any]]:
    """{'trained_from': ..., 'metrics': ...} of an exported model, or None."""
    text = storage.read_text(os.path.join(model_dir, RECORD_PATH))
    return None if text is None else json.loads(text)


def handed_on(model_dir: str, version: int) -> TrainResult:
    """The result of a run that hands the served model (version `version`, at model_dir) on:
    its recorded metrics, whichever version wrote them, with no steps run and why."""
    recorded = TrainResult.from_metrics((read_record(model_dir) or {}).get('metrics') or {})
    return dataclasses.replace(
        recorded, steps_run=0, training_skipped=True, epochs_run=None, stop_reason=(
            f'no new data: serving version {version} unchanged (same input fingerprint, '
            'training parameters and model code; not trained)'))


def served_match(record: Dict[str, str], serving_dir: str,
                 served_version: Optional[int]) -> Optional[Tuple[int, str]]:
    """(version, folder) of the served model when it was trained from exactly `record`.

    No fingerprint (ingestion could not make one) never matches: unknown input retrains.
    """
    if not record.get('input_fingerprint') or served_version is None:
        return None
    folder = os.path.join(serving_dir, str(served_version))
    stored = read_record(folder) or {}
    return (served_version, folder) if stored.get('trained_from') == record else None


def copy_model(source: str, destination: str) -> None:
    """Copies a SavedModel folder file by file (tf.io.gfile: local or cloud storage)."""
    for root, _, files in tf.io.gfile.walk(source):
        relative = os.path.relpath(root, source)
        # Never '<destination>/.': an S3 key with '/./' in it is refused (SignatureDoesNotMatch).
        target = destination if relative == '.' else os.path.join(destination, relative)
        tf.io.gfile.makedirs(target)
        for name in files:
            storage.copy_file(os.path.join(root, name), os.path.join(target, name))
