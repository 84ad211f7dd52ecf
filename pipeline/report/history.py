"""The report's history: one row per run of this pipeline, and accuracy per served version.

Every run is read back from ML Metadata (pipeline/summary.py `read_runs`), so the table shows
what each run recorded: the spans its model was trained on, the examples, the eval accuracy,
the drift figures (when a drift check ran), and whether it pushed, and if not why (the
blessing's reasons; a run whose model was already served says so). ML Metadata records that a
stage failed, not why: the reason comes from the run's JSON summary next to its log
(pipeline/notify.py) when it is there, and the current run's from this process. Rollbacks
(pipeline/rollback.py, `<output>/rollbacks.jsonl`) are rows too, in time order.

The picture: one bar per version that was served (pushed, or a rollback's copy, which carries
the accuracy of the version it copies), the one served now darker.
"""
import dataclasses
import datetime
import html
import json
import os
from typing import List, Optional

from components.common import versions
from pipeline import notify_facts as facts
from pipeline import rollback as rollback_lib
from pipeline import summary as summary_lib
from pipeline.report import plots
from pipeline.report.html_parts import img, table

HEADER = ['run', 'spans', 'examples (train / eval)', 'eval accuracy', 'drift', 'outcome']


@dataclasses.dataclass(frozen=True)
class Row:
    time: float                   # seconds since the epoch: the order of runs and rollbacks
    run: str                      # the run id, or 'rollback'
    spans: List[int]
    examples: Optional[tuple]     # (train, eval)
    accuracy: Optional[float]
    drift: Optional[str]          # the drift line; None: not measured
    outcome: str                  # pushed / not pushed / failed / did not finish / rollback
    version: Optional[int]        # the version made (pushed, or a rollback's copy)
    reasons: List[str]
    copy_of: Optional[int] = None  # a rollback's source version

    def cells(self) -> list:
        examples = '' if self.examples is None else f'{self.examples[0]} / {self.examples[1]}'
        accuracy = '' if self.accuracy is None else f'{self.accuracy:.4f}'
        if self.outcome == 'rollback':
            verdict = f'rollback: version {self.version} = copy of version {self.copy_of}'
        elif self.outcome == 'pushed':
            verdict = f'pushed: version {self.version}'
        else:
            verdict = self.outcome + (f': {"; ".join(self.reasons)}' if self.reasons else '')
        drift = 'not measured' if self.drift is None else self.drift.removeprefix('drift: ')
        return [self.run, ', '.join(map(str, self.spans)), examples, accuracy,
                '' if self.outcome == 'rollback' else drift, verdict]


def _saved_failure(output_dir: str, run_id: str) -> Optional[List[str]]:
    """The reasons a run's JSON summary gave (a failed stage's error), when it was written."""
    path = os.path.join(output_dir, 'logs', f'{run_id}.summary.json')
    try:
        with open(path, encoding='utf-8') as handle:
            saved = json.load(handle)
    except (OSError, ValueError):
        return None
    return saved.get('reasons') if saved.get('outcome') == 'failed' else None


def run_row(summary: summary_lib.RunSummary, output_dir: str) -> Row:
    outcome, version, reasons = facts.outcome(summary)
    if outcome == 'failed' and summary.failure is None:
        reasons = _saved_failure(output_dir, summary.run_id) or reasons
    drift = facts.drift(summary)
    return Row(time=(summary.created_ms or 0) / 1000, run=summary.run_id,
               spans=facts.spans(summary), examples=facts.example_counts(summary),
               accuracy=facts.eval_accuracy(summary), drift=drift and drift.text,
               outcome=outcome, version=version, reasons=reasons)


def _rollback_row(record: dict) -> Row:
    try:
        when = datetime.datetime.fromisoformat(record['time']).timestamp()
    except (KeyError, TypeError, ValueError):
        when = 0.0
    return Row(time=when, run=f'rollback at {record.get("time", "?")}', spans=[],
               examples=None, accuracy=None, drift=None, outcome='rollback',
               version=record.get('version'), reasons=[], copy_of=record.get('copy_of'))


def read_rows(metadata_path: str, pipeline_name: str, output_dir: str,
              current: Optional[summary_lib.RunSummary] = None) -> List[Row]:
    """Every run and rollback of this output, oldest first. `current` (this process's run,
    with its failure) replaces the same run as read from ML Metadata."""
    rows = []
    for summary in summary_lib.read_runs(metadata_path, pipeline_name):
        if current is not None and summary.run_id == current.run_id:
            summary = dataclasses.replace(current, created_ms=summary.created_ms)
            current = None
        rows.append(run_row(summary, output_dir))
    if current is not None:  # a run that stopped before ML Metadata recorded it
        rows.append(run_row(dataclasses.replace(
            current, created_ms=int(datetime.datetime.now().timestamp() * 1000)), output_dir))
    rows.extend(_rollback_row(r) for r in rollback_lib.read_rollbacks(output_dir))
    return sorted(rows, key=lambda row: row.time)


def served_versions(rows: List[Row]) -> List[tuple]:
    """(label, accuracy, version) per version that was made, in version order: a pushed one
    with its run's accuracy, a rollback's copy with the accuracy of the version it copies."""
    accuracy = {}
    found = []
    for row in sorted((r for r in rows if r.version is not None), key=lambda r: r.version):
        if row.outcome == 'rollback':
            value, label = accuracy.get(row.copy_of), f'v{row.version} (= v{row.copy_of})'
        else:
            value, label = row.accuracy, f'v{row.version}'
        accuracy[row.version] = value
        if value is not None:
            found.append((label, value, row.version))
    return found


def section(rows: List[Row], serving_dir: str, folder: str) -> str:
    """The history's HTML: the table, newest run last, and the accuracy picture (drawn into
    folder) when any version was served."""
    if not rows:
        return '<p>No run of this pipeline is recorded yet.</p>'
    out = table(HEADER, [row.cells() for row in rows], text=True)
    points = served_versions(rows)
    if points:
        served = versions.served_version(serving_dir)
        index = next((i for i, p in enumerate(points) if p[2] == served), -1)
        picture = plots.accuracy_per_version([p[0] for p in points], [p[1] for p in points],
                                             index, folder)
        out += img(picture, 'eval accuracy per served version') + (
            '<p>Each version\'s accuracy is that of its run\'s eval split (a rollback\'s copy: '
            'the version it copies). Served now: '
            + html.escape('none' if served is None else f'version {served}') + '.</p>')
    return out
