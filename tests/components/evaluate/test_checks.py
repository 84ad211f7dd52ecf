"""Unit tests of the blessing's reasons: TFMA validation results put into words.

The results come from TFMA's own validator on the pipeline's eval config (as in
tests/pipeline/definition/test_eval_config.py), or are TFMA's result protos for the cases its
validator produces only inside a Beam run (a missing slice, a metric that was not computed).
"""
import tensorflow_model_analysis as tfma
from tensorflow_model_analysis.evaluators import metrics_validator

from components.evaluate import checks
from pipeline.definition import factory
from components.evaluate.params import EvalParams


def _with_change_threshold(eval_config, max_regression):
    """The overall bar plus TFMA's own "change >= -max_regression": an evaluation carrying
    TFMA's change threshold rather than the interval rule (components/evaluate/noise.py) must
    still be read back by the report, since stored evaluations of either kind exist."""
    overall = eval_config.metrics_specs[0].metrics[0].per_slice_thresholds[0]
    overall.threshold.change_threshold.direction = tfma.MetricDirection.HIGHER_IS_BETTER
    overall.threshold.change_threshold.absolute.value = -max_regression - 1e-10
    return eval_config


def _result(config, slice_key, accuracy, change=None):
    eval_config = tfma.utils.update_eval_config_with_defaults(
        _with_change_threshold(factory.make_eval_config(config), config.max_regression),
        has_baseline=change is not None, rubber_stamp=True)
    key = tfma.metrics.MetricKey(name='sparse_categorical_accuracy',
                                 model_name='candidate' if change is not None else '',
                                 example_weighted=False)
    metrics = {key: accuracy}
    if change is not None:
        metrics[key.make_diff_key()] = change
    return metrics_validator.validate_metrics((slice_key, metrics), eval_config)


def test_overall_bar_failure_reads_value_below_bound():
    result = _result(EvalParams(min_accuracy=0.90), (), 0.87121)
    assert checks.failure_reasons(result) == ['sparse_categorical_accuracy 0.8712 < 0.90']


def test_class_failure_names_its_slice():
    result = _result(EvalParams(min_class_accuracy=0.925), (('label_name', b'cat'),), 0.893)
    assert checks.failure_reasons(result) == [
        'label_name=cat: sparse_categorical_accuracy 0.8930 < 0.925']


def test_regression_names_the_served_version_and_the_change():
    result = _result(EvalParams(min_accuracy=0.5), (), 0.91, change=-0.012)
    assert checks.failure_reasons(result, served_version=3) == [
        'sparse_categorical_accuracy change vs served version 3 -0.0120 < 0.00']
    assert checks.failure_reasons(result) == [
        'sparse_categorical_accuracy change vs baseline -0.0120 < 0.00']
    tolerant = _result(EvalParams(min_accuracy=0.5, max_regression=0.05), (), 0.91, change=-0.1)
    assert checks.failure_reasons(tolerant, 2) == [
        'sparse_categorical_accuracy change vs served version 2 -0.1000 < -0.05']


def test_both_bars_failing_give_two_reasons_and_a_pass_gives_none():
    result = _result(EvalParams(min_accuracy=0.9), (), 0.5, change=-0.3)
    assert len(checks.failure_reasons(result, 1)) == 2
    assert checks.failure_reasons(_result(EvalParams(), (), 0.95)) == []


def test_missing_metric_slice_and_empty_results_are_reasons_too():
    result = tfma.ValidationResult(validation_ok=False)
    failure = result.metric_validations_per_slice.add().failures.add(message='Metric not found.')
    failure.metric_key.name = 'sparse_categorical_accuracy'
    failure.metric_threshold.value_threshold.lower_bound.value = 0.9
    result.missing_slices.add(feature_keys=['label_name'])
    assert checks.failure_reasons(result) == [
        'sparse_categorical_accuracy not computed (needs >= 0.90)',
        'no examples in slice label_name']
    assert checks.failure_reasons(tfma.ValidationResult(validation_ok=False)) == [
        'TFMA computed no metrics (is the eval split empty?)']


def test_describe_threshold_is_plain():
    value = tfma.MetricThreshold(value_threshold=tfma.GenericValueThreshold(
        lower_bound={'value': 0.9}, upper_bound={'value': 1.0}))
    assert checks.describe_threshold(value) == '>= 0.90 and <= 1.00'
    change = tfma.MetricThreshold(change_threshold=tfma.GenericChangeThreshold(
        direction=tfma.MetricDirection.HIGHER_IS_BETTER, absolute={'value': -1e-10}))
    assert checks.describe_threshold(change) == '>= 0.00'
