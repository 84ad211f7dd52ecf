"""The run report: one HTML page per run and its PNG pictures, under the run's output folder.

`write_report(summary, output_dir)` takes the RunSummary that `pipeline.runs.summary` read from ML
Metadata (the same one the console summary prints), loads each artifact with the stock readers
(`readers`), draws the pictures (`plots`), renders each stage's section (`sections`) and
assembles self-contained HTML: inline CSS, images by relative path, no scripts or network, so it
opens offline and can be archived.

Every run keeps its own page, `reports/<run>.html`, with its pictures in `reports/<run>/`, so a
later run never overwrites them; `report.html` in the output folder is a copy of the newest
(its image links point into `reports/<run>/`). A failed run's page starts with the stage that
failed and its error; sections of stages that never ran are left out.
"""
import html
import os
from typing import List, Optional, Tuple

from core import properties, serving_labels
from pipeline.runs import summary as summary_lib
from pipeline.runs import run_files, stages, summary_text
from pipeline.report import history as history_lib, readers
from pipeline.report import sections as sections_lib

REPORT_FILE = 'report.html'
# Every section a page can have, in page order; a run's page has those its stages reached.
SECTIONS = ('Data', 'Anomalies', 'Drift', 'Settings', 'Training', 'Evaluation', 'Blessing',
            'Push', 'History')

_STYLE = ('body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}'
          'table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;'
          'padding:.25em .6em;text-align:right}th{background:#f3f3f3}'
          'td:first-child,th:first-child,.text td,.text th{text-align:left}'
          'pre{background:#f7f7f7;padding:.6em;white-space:pre-wrap}.no{color:#b00}'
          '.yes{color:#070}img{max-width:100%}.failed{border:2px solid #b00;'
          'background:#fff4f4;padding:.2em 1em;margin:1em 0}.failed h2{color:#b00}')


def run_report_path(output_dir: str, run_id: str) -> str:
    return os.path.join(os.path.abspath(output_dir), run_files.REPORTS_DIR,
                        run_files.run_file_name(run_id) + '.html')


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
    if summary.states.get(stages.BASELINE) == 'CACHED':
        text += ', chosen when this model was first evaluated (reused from the cache)'
    lines = f'<br>Baseline: {html.escape(text)}'
    now = summary_text.served_now(summary)
    if now is not None:
        pushed = sections_lib.only(summary, 'PushedModel')
        ours = lambda v: pushed is not None and summary_lib.custom_property(  # noqa: E731
            pushed, properties.PUSHED_VERSION) == str(v)
        serving_dir = os.path.dirname(now[1])
        labels = serving_labels.read(serving_dir)  # None: no models.config, newest served
        text = (f'{"version" if labels is None else "stable version"} {now[0]} ({now[1]})'
                + (", this run's model" if ours(now[0]) else ''))
        if labels is not None and labels.canary is not None:
            text += (f'; canary version {labels.canary} '
                     f'({os.path.join(serving_dir, str(labels.canary))})'
                     + (", this run's model" if ours(labels.canary) else ''))
        lines += '<br>' + html.escape(f'Served now: {text}')
    return lines


def _sections(summary, folder, history=None) -> List[Tuple[str, str]]:
    """(title, body) of each section whose stage ran; pictures are drawn into folder.
    history: (rows, serving folder) of every run of this pipeline, or None (no History)."""
    has = lambda type_name: sections_lib.only(summary, type_name) is not None  # noqa: E731
    examples = sections_lib.only(summary, 'Examples')
    class_names = summary_lib.class_names(examples) if examples is not None else []
    evaluation_artifact = sections_lib.only(summary, 'ModelEvaluation')
    evaluation = readers.evaluation(evaluation_artifact) if evaluation_artifact else None
    ran = lambda node, type_name: node in summary.states or has(type_name)  # noqa: E731
    candidates = (  # (title, whether its stage ran, how to build it), in SECTIONS order
        ('Data', has('ExampleStatistics'), lambda: sections_lib.data_section(summary, folder)),
        ('Anomalies', sections_lib.validator_anomalies(summary) is not None,
         lambda: sections_lib.anomalies_section(summary)),
        ('Drift', summary_lib.drift_artifact(summary) is not None,
         lambda: sections_lib.drift_section(summary)),
        ('Settings', stages.TRAINER in summary.execution_properties
         or summary.trained_model() is not None, lambda: sections_lib.settings_section(summary)),
        ('Training', has('ModelRun'), lambda: sections_lib.training_section(summary, folder)),
        ('Evaluation', evaluation is not None,
         lambda: sections_lib.evaluation_section(evaluation, class_names, folder)),
        ('Blessing', ran(stages.EVALUATOR, 'ModelBlessing'),
         lambda: sections_lib.blessing_section(summary, evaluation)),
        ('Push', ran(stages.PUSHER, 'PushedModel'), lambda: sections_lib.push_section(summary)),
        ('History', history is not None, lambda: history_lib.section(*history, folder)))
    return [(title, build()) for title, shown, build in candidates if shown]


def _page(summary, sections: List[Tuple[str, str]], image_prefix: str) -> str:
    steps = summary_text.steps_text(summary)
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
                 pipeline_name: Optional[str] = None, serving_dir: Optional[str] = None) -> str:
    """Writes reports/<run>.html with its PNGs in reports/<run>/, and report.html (this run,
    the newest) into output_dir; returns report.html's path. With pipeline_name, the page ends
    with the History of every run of that pipeline in this output's ML Metadata, and which of
    serving_dir's versions is served (default <output_dir>/serving; a bucket's too)."""
    folder = os.path.abspath(output_dir)
    name = run_files.run_file_name(summary.run_id)
    pictures = os.path.join(folder, run_files.REPORTS_DIR, name)
    os.makedirs(pictures, exist_ok=True)
    history = pipeline_name and (history_lib.read_rows(
        os.path.join(folder, 'metadata.sqlite'), pipeline_name, folder, summary),
        serving_dir or os.path.join(folder, 'serving'))
    sections = _sections(summary, pictures, history or None)
    _write(run_report_path(folder, summary.run_id), _page(summary, sections, f'{name}/'))
    path = os.path.join(folder, REPORT_FILE)
    _write(path, _page(summary, sections, f'{run_files.REPORTS_DIR}/{name}/'))
    return path
