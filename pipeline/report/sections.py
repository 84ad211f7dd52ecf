"""The run report's sections: one function per stage, each turning the RunSummary's artifacts
(read with the stock readers, `readers`) into escaped HTML, pictures drawn into `folder`.

pipeline/report/page.py chooses which sections a run's page has and assembles the page.
"""
import html
from typing import Optional

import numpy as np

from components.common import properties, versions
from pipeline import summary as summary_lib
from pipeline import summary_text
from pipeline.report import plots, readers
from pipeline.report.html_parts import img, table

TRAINER = 'ImageTrainer'


def only(summary: summary_lib.RunSummary, type_name: str):
    """The run's artifact of that type: the newest, since a resolved baseline is older."""
    found = summary.outputs.get(type_name, [])
    return max(found, key=lambda a: a.id) if found else None


def data_section(summary, folder) -> str:
    by_split = readers.data_summary(only(summary, 'ExampleStatistics'))
    classes = sorted({c for s in by_split.values() for c in s.class_counts})
    rows = [[c] + [s.class_counts.get(c, 0) for s in by_split.values()] for c in classes]
    rows.append(['total'] + [s.num_examples for s in by_split.values()])
    picture = plots.class_counts({k: s.class_counts for k, s in by_split.items()}, folder)
    out = table(['class'] + list(by_split), rows) + img(picture, 'examples per class')
    size_keys = next((list(s.image_sizes) for s in by_split.values() if s.image_sizes), [])
    if size_keys:  # images only: a table has no image sizes
        sizes = [[split] + [f'{lo:g}..{hi:g}' for lo, hi in s.image_sizes.values()]
                 for split, s in by_split.items()]
        out += '<p>Image sizes (pixels, min..max):</p>' + table(['split'] + size_keys, sizes)
    return out


def validator_anomalies(summary):
    """ExampleValidator's anomalies (DriftCheck's output has the same type, and a drift text)."""
    drift = summary_text.drift_artifact(summary)
    found = [a for a in summary.outputs.get('ExampleAnomalies', []) if a is not drift]
    return max(found, key=lambda a: a.id) if found else None


def anomalies_section(summary) -> str:
    parts = []
    for split, text in readers.anomalies_by_split(validator_anomalies(summary)).items():
        parts.append(f'<p>{html.escape(split)}: <span class="no">anomalies</span></p>'
                     f'<pre>{html.escape(text)}</pre>' if text else
                     f'<p>{html.escape(split)}: <span class="yes">none</span></p>')
    return ''.join(parts)


def drift_section(summary) -> str:
    """The drift line, and every value measured against the served model's training data."""
    drift = summary_text.drift_artifact(summary)
    line = summary_lib.custom_property(drift, properties.DRIFT_TEXT)
    rows = [[v['feature'], v['measure'], f"{v['value']:.4f}", f"<= {v['threshold']:.2f}",
             'EXCEEDED' if v['exceeded'] else 'ok'] for v in summary_text.drift_values(summary)]
    verdict = 'no' if any(v['exceeded'] for v in summary_text.drift_values(summary)) else 'yes'
    return (f'<p class="{verdict}">{html.escape(line[0].upper() + line[1:])}</p>'
            + (table(['feature', 'distance', 'value', 'must be', 'result'], rows) if rows
               else ''))


def settings_section(summary) -> str:
    rows = readers.training_settings(summary.execution_properties.get(TRAINER, {}),
                                     summary.trained_model(), only(summary, 'Examples'))
    return table(['training setting', 'value'], [list(row) for row in rows], text=True)


def training_section(summary, folder) -> str:
    curves = readers.training_curves(only(summary, 'ModelRun'))
    final = [[tag, points[-1][0], points[-1][1]] for tag, points in sorted(curves.items())
             if tag.split('/')[0] in ('train', 'eval')]
    return (img(plots.training_curves(curves, folder), 'training curves')
            + table(['TensorBoard tag', 'last step', 'value'], final))


def evaluation_section(evaluation: readers.Evaluation, class_names, folder) -> str:
    rows = [[name, value, evaluation.diffs.get(name, '')]
            for name, value in sorted(evaluation.overall.items())]
    out = table(['metric (eval split)', 'value', 'change vs baseline'], rows)
    metric_names = sorted({m for v in evaluation.per_class.values() for m in v})
    out += table(['class'] + metric_names, [[c] + [v.get(m, '') for m in metric_names]
                                             for c, v in evaluation.per_class.items()])
    if evaluation.confusion:
        n = len(class_names) or 1 + max(max(k) for k in evaluation.confusion)
        matrix = np.zeros((n, n))
        for (actual, predicted), count in evaluation.confusion.items():
            if 0 <= actual < n and 0 <= predicted < n:  # -1 is TFMA's "no prediction"
                matrix[actual, predicted] = count
        names = list(class_names) or [str(i) for i in range(n)]
        out += img(plots.confusion_matrix(matrix, names, folder), 'confusion matrix')
    return out


def blessing_section(summary, evaluation: Optional[readers.Evaluation]) -> str:
    """The verdict with its reasons, the baseline, and every check with value, threshold and
    outcome (evaluation: the Evaluation section's reading, unused here)."""
    blessing, evaluated = only(summary, 'ModelBlessing'), only(summary, 'ModelEvaluation')
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
            + table(['check', 'slice', 'value', 'must be', 'result'], rows))


def push_section(summary) -> str:
    pushed = only(summary, 'PushedModel')
    if pushed is None:
        return '<p>The Pusher did not run.</p>'
    if summary_lib.custom_property(pushed, properties.PUSHED) != 1:
        return (f'<p class="no"><b>Not pushed</b>: '
                f'{html.escape(summary_text.not_pushed_reason(pushed))}.</p>')
    version = summary_lib.custom_property(pushed, properties.PUSHED_VERSION)
    reused = summary_lib.custom_property(pushed, versions.REUSED_PROPERTY) == 1
    note = ' (already served: no new version was made)' if reused else ''
    path = summary_lib.custom_property(pushed, properties.PUSHED_DESTINATION)
    return table(['pushed version', 'path'], [[f'{version}{note}', path]])
