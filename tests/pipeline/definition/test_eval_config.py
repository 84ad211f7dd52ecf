"""Unit tests of make_eval_config: the blessing rule as TFMA thresholds, checked by TFMA itself.

Each case prepares the config as the stock Evaluator does (`update_eval_config_with_defaults`,
which drops change thresholds without a baseline) and validates metrics per slice with TFMA's
own validator, the function the Evaluator's Beam pipeline runs on every slice.
"""
import tensorflow_model_analysis as tfma
from tensorflow_model_analysis.evaluators import metrics_validator

from pipeline.definition import factory
from components.evaluate.params import EvalParams

OVERALL = ()
CAT = (('label_name', 'cat'),)


def _validate(config: EvalParams, slice_key, accuracy, change=None):
    """TFMA's validation of one slice's accuracy (and change against a baseline, if given)."""
    eval_config = tfma.utils.update_eval_config_with_defaults(
        factory.make_eval_config(config), has_baseline=change is not None,
        rubber_stamp=True)
    model = 'candidate' if change is not None else ''
    key = tfma.metrics.MetricKey(name='sparse_categorical_accuracy', model_name=model,
                                 example_weighted=False)
    metrics = {key: accuracy}
    if change is not None:
        metrics[key.make_diff_key()] = change
        metrics[key.make_baseline_key(tfma.utils.get_baseline_model_spec(eval_config).name)] = (
            accuracy - change)
    return metrics_validator.validate_metrics((slice_key, metrics), eval_config)


def test_the_bar_applies_to_overall_accuracy_not_to_each_class():
    config = EvalParams(min_accuracy=0.90)
    assert _validate(config, OVERALL, 0.937).validation_ok
    # The case from the issue: one class at 0.893 failed a model at 0.937 overall.
    assert _validate(config, CAT, 0.893).validation_ok
    assert not _validate(config, OVERALL, 0.8712).validation_ok


def test_the_per_class_bar_is_opt_in_and_applies_to_every_class_slice():
    config = EvalParams(min_accuracy=0.90, min_class_accuracy=0.95)
    result = _validate(config, CAT, 0.893)
    assert not result.validation_ok
    [failure] = result.metric_validations_per_slice[0].failures
    assert failure.metric_threshold.value_threshold.lower_bound.value == 0.95
    assert _validate(config, CAT, 0.95).validation_ok
    # The overall slice keeps its own bar, not the class bar.
    assert _validate(config, OVERALL, 0.93).validation_ok


def test_no_regression_is_not_a_tfma_change_threshold_but_the_interval_is_computed():
    # TFMA checks a change against its point value only; our Evaluator applies the rule to the
    # change's 95% interval (components/evaluate/noise.py), which TFMA computes by jackknife.
    config = EvalParams(min_accuracy=0.5, max_regression=0.0)
    assert _validate(config, OVERALL, 0.92, change=-0.012).validation_ok
    eval_config = factory.make_eval_config(config)
    assert eval_config.options.compute_confidence_intervals.value
    assert (eval_config.options.confidence_intervals.method
            == tfma.ConfidenceIntervalOptions.JACKKNIFE)
    with_baseline = tfma.utils.update_eval_config_with_defaults(
        eval_config, has_baseline=True, rubber_stamp=True)
    thresholds = tfma.metrics.metric_thresholds_from_metrics_specs(
        with_baseline.metrics_specs, eval_config=with_baseline)
    assert not any(key.is_diff for key in thresholds)


def test_without_a_baseline_only_the_value_thresholds_remain():
    eval_config = tfma.utils.update_eval_config_with_defaults(
        factory.make_eval_config(EvalParams(min_class_accuracy=0.8)), has_baseline=False,
        rubber_stamp=True)
    thresholds = tfma.metrics.metric_thresholds_from_metrics_specs(
        eval_config.metrics_specs, eval_config=eval_config)
    assert [k.is_diff for k in thresholds] == [False]
    [(overall, bar), (per_class, class_bar)] = next(iter(thresholds.values()))
    assert list(overall.feature_keys) == [] and bar.lower_bound.value == 0.90
    assert list(per_class.feature_keys) == ['label_name'] and class_bar.lower_bound.value == 0.8
