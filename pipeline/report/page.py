"""The run report: one HTML page per run and its PNG pictures, under the run's output folder.

`write_report(summary, output_dir)` takes the RunSummary that `pipeline.summary` read from ML
Metadata (the same one the console summary prints), loads each artifact with the stock readers
(`readers`), draws the pictures (`plots`) and renders self-contained HTML: inline CSS, images by
relative path, no scripts or network, so it opens offline and can be archived.

Every run keeps its own page, `reports/<run>.html`, with its pictures in `reports/<run>/`, so a
later run never overwrites them; `report.html` in the output folder is a copy of the newest
(its image links point into `reports/<run>/`). A failed run's page starts with the stage that
failed and its error; sections of stages that never ran are left out.
"""
import html
import os
import re
from typing import List, Optional, Tuple

import numpy as np

from components.common import properties, versions
from pipeline import summary as summary_lib
from pipeline import summary_text
from pipeline.report import history as history_lib, plots, readers
from pipeline.report.html_parts import fmt as _fmt, img as _img, table as _table  # noqa: F401

REPORT_FILE = 'report.html'
REPORTS_DIR = 'reports'
# Every section a page can have, in page order; a run's page has those its stages reached.
SECTIONS = ('Data', 'Anomalies', 'Drift', 'Settings', 'Training', 'Evaluation', 'Blessing',
            'Push', 'History')
TRAINER = 'ImageTrainer'

_STYLE = ('body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}'
          'table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;'
          'padding:.25em .6em;text-align:right}th{background:#f3f3f3}'
          'td:first-child,th:first-child,.text td,.text th{text-align:left}'
          'pre{background:#f7f7f7;padding:.6em;white-space:pre-wrap}.no{color:#b00}'
          '.yes{color:#070}img{max-width:100%}.failed{border:2px solid #b00;'
          'background:#fff4f4;padding:.2em 1em;margin:1em 0}.failed h2{color:#b00}')


def _only(summary: summary_lib.RunSummary, type_name: str):
    """The run's artifact of that type: the newest, since a resolved baseline is older."""
    found = summary.outputs.get(type_name, [])
    return max(found, key=lambda a: a.id) if found else None


def run_file_name(run_id: str) -> str:
    """The run id as a file name: letters, digits, '.', '_' and '-' only (':' is not portable)."""
    return re.sub(r'[^A-Za-z0-9._-]', '_', run_id).strip('.') or 'run'


def run_report_path(output_dir: str, run_id: str) -> str:
    return os.path.join(os.path.abspath(output_dir), REPORTS_DIR, run_file_name(run_id) + '.html')


def _data_section(summary, folder) -> str:
    by_split = readers.data_summary(_only(summary, 'ExampleStatistics'))
    classes = sorted({c for s in by_split.values() for c in s.class_counts})
    rows = [[c] + [s.class_counts.get(c, 0) for s in by_split.values()] for c in classes]
    rows.append(['total'] + [s.num_examples for s in by_split.values()])
    picture = plots.class_counts({k: s.class_counts for k, s in by_split.items()}, folder)
    out = _table(['class'] + list(by_split), rows) + _img(picture, 'examples per class')
    size_keys = next((list(s.image_sizes) for s in by_split.values() if s.image_sizes), [])
    if size_keys:  # images only: a table has no image sizes
        sizes = [[split] + [f'{lo:g}..{hi:g}' for lo, hi in s.image_sizes.values()]
                 for split, s in by_split.items()]
        out += '<p>Image sizes (pixels, min..max):</p>' + _table(['split'] + size_keys, sizes)
    return out


def _validator_anomalies(summary):
    """ExampleValidator's anomalies (DriftCheck's output has the same type, and a drift text)."""
    drift = summary_text.drift_artifact(summary)
    found = [a for a in summary.outputs.get('ExampleAnomalies', []) if a is not drift]
    return max(found, key=lambda a: a.id) if found else None


def _anomalies_section(summary) -> str:
    parts = []
    for split, text in readers.anomalies_by_split(_validator_anomalies(summary)).items():
        parts.append(f'<p>{html.escape(split)}: <span class="no">anomalies</span></p>'
                     f'<pre>{html.escape(text)}</pre>' if text else
                     f'<p>{html.escape(split)}: <span class="yes">none</span></p>')
    return ''.join(parts)


def _drift_section(summary) -> str:
    """The drift line, and every value measured against the served model's training data."""
    drift = summary_text.drift_artifact(summary)
    line = summary_lib.custom_property(drift, properties.DRIFT_TEXT)
    rows = [[v['feature'], v['measure'], f"{v['value']:.4f}", f"<= {v['threshold']:.2f}",
             'EXCEEDED' if v['exceeded'] else 'ok'] for v in summary_text.drift_values(summary)]
    verdict = 'no' if any(v['exceeded'] for v in summary_text.drift_values(summary)) else 'yes'
    return (f'<p class="{verdict}">{html.escape(line[0].upper() + line[1:])}</p>'
            + (_table(['feature', 'distance', 'value', 'must be', 'result'], rows) if rows
               else ''))


def _settings_section(summary) -> str:
    rows = readers.training_settings(summary.execution_properties.get(TRAINER, {}),
                                     summary.trained_model(), _only(summary, 'Examples'))
    return _table(['training setting', 'value'], [list(row) for row in rows], text=True)


def _training_section(summary, folder) -> str:
    curves = readers.training_curves(_only(summary, 'ModelRun'))
    final = [[tag, points[-1][0], points[-1][1]] for tag, points in sorted(curves.items())
             if tag.split('/')[0] in ('train', 'eval')]
    return (_img(plots.training_curves(curves, folder), 'training curves')
            + _table(['TensorBoard tag', 'last step', 'value'], final))


def _evaluation_section(evaluation: readers.Evaluation, class_names, folder) -> str:
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
    if summary_lib.custom_property(blessing, properties.BLESSED) == 1:
        verdict = '<p class="yes"><b>Blessed</b>: every check passed.</p>'
    else:
        failed = '; '.join(summary_text.failed_checks(blessing)) or 'a check failed'
        verdict = f'<p class="no"><b>Not blessed</b>: {html.escape(failed)}</p>'
    rows = []
    for check in readers.blessing_checks(evaluated):
        change = check.kind != 'value'
        value = '' if check.value is None else f'{check.value:+.4f}' if change else check.value
        rows.append([check.metric + (' (change vs baseline)' if change else ''), check.slice,
                     value, check.threshold, 'pass' if check.passed else 'FAIL'])
    regression = summary_lib.custom_property(blessing, 'regression_check')
    if regression:  # the noise-aware no-regression rule, with its figures
        verdict += f'<p>No regression: {html.escape(regression)}</p>'
    return (verdict + f'<p>{html.escape(summary_text.comparison_text(blessing))}</p>'
            + _table(['check', 'slice', 'value', 'must be', 'result'], rows))


def _push_section(summary) -> str:
    pushed = _only(summary, 'PushedModel')
    if pushed is None:
        return '<p>The Pusher did not run.</p>'
    if summary_lib.custom_property(pushed, properties.PUSHED) != 1:
        return (f'<p class="no"><b>Not pushed</b>: '
                f'{html.escape(summary_text.not_pushed_reason(pushed))}.</p>')
    version = summary_lib.custom_property(pushed, properties.PUSHED_VERSION)
    reused = summary_lib.custom_property(pushed, versions.REUSED_PROPERTY) == 1
    note = ' (already served: no new version was made)' if reused else ''
    path = summary_lib.custom_property(pushed, properties.PUSHED_DESTINATION)
    return _table(['pushed version', 'path'], [[f'{version}{note}', path]])


def _failure_section(summary) -> str:
    """The stage that failed and the first lines of its error (RunSummary.failure), if any."""
    failure = getattr(summary, 'failure', None)
    if not failure:
        return ''
    stage, error = failure
    return (f'<section class="failed"><h2 id="failed">Run failed</h2><p>Stage '
            f'<b>{html.escape(stage)}</b> failed:</p><pre>{html.escape(error)}</pre></section>')


def _baseline_lines(summary) -> str:
    """The served model the candidate was compared with (a cached step chose it in an earlier
    run), and the version served now, when the report is written."""
    baseline = summary.baseline_model()
    if baseline is None:
        return ''
    served = summary_lib.custom_property(baseline, properties.SERVED_VERSION)
    path = summary_lib.custom_property(baseline, properties.SERVED_PATH) or 'path not recorded'
    text = ('none (nothing was served)' if served is None or served < 0 else
            f'served version {served} ({path})')
    if summary.states.get('ServedModelBaseline') == 'CACHED':
        text += ', chosen when this model was first evaluated (reused from the cache)'
    lines = f'<br>Baseline: {html.escape(text)}'
    now = summary_text.served_now(summary)
    if now is not None:
        pushed = _only(summary, 'PushedModel')
        ours = pushed is not None and summary_lib.custom_property(
            pushed, properties.PUSHED_VERSION) == str(now[0])
        lines += '<br>' + html.escape(f'Served now: version {now[0]} ({now[1]})'
                                      + (", this run's model" if ours else ''))
    return lines


def _sections(summary, folder, history=None) -> List[Tuple[str, str]]:
    """(title, body) of each section whose stage ran; pictures are drawn into folder.
    history: (rows, serving folder) of every run of this pipeline, or None (no History)."""
    has = lambda type_name: _only(summary, type_name) is not None  # noqa: E731
    examples = _only(summary, 'Examples')
    class_names = summary_lib.class_names(examples) if examples is not None else []
    evaluation_artifact = _only(summary, 'ModelEvaluation')
    evaluation = readers.evaluation(evaluation_artifact) if evaluation_artifact else None
    ran = lambda node, type_name: node in summary.states or has(type_name)  # noqa: E731
    candidates = (  # (title, whether its stage ran, how to build it), in SECTIONS order
        ('Data', has('ExampleStatistics'), lambda: _data_section(summary, folder)),
        ('Anomalies', _validator_anomalies(summary) is not None,
         lambda: _anomalies_section(summary)),
        ('Drift', summary_text.drift_artifact(summary) is not None,
         lambda: _drift_section(summary)),
        ('Settings', TRAINER in summary.execution_properties
         or summary.trained_model() is not None, lambda: _settings_section(summary)),
        ('Training', has('ModelRun'), lambda: _training_section(summary, folder)),
        ('Evaluation', evaluation is not None,
         lambda: _evaluation_section(evaluation, class_names, folder)),
        ('Blessing', ran('Evaluator', 'ModelBlessing'),
         lambda: _blessing_section(summary, evaluation)),
        ('Push', ran('Pusher', 'PushedModel'), lambda: _push_section(summary)),
        ('History', history is not None, lambda: history_lib.section(*history, folder)))
    return [(title, build()) for title, shown, build in candidates if shown]


def _page(summary, sections: List[Tuple[str, str]], image_prefix: str) -> str:
    steps = ', '.join(f'{n} {s.lower()}' for n, s in summary.states.items())
    cached = summary.states and set(summary.states.values()) == {'CACHED'}
    body = (_failure_section(summary)
            + ''.join(f'<h2 id="{t.lower()}">{t}</h2>{b}' for t, b in sections))
    # Pictures are named relative to the run's picture folder; each page finds them from where
    # it is (reports/<run>.html or the output folder's report.html).
    body = body.replace('<img src="', f'<img src="{html.escape(image_prefix)}')
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Run report '
            f'{html.escape(summary.run_id)}</title><style>{_STYLE}</style></head><body>'
            f'<h1>Run report</h1><p>Run {html.escape(summary.run_id)}<br>Steps: '
            f'{html.escape(steps)}{_baseline_lines(summary)}'
            + ('<br>Every step was served from the cache: the results are those of the run '
               'that first computed them.' if cached else '')
            + f'</p>{body}</body></html>')


def _write(path: str, text: str) -> None:
    """Whole or not at all: a reader (or a concurrent run) never sees half a page."""
    partial = f'{path}.tmp-{os.getpid()}'
    with open(partial, 'w', encoding='utf-8') as handle:
        handle.write(text)
    os.replace(partial, path)


def write_report(summary: summary_lib.RunSummary, output_dir: str,
                 pipeline_name: Optional[str] = None) -> str:
    """Writes reports/<run>.html with its PNGs in reports/<run>/, and report.html (this run,
    the newest) into output_dir; returns report.html's path. With pipeline_name, the page ends
    with the History of every run of that pipeline in this output's ML Metadata."""
    folder = os.path.abspath(output_dir)
    name = run_file_name(summary.run_id)
    pictures = os.path.join(folder, REPORTS_DIR, name)
    os.makedirs(pictures, exist_ok=True)
    history = pipeline_name and (history_lib.read_rows(
        os.path.join(folder, 'metadata.sqlite'), pipeline_name, folder, summary),
        os.path.join(folder, 'serving'))
    sections = _sections(summary, pictures, history or None)
    _write(run_report_path(folder, summary.run_id), _page(summary, sections, f'{name}/'))
    path = os.path.join(folder, REPORT_FILE)
    _write(path, _page(summary, sections, f'{REPORTS_DIR}/{name}/'))
    return path
