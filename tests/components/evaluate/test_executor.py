"""Executor tests of our Evaluator: the stock TFMA Evaluator on real models and Examples.

The models are exported by the trainer's export and classify by brightness
(tests/support/saved_models.py), so each class's accuracy is known: classes a and b all right, class
c 8 of 10 (two of its images are as bright as b's). Overall accuracy is 28/30 = 0.9333.
The blessing records both models' accuracy on the same examples, for the report's history.
"""
import json
import re

import tensorflow_model_analysis as tfma

from core import properties
from components.evaluate import checks
from components.evaluate import executor
from components.evaluate.params import EvalParams

import saved_models

CLASSES = ('a', 'b', 'c')
CENTERS = (0.1, 0.5, 0.9)
BRIGHTNESS = {'a': [0.1] * 10, 'b': [0.5] * 10, 'c': [0.9] * 8 + [0.5] * 2}


def evaluate(tmp_path, config: EvalParams, baseline=None, centers=CENTERS, drift=None):
    return saved_models.evaluate(tmp_path, config, CLASSES, BRIGHTNESS, centers, baseline,
                                 drift=drift)


def _reasons(blessing):
    return json.loads(blessing.get_string_custom_property(properties.BLESSING_REASONS))


def _figures(blessing):
    """(candidate accuracy, served accuracy or None, eval examples) as recorded, rounded."""
    served = (round(blessing.get_float_custom_property(properties.SERVED_ACCURACY), 4)
              if blessing.has_custom_property(properties.SERVED_ACCURACY) else None)
    return (round(blessing.get_float_custom_property(properties.CANDIDATE_ACCURACY), 4), served,
            blessing.get_int_custom_property(properties.EVAL_EXAMPLES))


def _intervals(evaluation):
    """How many of the saved metric values carry a confidence interval."""
    return sum(item.HasField('confidence_interval') for metrics in tfma.load_metrics(
        evaluation.uri) for item in metrics.metric_keys_and_values)


def test_one_class_below_the_bar_is_blessed_by_default(tmp_path):
    calm = saved_models.standard_artifacts.ExampleAnomalies()  # drift within its thresholds
    calm.uri = str(tmp_path / 'calm-drift')
    calm.set_string_custom_property('drift_reasons', '[]')
    blessing, evaluation = evaluate(tmp_path, EvalParams(min_accuracy=0.9), drift=calm)
    assert blessing.get_int_custom_property('blessed') == 1
    assert _reasons(blessing) == []
    assert blessing.get_int_custom_property(properties.COMPARED_VERSION) == -1
    [overall] = checks.load_checks(evaluation.uri)  # the only check: no per-class bar
    assert (overall.slice, overall.kind, overall.threshold, overall.passed) == (
        'overall', 'value', '>= 0.90', True)
    assert round(overall.value, 4) == 0.9333
    assert _intervals(evaluation) == 0  # nothing served: no change to judge, no jackknife
    assert _figures(blessing) == (0.9333, None, 30)  # nothing served: no served figure


def test_one_class_below_the_opt_in_class_bar_is_not_blessed_and_says_which(tmp_path):
    blessing, evaluation = evaluate(tmp_path, EvalParams(min_accuracy=0.9,
                                                         min_class_accuracy=0.9))
    assert blessing.get_int_custom_property('blessed') == 0
    assert _reasons(blessing) == ['label_name=c: sparse_categorical_accuracy 0.8000 < 0.90']
    outcomes = {(c.slice, c.passed) for c in checks.load_checks(evaluation.uri)}
    assert outcomes == {('overall', True), ('label_name=a', True), ('label_name=b', True),
                        ('label_name=c', False)}


def test_a_regression_beyond_noise_against_the_served_model_in_place_names_the_version(
        tmp_path):
    # As ServedModelBaseline records the served model: an empty artifact folder naming
    # serving/<v>/, which TFMA loads in place.
    served = saved_models.exported_model(tmp_path / 'trained', CLASSES, CENTERS)
    version_dir = saved_models.serve(served, tmp_path / 'serving', 7)
    baseline = saved_models.standard_artifacts.Model()
    baseline.uri = str(tmp_path / 'baseline')
    (tmp_path / 'baseline').mkdir()
    baseline.set_int_custom_property('served_version', 7)
    baseline.set_string_custom_property('served_path', version_dir)
    # The candidate's centre for b lies beyond c's: b's images (0.5) are nearest to a (0.3).
    # It gets 18 of 30 right (0.6): above the bar of 0.5, a third below the served model, on
    # every bucket of the jackknife: its whole 95% interval is below 0.
    blessing, evaluation = evaluate(tmp_path, EvalParams(min_accuracy=0.5),
                                    baseline=baseline, centers=(0.3, 0.95, 0.9))
    assert blessing.get_int_custom_property('blessed') == 0
    assert _intervals(evaluation) > 0
    assert (tmp_path / 'blessing' / 'NOT_BLESSED').is_file()
    [reason] = _reasons(blessing)
    match = re.fullmatch(r'sparse_categorical_accuracy change vs served version 7 -0\.3333, '
                         r'worse beyond noise \(95% interval (\S+)\.\.(\S+), all below 0\.00\)',
                         reason)
    assert match and float(match.group(1)) <= float(match.group(2)) < 0
    assert blessing.get_string_custom_property(properties.REGRESSION_CHECK) == reason
    assert blessing.get_int_custom_property(properties.COMPARED_VERSION) == 7
    # TFMA itself checks the absolute bar only: the change is judged on its interval here.
    assert [c.kind for c in checks.load_checks(evaluation.uri)] == ['value']
    # Compared in place: the blessing names the served folder, the baseline holds no copy.
    assert blessing.get_string_custom_property('baseline_model') == version_dir
    assert list((tmp_path / 'baseline').iterdir()) == []
    # Both models on the same 30 examples: the served one 28 right, the candidate 18.
    assert _figures(blessing) == (0.6, 0.9333, 30)


def test_one_example_worse_on_30_is_within_noise_and_blessed_with_the_figures(tmp_path):
    served = saved_models.exported_model(tmp_path / 'served', CLASSES, CENTERS)
    served.set_int_custom_property('served_version', 2)
    # One image of a (0.28) is nearer a's centre for the served model (0.1) and nearer b's for
    # the candidate (0.45): 29 of 30 against 30 of 30, a change of -0.0333 on one example.
    brightness = {'a': [0.1] * 9 + [0.28], 'b': [0.5] * 10, 'c': [0.9] * 10}
    blessing, _ = saved_models.evaluate(tmp_path, EvalParams(min_accuracy=0.5), CLASSES,
                                        brightness, (0.1, 0.45, 0.9), served)
    assert blessing.get_int_custom_property('blessed') == 1
    assert _reasons(blessing) == []
    text = blessing.get_string_custom_property(properties.REGRESSION_CHECK)
    match = re.fullmatch(r'sparse_categorical_accuracy change vs served version 2 -0\.0333, '
                         r'within noise \(95% interval (\S+)\.\.(\S+)\)', text)
    assert match and float(match.group(1)) < -0.0333 and float(match.group(2)) > 0
    assert _figures(blessing) == (0.9667, 1.0, 30)  # 29 and 30 of the same 30


def test_drift_beyond_a_threshold_refuses_the_blessing_with_its_reason(tmp_path):
    drifted = saved_models.standard_artifacts.ExampleAnomalies()
    drifted.uri = str(tmp_path / 'drift')
    drifted.set_string_custom_property('drift_reasons', json.dumps(
        ['label L∞ 0.59 > 0.30 vs the data of served version 1']))
    blessing, _ = evaluate(tmp_path / 'drifted', EvalParams(min_accuracy=0.9), drift=drifted)
    assert blessing.get_int_custom_property('blessed') == 0  # TFMA alone would bless it
    assert _reasons(blessing) == ['label L∞ 0.59 > 0.30 vs the data of served version 1']
    assert (tmp_path / 'drifted' / 'blessing' / 'NOT_BLESSED').is_file()
    assert not (tmp_path / 'drifted' / 'blessing' / 'BLESSED').exists()
    # Drift measured within its thresholds refuses nothing: the first test's calm drift input.


def test_an_incompatible_served_model_is_not_compared_and_the_blessing_says_so(tmp_path):
    # As ServedModelBaseline records a served model for other classes: nothing to compare.
    served = saved_models.standard_artifacts.Model()
    served.uri = str(tmp_path / 'incompatible-baseline')
    served.set_int_custom_property('served_version', 1)
    served.set_string_custom_property('incompatible_reason', 'served model predicts classes '
                                      "['0', '1']; this model predicts ['a', 'b', 'c']")
    blessing, evaluation = evaluate(tmp_path, EvalParams(min_accuracy=0.9), baseline=served)
    assert blessing.get_int_custom_property('blessed') == 1
    assert blessing.get_int_custom_property(properties.COMPARED_VERSION) == -1
    assert blessing.get_string_custom_property(properties.NOT_COMPARED) == (
        "served version 1: served model predicts classes ['0', '1']; "
        "this model predicts ['a', 'b', 'c']")
    assert [c.kind for c in checks.load_checks(evaluation.uri)] == ['value']
    assert _figures(blessing) == (0.9333, None, 30)  # not compared: no served figure


def test_the_eval_splits_of_every_span_in_the_window_are_evaluated(tmp_path):
    from core import window
    older = saved_models.eval_examples(tmp_path / 'span1', {n: [c] * 10 for n, c in zip(
        CLASSES, CENTERS)})  # span 1: all 30 right
    newest = saved_models.eval_examples(tmp_path / 'span2', BRIGHTNESS)  # span 2: 28 of 30
    newest.set_string_custom_property(window.PROPERTY, window.to_json([
        window.SpanEntry(span=s, uri=a.uri, fingerprint='', num_train=0, num_eval=30)
        for s, a in ((1, older), (2, newest))]))
    assert [a.uri for a in executor.window_examples([newest])] == [older.uri, newest.uri]
    blessing, evaluation = saved_models.evaluate(tmp_path, EvalParams(min_accuracy=0.9), CLASSES,
                                          BRIGHTNESS, CENTERS, examples=newest)
    [overall] = checks.load_checks(evaluation.uri)
    assert round(overall.value, 4) == round(58 / 60, 4)  # both spans, not span 2's 0.9333
    assert _figures(blessing) == (round(58 / 60, 4), None, 60)  # the window's examples
