"""The report's history: one row per run of this pipeline, and accuracy per served version.

Every run is read back from ML Metadata (pipeline/runs/summary.py `read_runs`), so the table shows
what each run recorded: the spans its model was trained on, the examples, the eval accuracy of
the candidate against the served model's on the same examples, the drift figures (when a drift
check ran), and whether it pushed, and if not why (the blessing's reasons; a run whose model was
already served says so). ML Metadata records that a stage failed, not why: the reason comes from
the run's JSON summary next to its log (pipeline/runs/notify.py) when it is there, and the current
run's from this process. Rollbacks (pipeline/runs/rollback.py, `<output>/rollbacks.jsonl`) are rows
too, in time order.

Like with like: each run's window has its own eval split, so two runs' accuracies come from
different data and cannot be compared. What can be compared is what each run's Evaluator
measured on one set of examples: the candidate and the model served then (the blessing's
figures, components/evaluate/figures.py). A row and the picture show that pair, and the number
of examples it is from. A run whose blessing carries no figures (stored runs
in ML Metadata may lack them) shows the trainer's eval accuracy alone.

The picture: per version that was made (pushed, or a rollback's copy, which keeps the pair of the
version it copies), the candidate's bar beside the served model's on the same examples; the
stable version darker, the canary marked (core/serving_labels.py).
"""
import dataclasses
import datetime
import html
import json
import os
from typing import List, Optional

from core import serving_labels, versions
from pipeline.runs import notify_facts as facts
from pipeline.runs import rollback as rollback_lib
from pipeline.runs import run_files
from pipeline.runs import summary as summary_lib
from pipeline.report import plots
from pipeline.report.html_parts import img, table

HEADER = ['run', 'spans', 'examples (train / eval)',
          'eval accuracy: candidate vs served, same examples', 'drift', 'outcome']


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
    # The Evaluator's figures (accuracy is then the candidate's); None: the blessing records
    # none, and accuracy is the trainer's eval accuracy.
    compared: Optional[facts.Comparison] = None
    pushed_as: str = ''           # 'canary' for a candidate push (serving_labels), else ''

    def accuracy_text(self) -> str:
        """'0.9557 vs 0.9416 (served version 1) on the same 497 examples', or the candidate's
        alone with why there is no served figure."""
        if self.accuracy is None:
            return ''
        value = f'{self.accuracy:.4f}'
        found = self.compared
        if found is None:
            return value
        on = '' if found.examples is None else f' on {found.examples} examples'
        if found.served is not None:
            count = '' if found.examples is None else f' {found.examples}'
            return (f'{value} vs {found.served:.4f} (served version {found.served_version}) on '
                    f'the same{count} examples')
        if found.not_compared:
            return f'{value}{on} ({found.not_compared.split(":")[0]} not compared)'
        return f'{value}{on} (nothing served)'

    def cells(self) -> list:
        examples = '' if self.examples is None else f'{self.examples[0]} / {self.examples[1]}'
        accuracy = self.accuracy_text()
        if self.outcome == 'rollback':
            verdict = f'rollback: version {self.version} = copy of version {self.copy_of}'
        elif self.outcome == 'pushed':
            verdict = f'pushed: version {self.version}' + (
                f' as {self.pushed_as}' if self.pushed_as else '')
        else:
            verdict = self.outcome + (f': {"; ".join(self.reasons)}' if self.reasons else '')
        drift = 'not measured' if self.drift is None else self.drift.removeprefix('drift: ')
        return [self.run, ', '.join(map(str, self.spans)), examples, accuracy,
                '' if self.outcome == 'rollback' else drift, verdict]


def _saved_failure(output_dir: str, run_id: str) -> Optional[List[str]]:
    """The reasons a run's JSON summary gave (a failed stage's error), when it was written."""
    path = os.path.join(output_dir, run_files.LOGS_DIR, f'{run_id}.summary.json')
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
    compared = facts.comparison(summary)
    return Row(time=(summary.created_ms or 0) / 1000, run=summary.run_id,
               spans=facts.spans(summary), examples=facts.example_counts(summary),
               accuracy=(facts.eval_accuracy(summary) if compared is None
                         else compared.candidate), drift=drift and drift.text,
               outcome=outcome, version=version, reasons=reasons, compared=compared,
               pushed_as=facts.pushed_as(summary) if outcome == 'pushed' else '')


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


@dataclasses.dataclass(frozen=True)
class Point:
    """One version in the picture: its candidate figure and the served model's beside it."""
    version: int
    label: str                     # 'v2', or 'v3 (= v1)' for a rollback's copy
    candidate: float
    compared: Optional[facts.Comparison]  # None: the trainer's eval accuracy alone


def points(rows: List[Row]) -> List[Point]:
    """Per version that was made, in version order: a pushed one with its run's figures, a
    rollback's copy with those of the version it copies (None when that one is unknown)."""
    made = {}
    found = []
    for row in sorted((r for r in rows if r.version is not None), key=lambda r: r.version):
        if row.outcome == 'rollback':
            source = made.get(row.copy_of)
            point = source and dataclasses.replace(
                source, version=row.version, label=f'v{row.version} (= v{row.copy_of})')
        else:
            point = None if row.accuracy is None else Point(
                row.version, f'v{row.version}', row.accuracy, row.compared)
        made[row.version] = point
        if point is not None:
            found.append(point)
    return found


def served_versions(rows: List[Row]) -> List[tuple]:
    """(label, accuracy, version) per version that was made, in version order: a pushed one
    with its run's (candidate) accuracy, a rollback's copy with that of the version it copies."""
    return [(p.label, p.candidate, p.version) for p in points(rows)]


def _served_now(serving_dir: str) -> tuple:
    """(stable, canary, sentence): the stable version, then the labels models.config gives (a
    folder without models.config has none: TF Serving serves its newest version)."""
    labels = serving_labels.read(serving_dir)
    stable = versions.served_version(serving_dir) if labels is None else labels.stable
    text = 'none' if stable is None else f'version {stable}'
    if labels is not None:
        text += ('. Labels (models.config): ' + ('no stable' if stable is None else
                                                 f'stable version {stable}') + ', '
                 + ('no canary' if labels.canary is None else f'canary version {labels.canary}'))
    return stable, None if labels is None else labels.canary, text


def _tick(point: Point, stable: Optional[int], canary: Optional[int]) -> str:
    """'v2 vs v1', then how many examples the pair is from, then its label now."""
    found = point.compared
    if found is None:
        lines = [point.label, "trainer's eval"]
    else:
        against = (f'vs v{found.served_version}' if found.served is not None
                   else 'not compared' if found.not_compared else 'nothing served')
        lines = [f'{point.label} {against}']
        if found.examples is not None:
            lines.append(f'{found.examples} examples')
    label = 'stable' if point.version == stable else 'canary' if point.version == canary else ''
    return '\n'.join(lines + ([f'({label})'] if label else []))


def section(rows: List[Row], serving_dir: str, folder: str) -> str:
    """The history's HTML: the table, newest run last, and the accuracy picture (drawn into
    folder) when any version was served."""
    if not rows:
        return '<p>No run of this pipeline is recorded yet.</p>'
    out = table(HEADER, [row.cells() for row in rows], text=True)
    found = points(rows)
    stable, canary, now = _served_now(serving_dir)
    out += ('<p>Eval accuracy: each run\'s Evaluator measured the candidate and the model served '
            'then on the same examples, the eval splits of that run\'s training window (the '
            'eval count in the examples column), so the two figures of a row compare like with '
            'like. Figures of different rows come from different windows. A row with one '
            'figure and no count is the trainer\'s eval accuracy (recorded before the Evaluator '
            'kept its figures).</p>')
    if found:
        picture = plots.accuracy_per_version(
            [_tick(p, stable, canary) for p in found], [p.candidate for p in found],
            next((i for i, p in enumerate(found) if p.version == stable), -1), folder,
            served_then=[None if p.compared is None else p.compared.served for p in found],
            canary=next((i for i, p in enumerate(found) if p.version == canary), -1))
        out += img(picture, 'eval accuracy per version: candidate vs served on the same '
                            'examples') + (
            '<p>Each pair: the version (candidate) and the model served when it was evaluated, '
            'on the same examples (the count under the pair; a rollback\'s copy repeats the '
            'pair of the version it copies). Served now: ' + html.escape(now) + '.</p>')
    return out
