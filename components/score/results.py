"""A scoring run's result folder: predictions, quarantine and summary, counted and published
atomically.

No TFX imports. Every input ingestion found is either scored (one prediction row) or
quarantined (one line with its reason, as ingestion wrote it): `scored + quarantined ==
inputs`, checked before anything is published. The folder holds

    predictions.jsonl, predictions.csv   one row per scored input (predictions.py)
    quarantine.jsonl                     one line per input that could not be read, and why
    summary.json                         model version and path, input, the counts by reason

and is written under a hidden temporary name beside its final name, then renamed, so a
crash never leaves a half-written result visible (on a local file system; on object stores a
rename is a copy, and summary.json is written last there too).
"""
import json
import os
import uuid
from typing import Any, Dict, List

import tensorflow as tf

from components.score import predictions
from components.score.served import ScoringError

SUMMARY_FILE = 'summary.json'
QUARANTINE_FILE = 'quarantine.jsonl'
_TMP_PREFIX = '.tmp-score-'


def summarize(version: int, model_path: str, input_base: str, counts: Dict[str, int],
              scored: int) -> Dict[str, Any]:
    """The summary of one scoring run; ScoringError when the counts do not reconcile.
    `counts`: ingestion's `num_*` properties (num_found, num_rejected, num_rejected_<reason>)."""
    found, rejected = int(counts.get('num_found', 0)), int(counts.get('num_rejected', 0))
    by_reason = {name[len('num_rejected_'):]: int(value) for name, value in sorted(counts.items())
                 if name.startswith('num_rejected_') and value}
    if scored + rejected != found or sum(by_reason.values()) != rejected:
        raise ScoringError(f'Counts do not reconcile: {found} inputs, {scored} scored, '
                           f'{rejected} quarantined (by reason: {by_reason})')
    return {'model_version': version, 'model_path': model_path, 'input': input_base,
            'inputs': found, 'scored': scored, 'quarantined': rejected,
            'quarantined_by_reason': by_reason}


def summary_line(summary: Dict[str, Any]) -> str:
    """'Scored 5 of 6 inputs with model version 3 (<path>); 1 quarantined (corrupt_image 1)'"""
    reasons = ', '.join(f'{r} {n}' for r, n in summary['quarantined_by_reason'].items())
    return (f'Scored {summary["scored"]:,} of {summary["inputs"]:,} inputs with model version '
            f'{summary["model_version"]} ({summary["model_path"]}); '
            f'{summary["quarantined"]:,} quarantined' + (f' ({reasons})' if reasons else ''))


def write_all(folder: str, rows: List[predictions.Row], quarantine: str,
              summary: Dict[str, Any]) -> Dict[str, str]:
    """Writes the result files into folder; returns {kind: path}. summary.json last."""
    paths = predictions.write(folder, rows)
    paths['quarantine'] = os.path.join(folder, QUARANTINE_FILE)
    with tf.io.gfile.GFile(paths['quarantine'], 'w') as handle:
        handle.write(quarantine)
    paths['summary'] = os.path.join(folder, SUMMARY_FILE)
    with tf.io.gfile.GFile(paths['summary'], 'w') as handle:
        handle.write(json.dumps(dict(summary, files={
            kind: os.path.basename(path) for kind, path in paths.items()}), indent=2) + '\n')
    return paths


def publish(final_dir: str, rows: List[predictions.Row], quarantine: str,
            summary: Dict[str, Any]) -> Dict[str, str]:
    """write_all() into a hidden sibling of final_dir, then renamed to it (which must not
    exist: a result is never overwritten); returns the final paths."""
    final_dir = final_dir.rstrip('/')
    if tf.io.gfile.exists(final_dir):
        raise ScoringError(f'{final_dir} exists already; a scoring result is never overwritten')
    parent = os.path.dirname(final_dir)
    tf.io.gfile.makedirs(parent)
    staged = os.path.join(parent, _TMP_PREFIX + uuid.uuid4().hex)
    try:
        paths = write_all(staged, rows, quarantine, summary)
        tf.io.gfile.rename(staged, final_dir, overwrite=False)
    except BaseException:
        if tf.io.gfile.exists(staged):
            tf.io.gfile.rmtree(staged)
        raise
    return {kind: os.path.join(final_dir, os.path.basename(path)) for kind, path in paths.items()}
