"""Which served version scores, and its SavedModel placed where TFX's BulkInferrer reads one.

No TFX imports. The version is the one TF Serving serves (the highest complete version under
the serving folder, core/versions.py) unless one is asked for; either way it is
resolved when the scoring runs, so the output states the version that really scored.

The stock BulkInferrer loads `<Model artifact>/Format-Serving` and has no hook for another
folder (unlike the Evaluator, components/evaluate/served_model.py), so the served version is
placed there: hard-linked on a local file system (no bytes copied, and a link still reads
the same model if retention later removes the version), copied elsewhere (gs://, or across
devices).
"""
import os
from typing import Tuple

import tensorflow as tf

from core import versions

_SAVED_MODEL = 'saved_model.pb'


class ScoringError(RuntimeError):
    """Scoring cannot run or its result does not add up; the message says what to fix."""


def resolve(serving_dir: str, version: int = 0) -> Tuple[int, str]:
    """(version, its folder): `version`, or with 0 the served one. ScoringError naming the
    kept versions when there is no such complete version."""
    kept = [v for v in versions.list_versions(serving_dir)
            if tf.io.gfile.exists(os.path.join(serving_dir, str(v), _SAVED_MODEL))]
    if not kept:
        raise ScoringError(f'No model to score with: no served version under {serving_dir} '
                           '(a run that pushes a model creates one)')
    if version == 0:
        version = kept[-1]
    elif version not in kept:
        raise ScoringError(f'Version {version} is not kept under {serving_dir}; kept: '
                           + ', '.join(map(str, kept)))
    return version, os.path.join(serving_dir, str(version))


def _link_or_copy(source: str, target: str) -> None:
    if '://' not in source and '://' not in target:
        try:
            os.link(source, target)
            return
        except OSError:  # another device, or a file system without hard links
            pass
    tf.io.gfile.copy(source, target, overwrite=True)


def place(model_dir: str, target: str) -> int:
    """Puts the SavedModel at model_dir into target (created), saved_model.pb last; returns
    the number of files."""
    placed = 0
    names = []
    for root, _, files in tf.io.gfile.walk(model_dir):
        names += [os.path.relpath(os.path.join(root, name), model_dir) for name in files]
    # The graph file last, as the Pusher writes it: a reader never finds a partial model.
    for relative in sorted(names, key=lambda rel: rel == _SAVED_MODEL):
        tf.io.gfile.makedirs(os.path.dirname(os.path.join(target, relative)))
        _link_or_copy(os.path.join(model_dir, relative), os.path.join(target, relative))
        placed += 1
    return placed
