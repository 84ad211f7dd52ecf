"""End-to-end: the serving guard (marked e2e).

The digits 0, 1, 2 are served (the smoke pipeline, version 1). Then `runner.py` trains four
other digit classes into the same output, as a user with another label set would: that model
is evaluated without comparing it to the served one, is not pushed, the served folder keeps the
same versions with the same bytes, the run exits 0 and its summary says why nothing was pushed.
"""
import os
import sys

import pytest

from pipeline import config as config_lib
from pipeline import summary as summary_lib
from pipeline import summary_text

from helpers import copy_digits, run_command, run_pipeline, smoke_sample_config

pytestmark = pytest.mark.e2e

SERVED = "['0', '1', '2']"
OTHER = "['3', '4', '5', '6']"


def _snapshot(folder):
    return {os.path.relpath(os.path.join(root, f), folder):
            open(os.path.join(root, f), 'rb').read()
            for root, _, files in os.walk(folder) for f in files}


@pytest.fixture(scope='module')
def guarded(tmp_path_factory):
    base = tmp_path_factory.mktemp('guard')
    cfg = smoke_sample_config(str(base))
    first = run_pipeline(cfg)
    served = _snapshot(cfg.serving_dir)
    other = copy_digits(str(base / 'other'), classes=('3', '4', '5', '6'), per_class=30)
    result = run_command(
        [sys.executable, 'runner.py', '--local', '--config', 'smoke', '--data', other,
         '--output', cfg.output_dir, '--schema', config_lib.DIGITS_SCHEMA])
    second = summary_lib.read_latest_run(cfg.metadata_path, cfg.name)
    return cfg, first, served, result, second


def test_the_digits_were_served_first(guarded):
    cfg, first, served, _, _ = guarded
    assert first.outputs['PushedModel'][0].custom_properties['pushed'].int_value == 1
    assert sorted(os.listdir(cfg.serving_dir)) == ['1'] and '1/saved_model.pb' in served


def test_the_other_label_set_is_not_pushed_and_the_served_folder_is_unchanged(guarded):
    cfg, _, served, result, second = guarded
    assert result.returncode == 0, result.stderr[-3000:]
    assert second.states['Pusher'] == 'COMPLETE'
    [pushed] = second.outputs['PushedModel']
    assert pushed.custom_properties['pushed'].int_value == 0
    assert sorted(os.listdir(cfg.serving_dir)) == ['1']  # no hidden staging folder either
    assert _snapshot(cfg.serving_dir) == served


def test_the_summary_says_why_nothing_was_pushed(guarded):
    _, _, _, result, second = guarded
    reason = f'served model predicts classes {SERVED}; this model predicts {OTHER}'
    expected = f'  pushed: no ({reason}; use another --output)'
    assert expected in result.stdout.splitlines()
    assert summary_text.format_summary(second).splitlines()[-1] == expected
    blessed = [line for line in result.stdout.splitlines() if line.startswith('  blessed: ')]
    assert blessed == [f'  blessed: yes (not compared with served version 1: {reason})']


def test_the_two_models_were_never_compared(guarded):
    _, _, _, _, second = guarded
    baseline = second.baseline_model()
    assert baseline.custom_properties['served_version'].int_value == 1
    assert OTHER in baseline.custom_properties['incompatible_reason'].string_value
    assert not os.path.exists(os.path.join(baseline.uri, 'Format-Serving'))
    [blessing] = second.outputs['ModelBlessing']
    assert 'baseline_model' not in blessing.custom_properties  # the stock Evaluator saw none
    assert blessing.custom_properties['compared_version'].int_value == -1
