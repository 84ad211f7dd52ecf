"""Reconciling and judging the counts of an ingestion run; reading its quarantine back.

No TFX imports. The run fails with `IngestionError` (formats/rules.py), whose message says what to
fix, when the counts do not reconcile, when nothing was found or nothing was valid, and when
more than the allowed fraction was rejected. A rejection failure reports the counts per reason
(and per CSV column), then a few differing examples, and names the quarantine file holding every
rejected record. That file is first copied out of the Examples artifact, to a path computed from
the pipeline root (core/stable_paths.py): the orchestrator deletes a failed execution's output
folders, and with them the records that explain the failure.
"""
import itertools
import json
import os
from typing import Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf

from core import features, stable_paths, storage
from components.ingest.formats import rules
from components.ingest.formats.rules import IngestionError

SHOWN_REJECTIONS = 5  # examples in a message; every rejected record is in the quarantine file
NODE = 'ImageExampleGen'  # names its folder under <pipeline_root>/_quarantine/


def quarantine_path(output_dir: str) -> str:
    return os.path.join(output_dir, rules.QUARANTINE_DIR, rules.QUARANTINE_FILE)


def kept_quarantine_path(pipeline_root: str, output_dir: str) -> str:
    """Where a failed run's quarantine is kept: `<pipeline_root>/_quarantine/ImageExampleGen/
    <hash of the Examples URI>.jsonl`, outside every artifact folder (TFX removes those on
    failure), and found the same way whatever the orchestrator's output layout."""
    return stable_paths.kept_quarantine_path(pipeline_root, NODE, output_dir)


def keep_quarantine(pipeline_root: str, output_dir: str) -> Optional[str]:
    """Copies the quarantine out of the artifact (see kept_quarantine_path); returns the copy's
    path, or None when there is no quarantine file."""
    source = quarantine_path(output_dir)
    if not tf.io.gfile.exists(source):
        return None
    kept = kept_quarantine_path(pipeline_root, output_dir)
    tf.io.gfile.makedirs(os.path.dirname(kept))
    storage.copy_file(source, kept)
    return kept


def read_quarantine(output_dir: str, limit: Optional[int] = None) -> List[Dict[str, str]]:
    """The quarantine entries (the first `limit` of them), streamed from the file."""
    path = quarantine_path(output_dir)
    if not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path) as handle:
        lines = (line for line in handle if line.strip())
        return [json.loads(line) for line in itertools.islice(lines, limit)]


def sample_rejections(path: str, limit: int = SHOWN_REJECTIONS) -> List[Dict[str, str]]:
    """Up to `limit` quarantine entries that differ: first one per (reason, column) in file
    order, then ones with a detail not shown yet (another bad value, another field count).
    Streams the file and stops as soon as `limit` distinct groups were seen."""
    if not tf.io.gfile.exists(path):
        return []
    firsts: Dict[Tuple[str, str], dict] = {}
    others: List[dict] = []
    details = set()
    with tf.io.gfile.GFile(path) as handle:
        for line in handle:
            if not line.strip():
                continue
            entry = json.loads(line)
            group = (entry['reason'], entry.get('column', ''))
            if group not in firsts:
                firsts[group] = entry
                if len(firsts) == limit:
                    break
            elif entry['detail'] not in details and len(others) < limit:
                others.append(entry)
            details.add(entry['detail'])
    chosen = list(firsts.values())
    chosen += [e for e in others if e['detail'] not in {c['detail'] for c in chosen}]
    return chosen[:limit]


def format_counts(counts: Dict[str, int]) -> str:
    """'found 16, written 15 (train 12, eval 3), rejected 1 (empty_file 1)', and ', converted
    2 to PNG' when some images were."""
    written = {s: counts[f'written_{s}'] for s in features.SPLITS}
    reasons = ', '.join(f'{r} {counts[f"rejected_{r}"]}' for r in rules.REASONS
                        if counts.get(f'rejected_{r}'))
    return (f'found {counts["found"]}, written {sum(written.values())} ('
            + ', '.join(f'{s} {n}' for s, n in written.items())
            + f'), rejected {counts["rejected"]}' + (f' ({reasons})' if reasons else '')
            + (f', converted {counts["converted"]} to PNG' if counts.get('converted') else ''))


def format_rejections(counts: Dict[str, int], by_column: Dict[Tuple[str, str], int],
                      samples: List[Dict[str, str]], quarantine: Optional[str]) -> str:
    """Counts per reason (with the columns at fault), a few examples, and the quarantine file."""
    lines = []
    for reason in rules.REASONS:
        total = counts.get(f'rejected_{reason}', 0)
        if total:
            columns = sorted(((n, c) for (r, c), n in by_column.items() if r == reason),
                             key=lambda nc: (-nc[0], nc[1]))
            where = ', '.join(f'{c!r} {n}' for n, c in columns)
            lines.append(f'  {reason} {total}' + (f' (by column: {where})' if where else '')
                         + (f'; setting: {rules.SETTINGS[reason]}'
                            if reason in rules.SETTINGS else ''))
    if samples:
        lines.append(f'{len(samples)} of {counts["rejected"]} rejected, for example:')
        lines += [f'  {s["source"]}: {s["reason"]}: {s["detail"]}' for s in samples]
    if quarantine:
        lines.append(f'Every rejected record, with its reason: {quarantine}')
    return '\n'.join(lines)


def check_counts(counts: Dict[str, int], output_dir: str, max_rejected_fraction: float,
                 root: str, pipeline_root: str,
                 by_column: Optional[Dict[Tuple[str, str], int]] = None) -> None:
    """Raises IngestionError unless the counts reconcile and rejections are within bounds.

    On a rejection failure the quarantine is first kept outside the artifact, under
    `pipeline_root` (keep_quarantine), and the message names that copy; within bounds,
    rejections are logged as a warning.
    """
    written = sum(counts[f'written_{s}'] for s in features.SPLITS)
    by_reason = sum(counts[f'rejected_{r}'] for r in rules.REASONS)
    if written + counts['rejected'] != counts['found'] or by_reason != counts['rejected']:
        raise IngestionError(f'Counts do not reconcile: {format_counts(counts)}.')
    if counts['found'] == 0:
        raise IngestionError(f'Input is empty: no records found under {root}.')
    if not counts['rejected']:
        return
    fraction = counts['rejected'] / counts['found']
    samples = sample_rejections(quarantine_path(output_dir))
    if written == 0 or fraction > max_rejected_fraction:
        kept = keep_quarantine(pipeline_root, output_dir)
        details = format_rejections(counts, by_column or {}, samples, kept)
        if written == 0:
            raise IngestionError(f'Nothing valid under {root}; every record was rejected '
                                 f'({format_counts(counts)}):\n{details}')
        split = ', '.join(f'{s} {counts[f"written_{s}"]}' for s in features.SPLITS)
        raise IngestionError(
            f'Rejected {counts["rejected"]} of {counts["found"]} records ({fraction:.1%}), more '
            f'than the allowed {max_rejected_fraction:.1%} (written {written}: {split}). '
            f'By reason:\n{details}')
    logging.warning('Ingestion rejected %d record(s), within the allowed %.1f%%:\n%s',
                    counts['rejected'], 100 * max_rejected_fraction,
                    format_rejections(counts, by_column or {}, samples,
                                      quarantine_path(output_dir)))
