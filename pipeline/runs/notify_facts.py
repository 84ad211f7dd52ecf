"""The facts of one run that a notification and the report's history both state, from ML Metadata.

Each reads a RunSummary (pipeline/runs/summary.py), that is what the run recorded, and reads the
properties other stages add defensively: a Model may carry no `spans` (trained from one
Examples artifact) and a run may have no DriftCheck artifact (the stage did not run); a
notification reports what is missing as "not measured", never as an error.

    outcome(summary)  ->  ('pushed', version, []) | ('not pushed', None, [reasons]) |
                          ('failed', None, ['<stage>: <first line>']) | ('did not finish', ...)

A run whose model the served version already held (training skipped: no new data), or whose
Pusher was cached (its PushedModel is an earlier run's push), made no new version: it is
'not pushed', and its reason says which version serves it and why.
"""
import dataclasses
import json
from typing import List, Optional, Tuple

from core import properties, serving_labels, versions
from pipeline.runs import stages, summary_text
from pipeline.runs.summary import RunSummary, custom_property as _custom

@dataclasses.dataclass(frozen=True)
class Drift:
    text: str                 # one line, e.g. "drift: label L∞ 0.63 > 0.30 vs ..."
    values: list              # every compared value: feature, measure, value, threshold, exceeded
    reasons: list             # one per exceeded value
    compared_version: Optional[int]


def _json(text, default):
    try:
        return json.loads(text) if text else default
    except (TypeError, ValueError):
        return default


def drift(summary: RunSummary) -> Optional[Drift]:
    """The DriftCheck artifact's reading (an ExampleAnomalies with `drift_text`), or None when the
    run measured none (no DriftCheck in this pipeline, or it did not run)."""
    found = [a for a in summary.outputs.get('ExampleAnomalies', [])
             if 'drift_text' in a.custom_properties]
    if not found:
        return None
    artifact = max(found, key=lambda a: a.id)
    return Drift(text=_custom(artifact, 'drift_text') or '',
                 values=_json(_custom(artifact, 'drift_values'), []),
                 reasons=_json(_custom(artifact, 'drift_reasons'), []),
                 compared_version=_custom(artifact, 'compared_version'))


def _examples(summary: RunSummary):
    found = summary.outputs.get('Examples', [])
    return max(found, key=lambda a: a.id) if found else None


def spans(summary: RunSummary) -> List[int]:
    """The spans the model was trained on (Model `spans`), else those of the Examples' window,
    else the Examples' own span; [] when nothing was ingested."""
    model = summary.trained_model()
    text = _custom(model, 'spans') if model is not None else None
    if text:
        return [int(s) for s in str(text).split(',') if s.strip().lstrip('-').isdigit()]
    examples = _examples(summary)
    if examples is None:
        return []
    window = _json(_custom(examples, 'window'), [])
    if window:
        return [int(entry['span']) for entry in window if 'span' in entry]
    span = _custom(examples, 'span')
    return [] if span is None else [int(span)]


def example_counts(summary: RunSummary) -> Optional[Tuple[int, int]]:
    """(train, eval) examples the model was trained and evaluated on: summed over the window
    when the Examples record one, else the run's own split counts; None when none."""
    examples = _examples(summary)
    if examples is None:
        return None
    window = _json(_custom(examples, 'window'), [])
    if window:
        return (sum(int(e.get('num_train') or 0) for e in window),
                sum(int(e.get('num_eval') or 0) for e in window))
    return (int(_custom(examples, properties.NUM_WRITTEN_TRAIN) or 0),
            int(_custom(examples, properties.NUM_WRITTEN_EVAL) or 0))


def eval_accuracy(summary: RunSummary) -> Optional[float]:
    result = summary.training_result()
    return None if result is None else result.eval_accuracy


def skipped_training(summary: RunSummary) -> Optional[str]:
    """Why training was skipped (the served model handed on: no new data), or None."""
    result = summary.training_result()
    if result is None or not result.training_skipped:
        return None
    return result.stop_reason or 'training skipped'


def outcome(summary: RunSummary) -> Tuple[str, Optional[int], List[str]]:
    """(what happened, pushed version or None, the reasons) of a run, as one word and a list."""
    if summary.failure is not None:
        stage, error = summary.failure
        return 'failed', None, [f'{stage}: {error.splitlines()[0] if error else "failed"}']
    failed = [node for node, state in summary.states.items() if state == 'FAILED']
    if failed:  # read from ML Metadata only (the history): TFX records that, not why
        return 'failed', None, [f'{failed[0]} failed (details in that run\'s log)']
    pushed = max(summary.outputs.get('PushedModel', []), key=lambda a: a.id, default=None)
    if pushed is None:
        return 'did not finish', None, ['the Pusher did not run']
    if _custom(pushed, properties.PUSHED):
        version = int(_custom(pushed, properties.PUSHED_VERSION) or 0)
        if summary.states.get(stages.PUSHER) == 'CACHED':  # the artifact is an earlier run's push
            return 'not pushed', None, [f'version {version} already serves this model: pushed '
                                        'by an earlier run (the Pusher was cached)']
        if not _custom(pushed, versions.REUSED_PROPERTY):
            return 'pushed', version, []
        # No new version: the served one already held these bytes (e.g. training was skipped).
        why = skipped_training(summary)
        return 'not pushed', None, [f'version {version} already serves this model'
                                    + (f' ({why})' if why else '')]
    blessings = summary.outputs.get('ModelBlessing', [])
    blessing = max(blessings, key=lambda a: a.id) if blessings else None
    if blessing is not None and not _custom(blessing, properties.BLESSED):
        reasons = summary_text.blessing_reasons(blessing) or ['not blessed']
    else:
        reasons = [summary_text.not_pushed_reason(pushed)]
    return 'not pushed', None, reasons


def push_mode(summary: RunSummary) -> Optional[str]:
    """auto | candidate: how the run's Pusher labels what it pushes; None when it did not run."""
    config = summary.execution_properties.get(stages.PUSHER, {}).get('custom_config')
    return config and json.loads(config).get('mode', 'auto')


def labels(summary: RunSummary) -> Optional[dict]:
    """{'stable': N, 'canary': M or None} of the run's serving folder now, or None."""
    serving_dir = summary.execution_properties.get(stages.BASELINE, {}).get('serving_dir')
    if not serving_dir:
        return None
    found = serving_labels.read(serving_dir)
    if found is None:   # no models.config: TF Serving serves the newest
        stable = versions.served_version(serving_dir)
        return None if stable is None else {'stable': stable, 'canary': None}
    return {'stable': found.stable, 'canary': found.canary}


@dataclasses.dataclass(frozen=True)
class Comparison:
    """The Evaluator's figures (components/evaluate/figures.py): the candidate's accuracy and the
    served model's on the same examples, the eval splits of the run's window."""
    candidate: float
    served: Optional[float]           # None: nothing was compared
    served_version: Optional[int]     # the version compared with; None: none
    examples: Optional[int]           # how many examples both were evaluated on
    not_compared: Optional[str] = None  # 'served version N: why', when one was skipped


def comparison(summary: RunSummary) -> Optional[Comparison]:
    """The run's blessing's figures, or None (no Evaluator ran, or it ran before they were
    recorded)."""
    blessings = summary.outputs.get('ModelBlessing', [])
    blessing = max(blessings, key=lambda a: a.id) if blessings else None
    candidate = None if blessing is None else _custom(blessing, properties.CANDIDATE_ACCURACY)
    if candidate is None:
        return None
    version = _custom(blessing, properties.COMPARED_VERSION)
    served = _custom(blessing, properties.SERVED_ACCURACY)
    examples = _custom(blessing, properties.EVAL_EXAMPLES)
    return Comparison(candidate=float(candidate), served=None if served is None else float(served),
                      served_version=None if version is None or version < 0 else int(version),
                      examples=None if examples is None else int(examples),
                      not_compared=_custom(blessing, properties.NOT_COMPARED) or None)


def pushed_as(summary: RunSummary) -> str:
    """'canary' when the run's push went out as the canary (candidate mode), else ''."""
    pushed = max(summary.outputs.get('PushedModel', []), key=lambda a: a.id, default=None)
    label = pushed is not None and _custom(pushed, properties.SERVING_LABEL)
    return label if label == serving_labels.CANARY else ''
