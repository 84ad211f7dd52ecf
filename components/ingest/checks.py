"""Reconciling and judging the counts of an ingestion run; reading its quarantine back.

No TFX imports. The run fails with `IngestionError`, whose message says what to fix, when the
counts do not reconcile, when nothing was found or nothing was valid, and when more than the
allowed fraction was rejected.
"""
import itertools
import json
import os
from typing import Dict, List, Optional

from absl import logging
import tensorflow as tf

from components.common import features
from components.ingest import records

SHOWN_REJECTIONS = 20  # enough to diagnose; the full list is in the quarantine file


class IngestionError(RuntimeError):
    """Ingestion produced nothing usable, or rejected more than allowed."""


def quarantine_path(output_dir: str) -> str:
    return os.path.join(output_dir, records.QUARANTINE_DIR, records.QUARANTINE_FILE)


def read_quarantine(output_dir: str, limit: Optional[int] = None) -> List[Dict[str, str]]:
    """The quarantine entries (the first `limit` of them), streamed from the file."""
    path = quarantine_path(output_dir)
    if not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path) as handle:
        lines = (line for line in handle if line.strip())
        return [json.loads(line) for line in itertools.islice(lines, limit)]


def format_counts(counts: Dict[str, int]) -> str:
    """'found 16, written 15 (train 12, eval 3), rejected 1 (empty_file 1)'."""
    written = {s: counts[f'written_{s}'] for s in features.SPLITS}
    reasons = ', '.join(f'{r} {counts[f"rejected_{r}"]}' for r in records.REASONS
                        if counts.get(f'rejected_{r}'))
    return (f'found {counts["found"]}, written {sum(written.values())} ('
            + ', '.join(f'{s} {n}' for s, n in written.items())
            + f'), rejected {counts["rejected"]}' + (f' ({reasons})' if reasons else ''))


def check_counts(counts: Dict[str, int], rejected: List[Dict[str, str]],
                 max_rejected_fraction: float, root: str) -> None:
    """Raises IngestionError unless the counts reconcile and rejections are within bounds."""
    written = sum(counts[f'written_{s}'] for s in features.SPLITS)
    by_reason = sum(counts[f'rejected_{r}'] for r in records.REASONS)
    if written + counts['rejected'] != counts['found'] or by_reason != counts['rejected']:
        raise IngestionError(f'Counts do not reconcile: {format_counts(counts)}.')
    if counts['found'] == 0:
        raise IngestionError(f'Input is empty: no records found under {root}.')
    details = '\n'.join(f'  {r["source"]}: {r["reason"]}: {r["detail"]}'
                        for r in rejected[:SHOWN_REJECTIONS])
    if counts['rejected'] > SHOWN_REJECTIONS:
        details += f'\n  ... and {counts["rejected"] - SHOWN_REJECTIONS} more in the quarantine'

    if written == 0:
        raise IngestionError(f'Nothing valid under {root}; every record was rejected '
                             f'({format_counts(counts)}):\n{details}')
    fraction = counts['rejected'] / counts['found']
    if fraction > max_rejected_fraction:
        raise IngestionError(
            f'Rejected {counts["rejected"]} of {counts["found"]} records ({fraction:.1%}), more '
            f'than the allowed {max_rejected_fraction:.1%} ({format_counts(counts)}):\n{details}')
    if counts['rejected']:
        logging.warning('Ingestion rejected %d record(s), within the allowed %.1f%%:\n%s',
                        counts['rejected'], 100 * max_rejected_fraction, details)
