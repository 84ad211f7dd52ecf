"""The no-regression rule, aware of the eval set's noise. No TFX imports.

A candidate is compared with the served model on the same eval examples. TFMA computes the
difference of their accuracies (the "diff" metric) and, with confidence intervals switched on
(jackknife: the eval set is split into 20 buckets and the metrics recomputed 20 times, leaving
one bucket out each time), a 95% interval for it. The buckets hold the same examples for both
models, so the interval is that of a paired comparison: an example both models get right or
both get wrong moves neither. TFMA's own change thresholds compare only the point value (its
metrics_validator converts a value with an interval to its unsampled value), so the rule is
applied here:

    refused only when the whole 95% interval lies below -max_regression,
    i.e. when the candidate is worse than the served model beyond the noise of the eval set.

On a 204-example eval split one example is 0.5%: a candidate two examples worse (-0.0098) is
within noise (its interval reaches above 0) and is blessed, with the figures stated; a candidate
clearly worse is not. Without an interval (TFMA did not compute one) the point value decides.
The interval serves this rule alone, so with nothing to compare against it is not computed
(`without_intervals`): the jackknife is about half of a first run's evaluation time.
"""
import dataclasses
import math
from typing import Optional

from google.protobuf import json_format
import tensorflow_model_analysis as tfma

from components.evaluate import accuracy

LEVEL = '95%'   # TFMA's intervals (tfma.utils.calculate_confidence_interval, alpha 0.05)
EPSILON = 1e-10  # an identical model (a rerun) has a change of exactly 0


@dataclasses.dataclass(frozen=True)
class Change:
    value: float                  # candidate minus served, on the same examples
    lower: Optional[float] = None  # the 95% interval, when TFMA computed it
    upper: Optional[float] = None

    @property
    def has_interval(self) -> bool:
        return (self.lower is not None and self.upper is not None
                and math.isfinite(self.lower) and math.isfinite(self.upper))


def _bound(max_regression: float) -> str:
    return f'{-max_regression + 0.0:.2f}'


def judge(change: Change, max_regression: float, version: int) -> tuple:
    """(passed, sentence), e.g. (True, 'sparse_categorical_accuracy change vs served version 1
    -0.0098, within noise (95% interval -0.0250..+0.0060)')."""
    name = f'{accuracy.NAME} change vs served version {version} {change.value:+.4f}'
    floor = -max_regression - EPSILON
    if not change.has_interval:
        passed = change.value >= floor
        return passed, (f'{name}' if passed else f'{name} < {_bound(max_regression)}') + (
            ' (no confidence interval computed)')
    interval = f'{LEVEL} interval {change.lower:+.4f}..{change.upper:+.4f}'
    if change.upper < floor:
        return False, f'{name}, worse beyond noise ({interval}, all below ' \
                      f'{_bound(max_regression)})'
    if change.value >= floor:
        return True, f'{name} ({interval})'
    return True, f'{name}, within noise ({interval})'


def read_change(evaluation_uri: str) -> Optional[Change]:
    """The overall accuracy change and its interval, as TFMA saved them; None without a
    baseline (no diff metric)."""
    for metrics in tfma.load_metrics(evaluation_uri):
        if metrics.slice_key.ByteSize():  # overall slice only
            continue
        for item in metrics.metric_keys_and_values:
            if item.key.name == accuracy.NAME and item.key.is_diff:
                interval = item.confidence_interval
                bounds = ((interval.lower_bound.double_value.value,
                           interval.upper_bound.double_value.value)
                          if item.HasField('confidence_interval') else (None, None))
                return Change(item.value.double_value.value, *bounds)
    return None


def without_intervals(eval_config_json: str) -> str:
    """The Evaluator's eval_config (TFX's JSON form) with confidence intervals switched off:
    for an evaluation with no baseline, where no change is judged."""
    config = json_format.Parse(eval_config_json, tfma.EvalConfig())
    config.options.compute_confidence_intervals.value = False
    return json_format.MessageToJson(config, sort_keys=True, preserving_proto_field_name=True)
