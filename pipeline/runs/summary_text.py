"""The run summary in words: what `runner.py --local` prints at the end, one line per fact.

It reads only the RunSummary (pipeline/runs/summary.py), that is what ML Metadata recorded, and says
every decision with its reason: what was ingested or rejected, the input the model was trained
on and how it was chosen (or what was imputed in a table), which served model it was compared
with, and why it was or was not blessed and pushed. The run report uses the same sentences.
"""
import json
import os
from typing import List, Optional, Tuple

from ml_metadata.proto import metadata_store_pb2

from core import properties, serving_labels, versions, window
from pipeline.runs import stages
from pipeline.runs.summary import RunSummary, custom_property as _custom, drift_artifact
from training.result import TrainResult



def format_summary(summary: RunSummary) -> str:
    """The end-of-run report: counts per split, anomalies, accuracy, blessing, pushed version."""
    lines = [f'Run {summary.run_id}']
    lines.append('  steps: ' + steps_text(summary))
    if summary.beam:
        lines.append(f'  beam: {summary.beam}')
    for examples in summary.outputs.get('Examples', []):
        counts = {s: _custom(examples, properties.num_written(s)) for s in ('train', 'eval')}
        reasons = ', '.join(f'{k[len("num_rejected_"):]} {v.int_value}' for k, v in sorted(
            examples.custom_properties.items()) if k.startswith('num_rejected_') and v.int_value)
        rejected = _custom(examples, properties.NUM_REJECTED)
        lines.append(f'  examples: train {counts["train"]}, eval {counts["eval"]}, rejected '
                     f'{rejected}{f" ({reasons})" if reasons else ""} '
                     f'of {_custom(examples, "num_found")} records '
                     f'(span {_custom(examples, "span")})')
        text = window_text(examples)
        if text:  # the spans trained and evaluated on
            lines.append(f'  window: {text}')
    gate = summary.states.get(stages.GATE)
    if gate is not None:  # nothing is said about a stage that never ran
        lines.append('  anomalies: ' + ('none' if gate in ('COMPLETE', 'CACHED') else
                                        'found: the gate stopped the run'))
    model, baseline = summary.trained_model(), summary.baseline_model()
    if model is not None:
        result = summary.training_result()
        lines.append('  accuracy: train {:.4f}, eval {:.4f}'.format(
            result.train_accuracy or 0.0, result.eval_accuracy or 0.0))
        # How long it trained and why it stopped; the policy it trained under and why auto
        # chose it; XLA, and the timed trial that chose it; images/s, share of the peak, epoch
        # times and input wait.
        for label, text in (('training', training_text), ('precision', precision_text),
                            ('train step', step_text), ('speed', speed_text)):
            if text(result):
                lines.append(f'  {label}: {text(result)}')
        statement = _custom(model, properties.INPUT_STATEMENT) or table_input_text(summary)
        if statement:  # the input the model takes, and how it was chosen or filled in
            lines.append(f'  input: {statement}')
    if baseline is not None:
        lines.append(f'  baseline: {baseline_text(summary)}')
    drift = drift_artifact(summary)
    if drift is not None:  # e.g. 'drift: label L∞ 0.63 > 0.30 vs the data of served version 1'
        lines.append(f'  {_custom(drift, properties.DRIFT_TEXT)}')
    for blessing in summary.outputs.get('ModelBlessing', []):
        regression = _custom(blessing, properties.REGRESSION_CHECK)
        if regression:  # the no-regression rule's figures, passed or not
            lines.append(f'  no regression: {regression}')
        lines.append(f'  blessed: {blessing_text(blessing)}')
    for pushed in summary.outputs.get('PushedModel', []):
        lines.append(f'  pushed: {pushed_text(pushed)}')
    if summary.retention:
        lines.append(f'  retention: {summary.retention}')
    if summary.failure is not None:
        stage, error = summary.failure
        lines.append(f'  failed: {stage}')
        lines.extend(f'    {line}' for line in error.splitlines())
    return '\n'.join(lines)


def steps_text(summary: RunSummary) -> str:
    """'ImageExampleGen complete, StatisticsGen cached, ...': each stage by its display name
    (pipeline/runs/stages.py) and its state, in the order they ran."""
    return ', '.join(f'{stages.stage(node).display_name} {state.lower()}'
                     for node, state in summary.states.items())


def window_text(examples: metadata_store_pb2.Artifact) -> Optional[str]:
    """'spans 2-4, 2,391 train / 597 eval examples', and any span left out with its reason.
    None without span folders (one entry, span 0) or for Examples that record no window."""
    entries = window.from_json(_custom(examples, window.PROPERTY) or '[]')
    if not entries or (len(entries) == 1 and entries[0].span == 0):
        return None
    note = _custom(examples, window.NOTE_PROPERTY)
    return window.describe(entries) + (f' ({note})' if note else '')


def training_text(result: TrainResult) -> Optional[str]:
    """How long the model trained, at what batch and why it stopped, as the trainer recorded
    on the Model: e.g. '14 epochs at batch 64, early stopping: ... (held-out 2,481 examples of
    train: 5.11%, not 10%: ...)'. None for a model that records no stop reason."""
    reason = result.stop_reason
    if not reason:
        return None
    epochs = result.epochs_run
    if epochs is None:  # a fixed length: the reason says how many steps
        return reason
    held_out = result.held_out_examples or 0
    batch = result.global_batch_size or 0
    return (f'{epochs:g} epoch{"" if epochs == 1 else "s"}'
            + (f' at batch {batch:,}' if batch else '') + f', {reason}'
            + (f' (held-out {held_out:,} examples of train'
               + (f': {result.held_out_reason}' if result.held_out_reason else '') + ')'
               if held_out else ''))


def precision_text(result: TrainResult) -> Optional[str]:
    """The policy the model trained under and why, e.g. 'float32 (auto on a CPU without bfloat16
    instructions)'. None for a model that records no reason."""
    policy, reason = result.mixed_precision, result.precision_reason
    if not policy or not reason:
        return None
    return policy if reason == 'asked' else f'{policy} ({reason})'


def step_text(result: TrainResult) -> Optional[str]:
    """XLA and why, then the trial's figures when one ran, e.g. 'XLA off (auto: nothing beat
    float32 by 5% in a timed trial of the train step); trial: float32 1,520 img/s; ...'. None
    for a model that records no XLA choice."""
    xla, reason = result.xla, result.xla_reason
    if xla is None:
        return None
    text = f'XLA {"on" if xla else "off"}' + (f' ({reason})' if reason and reason != 'asked'
                                              else '')
    trial, seconds = result.step_trial, result.step_trial_seconds
    if not trial:
        return text
    return text + (f'; trial ({seconds:.0f} s): ' if seconds else '; trial: ') + trial


def _seconds(value: float) -> str:
    return f'{value:.1f}' if value < 10 else f'{value:.0f}'


def _seconds_range(values: List[float]) -> str:
    low, high = _seconds(min(values)), _seconds(max(values))
    return f'{low} s' if low == high else f'{low}-{high} s'


def speed_text(result: TrainResult) -> Optional[str]:
    """How fast it trained, e.g. '1,480 img/s, 93 GFLOP/s: 31% of the float32 matmul peak
    measured after training (300 GFLOP/s); epochs 31-33 s (the first 40 s, with tracing);
    input wait 2%'. An input wait of a quarter or more says the step waited on the input
    pipeline. None for a model that records no speed."""
    rate = result.examples_per_second
    if not rate:
        return None
    parts = [f'{rate:,.0f} img/s']
    achieved, peak = result.train_flops_per_second, result.peak_flops_per_second
    if achieved and peak:
        parts[0] += (f', {achieved / 1e9:,.0f} GFLOP/s: {achieved / peak:.0%} of the '
                     f'{result.peak_dtype} matmul peak measured after training '
                     f'({peak / 1e9:,.0f} GFLOP/s)')
    epochs = result.epoch_seconds or ()
    if len(epochs) == 1:
        parts.append(f'epoch {_seconds(epochs[0])} s')
    elif epochs:
        parts.append(f'epochs {_seconds_range(epochs[1:])} (the first {_seconds(epochs[0])} s, '
                     'with tracing)')
    wait = result.input_wait_fraction
    if wait is not None:
        parts.append(f'input wait {wait:.0%}' + (': input-bound' if wait >= 0.25 else ''))
    return '; '.join(parts)


def failed_checks(blessing: metadata_store_pb2.Artifact) -> List[str]:
    """The checks that failed, as our Evaluator put TFMA's validation result into words."""
    return json.loads(_custom(blessing, properties.BLESSING_REASONS) or '[]')


def comparison_text(blessing: metadata_store_pb2.Artifact) -> str:
    """Which served model the candidate was compared with, as a sentence."""
    version = _custom(blessing, properties.COMPARED_VERSION)
    not_compared = _custom(blessing, properties.NOT_COMPARED)
    if not_compared:
        return f'Not compared with {not_compared}. Only checks that need no baseline applied.'
    if version is not None and version >= 0:
        return f'Compared with served version {version}.'
    return 'Nothing was served yet: the checks against a baseline did not apply.'


def blessing_reasons(blessing: metadata_store_pb2.Artifact) -> List[str]:
    """The failed checks, then which served model was not compared and why."""
    not_compared = _custom(blessing, properties.NOT_COMPARED)
    return failed_checks(blessing) + ([f'not compared with {not_compared}'] if not_compared
                                      else [])


def blessing_text(blessing: metadata_store_pb2.Artifact) -> str:
    """'yes' or 'no', with the reasons in brackets when there are any."""
    reasons = blessing_reasons(blessing)
    verdict = 'yes' if _custom(blessing, properties.BLESSED) else 'no'
    return verdict + (f' ({"; ".join(reasons)})' if reasons else '')


def not_pushed_reason(pushed: metadata_store_pb2.Artifact) -> str:
    """Why the Pusher did not push, with what to do when the served model is another kind."""
    reason = _custom(pushed, versions.NOT_PUSHED_REASON_PROPERTY) or 'not blessed'
    if _custom(pushed, versions.INCOMPATIBLE_PROPERTY):
        reason += '; use another --output'  # the one fix: a serving folder of its own
    return reason


def pushed_text(pushed: metadata_store_pb2.Artifact) -> str:
    """'version N at PATH', or 'no (<why>)'."""
    if not _custom(pushed, properties.PUSHED):
        return f'no ({not_pushed_reason(pushed)})'
    reused = ' (already served: no new copy)' if _custom(pushed, versions.REUSED_PROPERTY) else ''
    return (f'version {_custom(pushed, properties.PUSHED_VERSION)} at '
            f'{_custom(pushed, properties.PUSHED_DESTINATION)}{reused}{label_text(pushed)}')


def label_text(pushed: metadata_store_pb2.Artifact) -> str:
    """' as canary; stable is version 6' for a candidate push; '' for a version that became
    stable (every push in auto mode) or whose push records no label."""
    if _custom(pushed, properties.SERVING_LABEL) != serving_labels.CANARY:
        return ''
    return f' as canary; stable is version {_custom(pushed, properties.STABLE_VERSION)}'


def table_input_text(summary: RunSummary) -> Optional[str]:
    """A CSV run's input: its columns, and which empty values were imputed (None for images)."""
    examples = (summary.outputs.get('Examples') or [None])[0]
    spec = examples is not None and json.loads(_custom(examples, properties.INPUT_SPEC) or '{}')
    if not spec or spec.get('kind') != 'tabular':
        return None
    text = (f'table of {len(spec["numeric"])} numeric and {len(spec["categorical"])} '
            'categorical columns')
    missing = json.loads(_custom(examples, properties.MISSING_VALUES) or '{}')
    if missing:
        counts = ', '.join(f'{column} {count}' for column, count in sorted(
            missing.items(), key=lambda item: -item[1]))
        text += (f'; empty numeric values imputed with the train mean, with a missing-value '
                 f'indicator: {counts}')
    return text


def served_now(summary: RunSummary) -> Optional[Tuple[int, str]]:
    """(version, path) served in the run's serving folder when this is read, or None."""
    serving_dir = summary.execution_properties.get(stages.BASELINE, {}).get('serving_dir')
    version = versions.served_version(serving_dir) if serving_dir else None
    return None if version is None else (version, os.path.join(serving_dir, str(version)))


def baseline_text(summary: RunSummary) -> str:
    """The served model the candidate was compared with, and what is served now if that changed
    (a cached rerun reuses the baseline chosen when its model was first evaluated)."""
    served = _custom(summary.baseline_model(), 'served_version')
    text = ('none (nothing served yet)' if served is None or served < 0
            else f'served version {served}')
    if _custom(summary.baseline_model(), 'incompatible_reason'):
        text += ' (a model for another task: not compared, see below)'
    if summary.states.get(stages.BASELINE) != 'CACHED':
        return text
    text += ', chosen when this model was first evaluated'
    now = served_now(summary)
    if now is not None and now[0] != served:
        pushed = (summary.outputs.get('PushedModel') or [None])[0]
        ours = pushed is not None and _custom(pushed, properties.PUSHED_VERSION) == str(now[0])
        text += f'; served now: version {now[0]}' + (", this run's model" if ours else '')
    return text
