"""The noise-aware no-regression rule on hand-made numbers (components/evaluate/noise.py)."""
from components.evaluate import noise


def test_two_examples_worse_on_204_within_the_interval_is_blessed_and_says_so():
    # The run 2: -0.0098 (2 of 204) was refused by "change >= 0.00".
    passed, text = noise.judge(noise.Change(-0.0098, -0.025, 0.006), 0.0, 1)
    assert passed
    assert text == ('sparse_categorical_accuracy change vs served version 1 -0.0098, within '
                    'noise (95% interval -0.0250..+0.0060)')


def test_worse_beyond_noise_is_refused_with_the_interval():
    passed, text = noise.judge(noise.Change(-0.06, -0.09, -0.03), 0.0, 3)
    assert not passed
    assert text == ('sparse_categorical_accuracy change vs served version 3 -0.0600, worse '
                    'beyond noise (95% interval -0.0900..-0.0300, all below 0.00)')


def test_the_allowed_regression_moves_the_bar_the_interval_must_reach():
    change = noise.Change(-0.06, -0.09, -0.03)
    assert noise.judge(change, 0.05, 3)[0]          # reaches -0.05
    assert not noise.judge(change, 0.02, 3)[0]      # all below -0.02
    assert noise.judge(change, 0.02, 3)[1].endswith('all below -0.02)')


def test_no_worse_is_blessed_and_an_identical_model_too():
    assert noise.judge(noise.Change(0.012, -0.004, 0.028), 0.0, 1) == (
        True, 'sparse_categorical_accuracy change vs served version 1 +0.0120 '
              '(95% interval -0.0040..+0.0280)')
    assert noise.judge(noise.Change(0.0, 0.0, 0.0), 0.0, 1)[0]  # a rerun: same predictions


def test_without_an_interval_the_point_value_decides():
    assert noise.judge(noise.Change(-0.0098), 0.0, 1) == (
        False, 'sparse_categorical_accuracy change vs served version 1 -0.0098 < 0.00 '
               '(no confidence interval computed)')
    assert noise.judge(noise.Change(-0.0098, float('nan'), float('nan')), 0.01, 1)[0]


def test_without_intervals_switches_off_the_jackknife_and_keeps_the_rest():
    from google.protobuf import json_format
    import tensorflow_model_analysis as tfma
    from pipeline.definition import factory
    from components.evaluate.params import EvalParams
    given = factory.make_eval_config(EvalParams(min_accuracy=0.7))
    assert given.options.compute_confidence_intervals.value
    result = json_format.Parse(noise.without_intervals(json_format.MessageToJson(given)),
                               tfma.EvalConfig())
    assert not result.options.compute_confidence_intervals.value
    result.options.compute_confidence_intervals.value = True
    assert result == given
