"""End-to-end: the serving guard (marked e2e).

The digits 0, 1, 2 are served (the smoke pipeline, version 1). Then `runner.py` trains four
other digit classes into the same output, as a user with another label set would: that model
is evaluated without comparing it to the served one, is not pushed, the served folder keeps the
same versions with the same bytes, the run exits 0 and its summary says why nothing was pushed.
"""
import os

import pytest

from pipeline.runs import summary_text

pytestmark = pytest.mark.e2e

SERVED = "['0', '1', '2']"
OTHER = "['3', '4', '5', '6']"


@pytest.fixture(scope='module')
def guarded(served_digits):
    """The shared smoke run (conftest.py, served_digits), then `runner.py --config smoke` on four
    other digit classes into the same output, and what the serving folder held before and after
    it (recorded then: a later test retrains into the shared output)."""
    shared = served_digits
    return shared, shared.first, shared.guard_run, shared.guarded


def test_the_digits_were_served_first(guarded):
    shared, first, _, _ = guarded
    assert first.outputs['PushedModel'][0].custom_properties['pushed'].int_value == 1
    assert shared.served_after_first == ['1']
    assert '1/saved_model.pb' in shared.served_files_after_first


def test_the_other_label_set_is_not_pushed_and_the_served_folder_is_unchanged(guarded):
    shared, _, result, second = guarded
    assert result.returncode == 0, result.stderr[-3000:]
    assert second.states['Pusher'] == 'COMPLETE'
    [pushed] = second.outputs['PushedModel']
    assert pushed.custom_properties['pushed'].int_value == 0
    assert shared.served_after_guard == ['1']  # no hidden staging folder either
    assert shared.served_files_after_guard == shared.served_files_before_guard


def test_the_summary_says_why_nothing_was_pushed(guarded):
    _, _, result, second = guarded
    reason = f'served model predicts classes {SERVED}; this model predicts {OTHER}'
    expected = f'  pushed: no ({reason}; use another --output)'
    assert expected in result.stdout.splitlines()
    assert summary_text.format_summary(second).splitlines()[-1] == expected
    blessed = [line for line in result.stdout.splitlines() if line.startswith('  blessed: ')]
    assert blessed == [f'  blessed: yes (not compared with served version 1: {reason})']


def test_the_two_models_were_never_compared(guarded):
    _, _, _, second = guarded
    baseline = second.baseline_model()
    assert baseline.custom_properties['served_version'].int_value == 1
    assert OTHER in baseline.custom_properties['incompatible_reason'].string_value
    assert not os.path.exists(os.path.join(baseline.uri, 'Format-Serving'))
    [blessing] = second.outputs['ModelBlessing']
    assert 'baseline_model' not in blessing.custom_properties  # the stock Evaluator saw none
    assert blessing.custom_properties['compared_version'].int_value == -1
