"""The blessing's checks, read back from what TFMA wrote: which ran, which failed, and why.

TFMA (run by the stock Evaluator) decides the blessing; this module only puts its decision into
words. `failure_reasons` turns the failures of a `tfma.ValidationResult` into one line each,
e.g. "sparse_categorical_accuracy 0.8712 < 0.90", "label_name=cat: sparse_categorical_accuracy
0.6667 < 0.80" or "sparse_categorical_accuracy change vs served version 3 -0.0120 < 0.00".
`load_checks` lists every check of an evaluation (the thresholds of the eval config TFMA saved,
on every slice they apply to) with its value, threshold and outcome, for the report.
No TFX imports.
"""
import dataclasses
from typing import Dict, List, Optional, Tuple

import tensorflow_model_analysis as tfma

OVERALL = 'overall'
# TFMA's message for a threshold whose metric was not computed on a slice.
_NOT_FOUND = 'Metric not found.'


@dataclasses.dataclass(frozen=True)
class Check:
    metric: str             # e.g. sparse_categorical_accuracy
    slice: str              # 'overall' or e.g. 'label_name=cat'
    kind: str               # 'value', or 'change vs baseline' (candidate minus baseline)
    value: Optional[float]  # None when TFMA did not compute it
    threshold: str          # e.g. '>= 0.90'
    passed: bool


def _number(x: float) -> str:
    """A bound for people: 0.9 -> '0.90', -1e-10 (our rerun epsilon) -> '0.00', 0.925 kept."""
    rounded = round(x, 6) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f'{rounded:.2f}' if rounded == round(rounded, 2) else f'{rounded:g}'


def slice_name(slice_key) -> str:
    """'overall' for the whole eval split, else 'column=value[, ...]' (a tuple slice key)."""
    if not slice_key:
        return OVERALL
    return ', '.join(f'{column}={value.decode() if isinstance(value, bytes) else value}'
                     for column, value in slice_key)


def _bounds(threshold: tfma.MetricThreshold) -> List[Tuple[str, float]]:
    """(operator, bound) pairs the value must satisfy, e.g. [('>=', 0.9)]."""
    if threshold.HasField('value_threshold'):
        value = threshold.value_threshold
        return ([('>=', value.lower_bound.value)] if value.HasField('lower_bound') else []) + (
            [('<=', value.upper_bound.value)] if value.HasField('upper_bound') else [])
    change = threshold.change_threshold
    operator = '<=' if change.direction == tfma.MetricDirection.LOWER_IS_BETTER else '>='
    bounds = [(operator, change.absolute.value)] if change.HasField('absolute') else []
    if change.HasField('relative'):
        bounds.append((f'{operator} (relative)', change.relative.value))
    return bounds


def describe_threshold(threshold: tfma.MetricThreshold) -> str:
    return ' and '.join(f'{op} {_number(bound)}' for op, bound in _bounds(threshold))


def _change_label(served_version: Optional[int]) -> str:
    return ('change vs baseline' if served_version is None
            else f'change vs served version {served_version}')


def _failure_text(failure, served_version: Optional[int]) -> str:
    key, threshold = failure.metric_key, failure.metric_threshold
    name = key.name + (f' {_change_label(served_version)}' if key.is_diff else '')
    if failure.message == _NOT_FOUND or not failure.metric_value.HasField('double_value'):
        return f'{name} not computed (needs {describe_threshold(threshold)})'
    value = failure.metric_value.double_value.value
    shown = f'{value:+.4f}' if key.is_diff else f'{value:.4f}'
    for operator, bound in _bounds(threshold):
        if operator == '>=' and not value >= bound:
            return f'{name} {shown} < {_number(bound)}'
        if operator == '<=' and not value <= bound:
            return f'{name} {shown} > {_number(bound)}'
    return f'{name} {shown} fails {describe_threshold(threshold)}'


def failure_reasons(result, served_version: Optional[int] = None) -> List[str]:
    """One line per failed check of a tfma ValidationResult ([] when it passed).

    `served_version` names the baseline in change checks ("change vs served version 3").
    """
    reasons = []
    for per_slice in result.metric_validations_per_slice:
        where = slice_name(tfma.slicer.deserialize_slice_key(per_slice.slice_key))
        prefix = '' if where == OVERALL else f'{where}: '
        reasons.extend(prefix + _failure_text(f, served_version) for f in per_slice.failures)
    for spec in result.missing_slices:
        reasons.append(f'no examples in slice {", ".join(spec.feature_keys) or OVERALL}')
    if result.missing_thresholds:
        reasons.append('no thresholds configured')
    if not result.validation_ok and not reasons:
        reasons.append('TFMA computed no metrics (is the eval split empty?)')
    return reasons


def _wrap(threshold) -> tfma.MetricThreshold:
    """TFMA's per-check threshold (value or change) as the MetricThreshold a failure records."""
    if isinstance(threshold, tfma.GenericValueThreshold):
        return tfma.MetricThreshold(value_threshold=threshold)
    return tfma.MetricThreshold(change_threshold=threshold)


def load_checks(evaluation_uri: str) -> List[Check]:
    """Every check TFMA made in this evaluation, overall first, with its outcome."""
    eval_config, _, _, _ = tfma.writers.eval_config_writer.load_eval_run(evaluation_uri)
    if eval_config is None:
        return []
    thresholds = tfma.metrics.metric_thresholds_from_metrics_specs(
        eval_config.metrics_specs, eval_config=eval_config)
    baseline = tfma.utils.get_baseline_model_spec(eval_config)
    failed = set()
    for per_slice in tfma.load_validation_result(evaluation_uri).metric_validations_per_slice:
        slice_key = tfma.slicer.deserialize_slice_key(per_slice.slice_key)
        for failure in per_slice.failures:
            failed.add((slice_key, tfma.metrics.MetricKey.from_proto(failure.metric_key),
                        failure.metric_threshold.SerializeToString(deterministic=True)))
    checks = []
    for metrics in tfma.load_metrics(evaluation_uri):
        slice_key = tfma.slicer.deserialize_slice_key(metrics.slice_key)
        values: Dict = {tfma.metrics.MetricKey.from_proto(item.key): item.value
                        for item in metrics.metric_keys_and_values}
        for key, sliced in thresholds.items():
            if baseline is not None and key.model_name == baseline.name:
                continue
            for spec, threshold in sliced:
                if spec is not None and not tfma.slicer.SingleSliceSpec(
                        spec=spec).is_slice_applicable(slice_key):
                    continue
                wrapped = _wrap(threshold)
                value = values.get(key)
                checks.append(Check(
                    metric=key.name, slice=slice_name(slice_key),
                    kind='change vs baseline' if key.is_diff else 'value',
                    value=value.double_value.value if value is not None and value.HasField(
                        'double_value') else None,
                    threshold=describe_threshold(wrapped),
                    passed=(slice_key, key, wrapped.SerializeToString(deterministic=True))
                    not in failed))
    return sorted(checks, key=lambda c: (c.slice != OVERALL, c.slice, c.kind, c.metric))
