"""The TrainResult codec (training/result.py): metrics.json and a Model's custom properties,
written and read back, and what older versions recorded still reads."""
import dataclasses
import json
import math
import os

import pytest

from training.result import OLDER_NAMES, TrainResult

FIXTURES = os.path.join(os.path.dirname(__file__), '..', 'fixtures')


def _fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def _values(artifact_json):
    """name -> value of an Artifact's custom properties in ML Metadata's JSON form, as
    pipeline.runs.summary.custom_properties hands them over (an int64 arrives as an int)."""
    kinds = {'doubleValue': float, 'intValue': int, 'stringValue': str}
    return {name: kinds[kind](raw) for name, value in artifact_json['customProperties'].items()
            for kind, raw in value.items()}


def test_metrics_json_reads_into_fields_and_writes_back_the_same_file():
    written = _fixture('metrics_abc4031.json')   # what train_and_export wrote at abc4031
    result = TrainResult.from_metrics(written)
    assert (result.steps_run, result.epochs_run, result.best_epoch) == (3, 3.0, 3)
    assert result.epoch_seconds == (2.1, 0.3, 0.2) and result.flip is False
    assert result.xla is False and result.num_replicas == 1 and result.input_sharding == 'DATA'
    again = result.to_metrics()
    assert json.dumps(again) == json.dumps(written)  # same keys, order, values and types
    assert isinstance(again['steps_run'], int) and isinstance(again['flip'], int)


def test_properties_are_doubles_but_flip_and_text_and_read_back_equal():
    result = TrainResult.from_metrics(_fixture('metrics_abc4031.json'))
    recorded = result.to_properties()
    assert recorded['steps_run'] == 3.0 and type(recorded['steps_run']) is float
    assert recorded['flip'] == 0 and type(recorded['flip']) is int
    assert recorded['epoch_seconds'] == '[2.1, 0.3, 0.2]'
    assert TrainResult.from_properties(recorded) == result


def test_a_non_finite_number_is_text_in_properties_and_a_float_again_when_read():
    result = TrainResult(eval_loss=math.inf, train_loss=math.nan, steps_run=4)
    recorded = result.to_properties()
    assert (recorded['eval_loss'], recorded['train_loss']) == ('inf', 'nan')
    read = TrainResult.from_properties(recorded)
    assert read.eval_loss == math.inf and math.isnan(read.train_loss) and read.steps_run == 4
    assert math.isnan(TrainResult.from_metrics(json.loads(json.dumps(
        result.to_metrics()))).train_loss)  # JSON's own NaN


def test_what_was_not_recorded_is_none_and_is_not_written():
    result = TrainResult(steps_run=12, stop_reason='fixed length: 12 steps')
    assert result.to_metrics() == {'steps_run': 12, 'stop_reason': 'fixed length: 12 steps'}
    assert set(result.to_properties()) == {'steps_run', 'stop_reason'}
    assert TrainResult.from_metrics({}) == TrainResult()


def test_a_model_recorded_by_an_older_version_reads():
    # The Model's properties as ML Metadata hands them back: those the executor at abc4031
    # recorded, less what came later (flips, the reasons, the peak) and with the older names.
    values = _values(_fixture('model_recorded_older.json'))
    assert 'replicas' in values and 'num_replicas' not in values and 'flip' not in values
    result = TrainResult.from_properties(values)
    assert result.num_replicas == 1               # recorded as `replicas`
    assert result.flip is None and result.precision_reason is None  # not recorded then
    assert math.isnan(result.eval_loss)           # a diverged loss, recorded as text
    assert (result.steps_run, result.epochs_run, result.held_out_examples) == (3, 3.0, 30)
    assert result.epoch_seconds == (2.1, 0.3, 0.2) and result.mixed_precision == 'float32'
    assert result.stop_reason == 'ran the maximum of 3 epochs (best 0.3667 at epoch 3)'
    # The Model's other properties (its input, window, ...) are not the result's.
    assert 'input_height' in values and not hasattr(result, 'input_height')


def test_the_current_name_wins_over_an_older_one():
    for old, new in OLDER_NAMES.items():
        assert new in {f.name for f in dataclasses.fields(TrainResult)}
        assert getattr(TrainResult.from_properties({old: 2.0}), new) == 2
        assert getattr(TrainResult.from_properties({old: 2.0, new: 4.0}), new) == 4
        assert old not in TrainResult.from_properties({old: 2.0}).to_properties()


def test_the_current_model_recorded_reads_to_the_metrics_it_was_recorded_from():
    values = _values(_fixture('model_recorded_abc4031.json'))
    assert TrainResult.from_properties(values) == TrainResult.from_metrics(
        _fixture('metrics_abc4031.json'))


@pytest.mark.parametrize('name, value', [('steps_run', 'x'), ('epoch_seconds', '[oops')])
def test_a_value_of_the_wrong_kind_is_refused_not_guessed(name, value):
    with pytest.raises(ValueError):
        TrainResult.from_properties({name: value})
