"""The run report's sections: one function per stage, each turning the RunSummary's artifacts
(read with the stock readers, `readers`) into escaped HTML, pictures drawn into `folder`.

pipeline/report/page.py chooses which sections a run's page has and assembles the page.
"""
import html
import os
from typing import Optional

import numpy as np
import tensorflow as tf

from core import properties, versions, window as window_lib
from pipeline.runs import summary as summary_lib
from pipeline.runs import stages, summary_text
from pipeline.report import plots, readers
from pipeline.report.html_parts import img, table


def only(summary: summary_lib.RunSummary, type_name: str):
    """The run's artifact of that type: the newest, since a resolved baseline is older."""
    found = summary.outputs.get(type_name, [])
    return max(found, key=lambda a: a.id) if found else None


# Beside each run's pictures (reports/<run>/): the window's counts per span folder (readers.py).
WINDOW_COUNTS_FILE = '.window_class_counts.json'


def _spans_text(entries) -> str:
    spans = [entry.span for entry in entries]
    if len(spans) == 1:
        return f'span {spans[0]}'
    if spans == list(range(spans[0], spans[-1] + 1)):
        return f'spans {spans[0]}-{spans[-1]}'
    return 'spans ' + ', '.join(map(str, spans))


def _window_table(entries, examples) -> str:
    """Which spans the model learnt from, and each one's examples per split."""
    left_out = summary_lib.custom_property(examples, window_lib.NOTE_PROPERTY)
    out = (f'<p>Training window: {html.escape(_spans_text(entries))}. The model was trained on '
           f'the train splits and evaluated on the eval splits of '
           f'{"all of them" if len(entries) > 1 else "it"}; the counts per class are summed over '
           'the window.' + (f' Left out: {html.escape(left_out)}.' if left_out else '') + '</p>')
    rows = [[f'span {e.span}' + (' (newest)' if e is entries[-1] and len(entries) > 1 else ''),
             e.num_train, e.num_eval] for e in entries]
    if len(entries) > 1:
        rows.append(['window', sum(e.num_train for e in entries),
                     sum(e.num_eval for e in entries)])
    return out + table(['span', 'train', 'eval'], rows)


def data_section(summary, folder) -> str:
    """The training window: its spans with their examples per split, and the examples per class
    and split summed over the window (what the model was trained and evaluated on). Image sizes
    come from StatisticsGen, which describes the newest span only."""
    statistics = only(summary, 'ExampleStatistics')
    by_split = readers.data_summary(statistics)
    examples = only(summary, 'Examples')
    newest = readers.window_entries(examples)[-1] if examples is not None else None
    splits = list(by_split)
    counted, note = None, ''
    if examples is not None:
        try:
            counted = readers.window_class_counts(
                examples, splits, os.path.join(os.path.dirname(folder), WINDOW_COUNTS_FILE))
        except (OSError, tf.errors.OpError) as error:  # e.g. retention deleted an old span
            note = (f'The window\'s records can no longer be read ({error}); the counts per '
                    f'class are those of span {newest.span} only (StatisticsGen).')
    over_window = counted is not None and any(counted.class_counts.values())
    # No span folders (one entry, span 0): the run's examples are all the data, no window.
    no_spans = over_window and [e.span for e in counted.entries] == [0]
    if over_window:
        counts = counted.class_counts
        out = '' if no_spans else _window_table(counted.entries, examples)
    else:
        counts = {k: s.class_counts for k, s in by_split.items()}
        which = (f'span {newest.span}' if newest is not None and newest.span
                 else 'this run\'s examples')
        out = f'<p>{html.escape(note or f"Examples of {which}.")}</p>'
    # How the newest span was split, and why (spans ingested before it was recorded have none).
    reason = (summary_lib.custom_property(examples, properties.SPLIT_REASON)
              if examples is not None else None)
    if reason:
        whose = 'The newest span\'s split' if over_window and not no_spans else 'Split'
        out += f'<p>{html.escape(f"{whose}: {reason}.")}</p>'
    classes = sorted({c for split in counts.values() for c in split})
    rows = [[c] + [counts[split].get(c, 0) for split in splits] for c in classes]
    rows.append(['total'] + [sum(counts[split].values()) for split in splits])
    picture = plots.class_counts({split: counts[split] for split in splits}, folder)
    header = [f'{split} (window)' for split in splits] if over_window and not no_spans \
        else splits
    out += table(['class'] + header, rows) + img(picture, 'examples per class')
    size_keys = next((list(s.image_sizes) for s in by_split.values() if s.image_sizes), [])
    if size_keys:  # images only: a table has no image sizes
        sizes = [[split] + [f'{lo:g}..{hi:g}' for lo, hi in s.image_sizes.values()]
                 for split, s in by_split.items()]
        of = f' of span {newest.span}, the newest' if newest is not None and not no_spans \
            else ''
        out += (f'<p>Image sizes{html.escape(of)} (pixels, min..max):</p>'
                + table(['split'] + size_keys, sizes))
    return out


def validator_anomalies(summary):
    """ExampleValidator's anomalies (DriftCheck's output has the same type, and a drift text)."""
    drift = summary_lib.drift_artifact(summary)
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
    drift = summary_lib.drift_artifact(summary)
    line = summary_lib.custom_property(drift, properties.DRIFT_TEXT)
    rows = [[v['feature'], v['measure'], f"{v['value']:.4f}", f"<= {v['threshold']:.2f}",
             'EXCEEDED' if v['exceeded'] else 'ok'] for v in summary_lib.drift_values(summary)]
    verdict = 'no' if any(v['exceeded'] for v in summary_lib.drift_values(summary)) else 'yes'
    return (f'<p class="{verdict}">{html.escape(line[0].upper() + line[1:])}</p>'
            + (table(['feature', 'distance', 'value', 'must be', 'result'], rows) if rows
               else ''))


def settings_section(summary) -> str:
    rows = readers.training_settings(summary.execution_properties.get(stages.TRAINER, {}),
                                     summary.training_result(),
                                     readers.model_input(summary.trained_model()),
                                     only(summary, 'Examples'))
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
