"""The run report: `report.html` and its PNG pictures, written into the run's output folder.

`write_report(summary, output_dir)` takes the RunSummary that `pipeline.summary` read from ML
Metadata (the same one the console summary prints), loads each artifact with the stock readers
(`readers`), draws the pictures (`plots`) and renders one self-contained HTML page: inline CSS,
images by relative path, no scripts or network, so it opens offline and can be archived.
A run stopped by the data gate still gets a report, with the sections it reached.
"""
import html
import os
from typing import List, Optional

import numpy as np

from components.push import versions
from pipeline import summary as summary_lib
from pipeline.report import plots, readers

REPORT_FILE = 'report.html'
SECTIONS = ('Data', 'Anomalies', 'Training', 'Evaluation', 'Blessing', 'Push')

_STYLE = ('body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}'
          'table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;'
          'padding:.25em .6em;text-align:right}th{background:#f3f3f3}td:first-child,'
          'th:first-child{text-align:left}pre{background:#f7f7f7;padding:.6em}.no{color:#b00}'
          '.yes{color:#070}img{max-width:100%}')


def _table(header: List[str], rows: List[List[object]]) -> str:
    def cells(tag, values):
        return ''.join(f'<{tag}>{html.escape(_fmt(v))}</{tag}>' for v in values)
    body = ''.join(f'<tr>{cells("td", row)}</tr>' for row in rows)
    return f'<table><tr>{cells("th", header)}</tr>{body}</table>'


def _fmt(value) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) > 1 else f'{value:.4f}'
    return str(value)


def _img(name: str, alt: str) -> str:
    return f'<p><img src="{html.escape(name)}" alt="{html.escape(alt)}"></p>'


def _only(summary: summary_lib.RunSummary, type_name: str):
    """The run's artifact of that type: the newest, since a resolved baseline is older."""
    found = summary.outputs.get(type_name, [])
    return max(found, key=lambda a: a.id) if found else None


def _data_section(summary, folder) -> str:
    statistics = _only(summary, 'ExampleStatistics')
    if statistics is None:
        return '<p>No statistics in this run.</p>'
    by_split = readers.data_summary(statistics)
    classes = sorted({c for s in by_split.values() for c in s.class_counts})
    rows = [[c] + [s.class_counts.get(c, 0) for s in by_split.values()] for c in classes]
    rows.append(['total'] + [s.num_examples for s in by_split.values()])
    sizes = [[split] + [f'{lo:g}..{hi:g}' for lo, hi in s.image_sizes.values()]
             for split, s in by_split.items()]
    size_keys = next((list(s.image_sizes) for s in by_split.values()), [])
    picture = plots.class_counts({k: s.class_counts for k, s in by_split.items()}, folder)
    return (_table(['class'] + list(by_split), rows) + _img(picture, 'examples per class')
            + '<p>Image sizes (pixels, min..max):</p>' + _table(['split'] + size_keys, sizes))


def _anomalies_section(summary) -> str:
    anomalies = _only(summary, 'ExampleAnomalies')
    if anomalies is None:
        return '<p>Validation did not run.</p>'
    parts = []
    for split, text in readers.anomalies_by_split(anomalies).items():
        parts.append(f'<p>{html.escape(split)}: <span class="no">anomalies</span></p>'
                     f'<pre>{html.escape(text)}</pre>' if text else
                     f'<p>{html.escape(split)}: <span class="yes">none</span></p>')
    return ''.join(parts)


def _training_section(summary, folder) -> str:
    model_run = _only(summary, 'ModelRun')
    if model_run is None:
        return '<p>No training in this run (stopped before training).</p>'
    curves = readers.training_curves(model_run)
    final = [[tag, points[-1][0], points[-1][1]] for tag, points in sorted(curves.items())
             if tag.split('/')[0] in ('train', 'eval')]
    return (_img(plots.training_curves(curves, folder), 'training curves')
            + _table(['TensorBoard tag', 'last step', 'value'], final))


def _evaluation_section(evaluation: Optional[readers.Evaluation], class_names, folder) -> str:
    if evaluation is None:
        return '<p>No evaluation in this run.</p>'
    rows = [[name, value, evaluation.diffs.get(name, '')]
            for name, value in sorted(evaluation.overall.items())]
    out = _table(['metric (eval split)', 'value', 'change vs baseline'], rows)
    metric_names = sorted({m for v in evaluation.per_class.values() for m in v})
    out += _table(['class'] + metric_names, [[c] + [v.get(m, '') for m in metric_names]
                                             for c, v in evaluation.per_class.items()])
    if evaluation.confusion:
        n = len(class_names) or 1 + max(max(k) for k in evaluation.confusion)
        matrix = np.zeros((n, n))
        for (actual, predicted), count in evaluation.confusion.items():
            if 0 <= actual < n and 0 <= predicted < n:  # -1 is TFMA's "no prediction"
                matrix[actual, predicted] = count
        names = list(class_names) or [str(i) for i in range(n)]
        out += _img(plots.confusion_matrix(matrix, names, folder), 'confusion matrix')
    return out


def _blessing_section(summary, evaluation: Optional[readers.Evaluation]) -> str:
    """The verdict with its reasons, the baseline, and every check with value, threshold and
    outcome (evaluation: the Evaluation section's reading, unused here)."""
    blessing, evaluated = _only(summary, 'ModelBlessing'), _only(summary, 'ModelEvaluation')
    if blessing is None or evaluated is None:
        return '<p>No blessing decision in this run.</p>'
    if summary_lib.custom_property(blessing, 'blessed') == 1:
        verdict = '<p class="yes"><b>Blessed</b>: every check passed.</p>'
    else:
        failed = '; '.join(summary_lib.failed_checks(blessing)) or 'a check failed'
        verdict = f'<p class="no"><b>Not blessed</b>: {html.escape(failed)}</p>'
    rows = []
    for check in readers.blessing_checks(evaluated):
        change = check.kind != 'value'
        value = '' if check.value is None else f'{check.value:+.4f}' if change else check.value
        rows.append([check.metric + (' (change vs baseline)' if change else ''), check.slice,
                     value, check.threshold, 'pass' if check.passed else 'FAIL'])
    return (verdict + f'<p>{html.escape(summary_lib.comparison_text(blessing))}</p>'
            + _table(['check', 'slice', 'value', 'must be', 'result'], rows))


def _push_section(summary) -> str:
    pushed = _only(summary, 'PushedModel')
    if pushed is None:
        return '<p>The Pusher did not run.</p>'
    if summary_lib.custom_property(pushed, 'pushed') != 1:
        return (f'<p class="no"><b>Not pushed</b>: '
                f'{html.escape(summary_lib.not_pushed_reason(pushed))}.</p>')
    version = summary_lib.custom_property(pushed, 'pushed_version')
    reused = summary_lib.custom_property(pushed, versions.REUSED_PROPERTY) == 1
    note = ' (already served: no new version was made)' if reused else ''
    return _table(['pushed version', 'path'],
                  [[f'{version}{note}', summary_lib.custom_property(pushed, 'pushed_destination')]])


def write_report(summary: summary_lib.RunSummary, output_dir: str) -> str:
    """Writes report.html and its PNGs into output_dir; returns the report's path."""
    folder = os.path.abspath(output_dir)
    os.makedirs(folder, exist_ok=True)
    examples = _only(summary, 'Examples')
    class_names = summary_lib.class_names(examples) if examples is not None else []
    evaluation_artifact = _only(summary, 'ModelEvaluation')
    evaluation = readers.evaluation(evaluation_artifact) if evaluation_artifact else None
    bodies = (_data_section(summary, folder), _anomalies_section(summary),
              _training_section(summary, folder),
              _evaluation_section(evaluation, class_names, folder),
              _blessing_section(summary, evaluation), _push_section(summary))
    steps = ', '.join(f'{n} {s.lower()}' for n, s in summary.states.items())
    page = (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Run report '
            f'{html.escape(summary.run_id)}</title><style>{_STYLE}</style></head><body>'
            f'<h1>Run report</h1><p>Run {html.escape(summary.run_id)}<br>Steps: '
            f'{html.escape(steps)}</p>'
            + ''.join(f'<h2 id="{t.lower()}">{t}</h2>{b}' for t, b in zip(SECTIONS, bodies))
            + '</body></html>')
    path = os.path.join(folder, REPORT_FILE)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(page)
    return path
