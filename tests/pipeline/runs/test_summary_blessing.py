"""Unit tests of the summary's blessed and pushed lines, on ML Metadata artifacts as our
Evaluator and Pusher record them."""
import json

from core import properties, versions
from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text

from helpers import mlmd_artifact

DIGITS_VS_FOUR = ("served model predicts classes ['0', '1', '2']; "
                  "this model predicts ['a', 'b', 'c', 'd']")


_artifact = mlmd_artifact


def _blessing(blessed, reasons=(), version=-1, not_compared=None):
    custom = {'blessed': int(blessed), properties.BLESSING_REASONS: json.dumps(list(reasons)),
              properties.COMPARED_VERSION: version}
    if not_compared:
        custom[properties.NOT_COMPARED] = not_compared
    return _artifact(**custom)


def _summary(blessing, pushed):
    return summary_lib.RunSummary(run_id='r', states={'Evaluator': 'COMPLETE'},
                                  outputs={'ModelBlessing': [blessing], 'PushedModel': [pushed]})


def test_not_blessed_says_exactly_why_and_the_push_repeats_it():
    reason = 'sparse_categorical_accuracy 0.8712 < 0.90'
    pushed = _artifact(pushed=0, **{versions.NOT_PUSHED_REASON_PROPERTY: f'not blessed: {reason}',
                                    versions.INCOMPATIBLE_PROPERTY: 0})
    text = summary_text.format_summary(_summary(_blessing(False, [reason]), pushed))
    assert text.splitlines()[-2:] == [
        '  blessed: no (sparse_categorical_accuracy 0.8712 < 0.90)',
        '  pushed: no (not blessed: sparse_categorical_accuracy 0.8712 < 0.90)']


def test_several_failed_checks_are_all_listed():
    reasons = ['label_name=cat: sparse_categorical_accuracy 0.8930 < 0.95',
               'sparse_categorical_accuracy change vs served version 3 -0.0120 < 0.00']
    assert summary_text.blessing_text(_blessing(False, reasons, version=3)) == (
        'no (label_name=cat: sparse_categorical_accuracy 0.8930 < 0.95; '
        'sparse_categorical_accuracy change vs served version 3 -0.0120 < 0.00)')


def test_an_incompatible_served_model_is_named_in_both_lines_with_the_fix():
    blessing = _blessing(True, not_compared=f'served version 1: {DIGITS_VS_FOUR}')
    pushed = _artifact(pushed=0, **{versions.NOT_PUSHED_REASON_PROPERTY: DIGITS_VS_FOUR,
                                    versions.INCOMPATIBLE_PROPERTY: 1})
    assert summary_text.blessing_text(blessing) == (
        f'yes (not compared with served version 1: {DIGITS_VS_FOUR})')
    assert summary_text.pushed_text(pushed) == f'no ({DIGITS_VS_FOUR}; use another --output)'
    assert summary_text.comparison_text(blessing).startswith('Not compared with served version 1')


def test_a_blessed_and_pushed_model_reads_as_before():
    pushed = _artifact(pushed=1, pushed_version='2', pushed_destination='/s/2',
                       **{versions.REUSED_PROPERTY: 0})
    assert summary_text.blessing_text(_blessing(True, version=1)) == 'yes'
    assert summary_text.pushed_text(pushed) == 'version 2 at /s/2'
    assert summary_text.comparison_text(_blessing(True, version=1)) == (
        'Compared with served version 1.')
    assert summary_text.comparison_text(_blessing(True)).startswith('Nothing was served yet')


def test_artifacts_recorded_before_reasons_existed_still_read():
    assert summary_text.blessing_text(_artifact(blessed=0)) == 'no'
    assert summary_text.pushed_text(_artifact(pushed=0)) == 'no (not blessed)'


def test_the_drift_line_and_the_no_regression_figures_are_stated():
    drift = _artifact(drift_text='drift: label L∞ 0.59 > 0.30 vs the data of served version 1',
                      drift_values=json.dumps([{'feature': 'label', 'measure': 'L-infinity',
                                                'value': 0.59, 'threshold': 0.3,
                                                'exceeded': True}]))
    validator = _artifact()  # ExampleValidator's anomalies: the same type, no drift text
    reason = 'label L∞ 0.59 > 0.30 vs the data of served version 1'
    blessing = _blessing(False, [reason], version=1)
    blessing.custom_properties[properties.REGRESSION_CHECK].string_value = (
        'sparse_categorical_accuracy change vs served version 1 -0.0098, within noise '
        '(95% interval -0.0250..+0.0060)')
    pushed = _artifact(pushed=0, **{versions.NOT_PUSHED_REASON_PROPERTY: f'not blessed: {reason}',
                                    versions.INCOMPATIBLE_PROPERTY: 0})
    summary = summary_lib.RunSummary(
        run_id='r', states={'Evaluator': 'COMPLETE'},
        outputs={'ExampleAnomalies': [validator, drift], 'ModelBlessing': [blessing],
                 'PushedModel': [pushed]})
    assert summary_text.format_summary(summary).splitlines()[-4:] == [
        '  drift: label L∞ 0.59 > 0.30 vs the data of served version 1',
        '  no regression: sparse_categorical_accuracy change vs served version 1 -0.0098, '
        'within noise (95% interval -0.0250..+0.0060)',
        '  blessed: no (label L∞ 0.59 > 0.30 vs the data of served version 1)',
        '  pushed: no (not blessed: label L∞ 0.59 > 0.30 vs the data of served version 1)']
    assert summary_lib.drift_values(summary)[0]['value'] == 0.59
