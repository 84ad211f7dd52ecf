"""Executor tests of our Pusher, beside the stock TFX Pusher executor on the same artifacts.

The comparison is the measurement behind "the stock Pusher pushes the same model again": both
executors get the same blessed model twice, as they do when a rerun misses the cache. The
serving guard is tested on real exported models (tests/support/saved_models.py), since it reads
them.
"""
import json
import os
import time

import pytest
from tfx.components.pusher import executor as stock_executor
from tfx.proto import pusher_pb2
from tfx.types import standard_artifacts
from tfx.types import standard_component_specs as specs
from tfx.utils import proto_utils

from core import properties, versions
from components.push import executor as push_executor

import saved_models


def _artifacts(tmp_path, blessed=True, tag='a'):
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / f'model-{tag}')
    serving = os.path.join(model.uri, 'Format-Serving')
    os.makedirs(os.path.join(serving, 'variables'))
    with open(os.path.join(serving, 'saved_model.pb'), 'w') as handle:
        handle.write(f'graph {tag}')
    with open(os.path.join(serving, 'variables', 'variables.data-00000-of-00001'), 'wb') as handle:
        handle.write(os.urandom(64 * 1024))
    blessing = standard_artifacts.ModelBlessing()
    blessing.uri = str(tmp_path / f'blessing-{tag}')
    blessing.set_int_custom_property('blessed', 1 if blessed else 0)
    return {specs.MODEL_KEY: [model], specs.MODEL_BLESSING_KEY: [blessing]}


def _push(executor_class, inputs, serving_dir, out_dir, keep=5):
    pushed = standard_artifacts.PushedModel()
    pushed.uri = str(out_dir)
    destination = pusher_pb2.PushDestination(
        filesystem=pusher_pb2.PushDestination.Filesystem(base_directory=str(serving_dir)))
    executor_class().Do(inputs, {specs.PUSHED_MODEL_KEY: [pushed]}, {
        specs.PUSH_DESTINATION_KEY: proto_utils.proto_to_json(destination),
        specs.CUSTOM_CONFIG_KEY: json.dumps({'keep_versions': keep})})
    return pushed


def _size(folder):
    return sum(os.path.getsize(os.path.join(root, f))
               for root, _, files in os.walk(folder) for f in files)


def test_blessed_model_gets_version_one_recorded_on_the_artifact(tmp_path):
    pushed = _push(push_executor.Executor, _artifacts(tmp_path), tmp_path / 'serving',
                   tmp_path / 'pushed')
    assert pushed.get_int_custom_property('pushed') == 1
    assert pushed.get_string_custom_property('pushed_version') == '1'
    destination = pushed.get_string_custom_property('pushed_destination')
    assert destination == str(tmp_path / 'serving' / '1')
    assert pushed.get_int_custom_property(versions.REUSED_PROPERTY) == 0
    assert sorted(os.listdir(tmp_path / 'serving')) == ['1', 'models.config']
    assert not os.path.exists(tmp_path / 'pushed')  # no archive copy (the stock one makes it)


def test_unblessed_model_is_not_pushed(tmp_path):
    pushed = _push(push_executor.Executor, _artifacts(tmp_path, blessed=False),
                   tmp_path / 'serving', tmp_path / 'pushed')
    assert pushed.get_int_custom_property('pushed') == 0
    assert not os.path.exists(tmp_path / 'serving')


def test_same_blessed_model_twice_stock_pushes_two_copies_ours_one(tmp_path):
    inputs = _artifacts(tmp_path)
    stock_dir, our_dir = tmp_path / 'stock', tmp_path / 'ours'
    for i in range(2):
        _push(stock_executor.Executor, inputs, stock_dir, tmp_path / f'stock-pushed-{i}')
        second = _push(push_executor.Executor, inputs, our_dir, tmp_path / f'our-pushed-{i}')
        time.sleep(1.1)  # the stock executor's versions are Unix seconds
    stock_versions = sorted(os.listdir(stock_dir))
    assert len(stock_versions) == 2  # measured: the stock Pusher serves the same model twice
    assert _size(stock_dir) == 2 * _size(os.path.join(stock_dir, stock_versions[0]))
    assert sorted(os.listdir(our_dir)) == ['1', 'models.config']
    assert second.get_string_custom_property('pushed_version') == '1'
    assert second.get_int_custom_property(versions.REUSED_PROPERTY) == 1


def test_a_new_model_gets_the_next_version_and_retention_applies(tmp_path):
    serving = tmp_path / 'serving'
    for i, tag in enumerate('abc'):
        pushed = _push(push_executor.Executor, _artifacts(tmp_path, tag=tag), serving,
                       tmp_path / f'pushed-{i}', keep=2)
    assert pushed.get_string_custom_property('pushed_version') == '3'
    assert versions.list_versions(str(serving)) == [2, 3]


def test_a_non_filesystem_destination_is_refused_with_a_clear_error(tmp_path):
    pushed = standard_artifacts.PushedModel()
    pushed.uri = str(tmp_path / 'out')
    destination = pusher_pb2.PushDestination()  # no filesystem destination set
    with pytest.raises(ValueError, match='give a filesystem push destination, got None'):
        push_executor.Executor().Do(_artifacts(tmp_path), {specs.PUSHED_MODEL_KEY: [pushed]}, {
            specs.PUSH_DESTINATION_KEY: proto_utils.proto_to_json(destination),
            specs.CUSTOM_CONFIG_KEY: 'null'})
    assert not os.path.exists(tmp_path / 'serving')


def _snapshot(folder):
    """Every file under folder with its bytes: 'unchanged' means this is equal afterwards."""
    return {os.path.relpath(os.path.join(root, f), folder):
            open(os.path.join(root, f), 'rb').read()
            for root, _, files in os.walk(folder) for f in files}


def _real(tmp_path, tag, class_names, blessed=True, image_shape=(8, 8, 1), reasons=None,
          centers=None):
    """Pusher inputs around a real exported model (tests/support/saved_models.py)."""
    model = saved_models.exported_model(tmp_path / f'model-{tag}', class_names, centers,
                                        image_shape=image_shape)
    blessing = standard_artifacts.ModelBlessing()
    blessing.uri = str(tmp_path / f'blessing-{tag}')
    blessing.set_int_custom_property('blessed', 1 if blessed else 0)
    if reasons is not None:
        blessing.set_string_custom_property(properties.BLESSING_REASONS, json.dumps(reasons))
    return {specs.MODEL_KEY: [model], specs.MODEL_BLESSING_KEY: [blessing]}


def test_a_blessed_model_for_other_classes_is_not_pushed_over_the_served_one(tmp_path):
    serving = tmp_path / 'serving'
    _push(push_executor.Executor, _real(tmp_path, 'digits', [str(d) for d in range(10)]),
          serving, tmp_path / 'pushed-digits')
    before = _snapshot(serving)
    pushed = _push(push_executor.Executor, _real(tmp_path, 'four', ['a', 'b', 'c', 'd']),
                   serving, tmp_path / 'pushed-four')
    assert pushed.get_int_custom_property('pushed') == 0
    assert pushed.get_int_custom_property(versions.INCOMPATIBLE_PROPERTY) == 1
    assert pushed.get_string_custom_property(versions.NOT_PUSHED_REASON_PROPERTY) == (
        "served model predicts classes ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']; "
        "this model predicts ['a', 'b', 'c', 'd']")
    assert _snapshot(serving) == before and versions.list_versions(str(serving)) == [1]


def test_a_model_with_another_input_is_not_pushed_even_with_the_same_classes(tmp_path):
    serving = tmp_path / 'serving'
    _push(push_executor.Executor, _real(tmp_path, 'gray', ['a', 'b']), serving, tmp_path / 'p1')
    pushed = _push(push_executor.Executor,
                   _real(tmp_path, 'rgb', ['a', 'b'], image_shape=(32, 32, 3)), serving,
                   tmp_path / 'p2')
    assert pushed.get_int_custom_property('pushed') == 0
    assert 'served model takes 8×8×1 images; this model takes 32×32×3 images' == (
        pushed.get_string_custom_property(versions.NOT_PUSHED_REASON_PROPERTY))
    assert versions.list_versions(str(serving)) == [1]


def test_a_compatible_model_is_pushed_as_the_next_version(tmp_path):
    serving = tmp_path / 'serving'
    _push(push_executor.Executor, _real(tmp_path, 'one', ['a', 'b']), serving, tmp_path / 'p1')
    # Another model (other weights) for the same classes and input.
    pushed = _push(push_executor.Executor, _real(tmp_path, 'two', ['a', 'b'], centers=(0.2, 0.8)),
                   serving, tmp_path / 'p2')
    assert pushed.get_string_custom_property('pushed_version') == '2'
    assert not pushed.has_custom_property(versions.NOT_PUSHED_REASON_PROPERTY)


def test_an_unblessed_model_records_the_evaluators_reasons(tmp_path):
    reasons = ['sparse_categorical_accuracy 0.8712 < 0.90']
    pushed = _push(push_executor.Executor,
                   _real(tmp_path, 'weak', ['a', 'b'], blessed=False, reasons=reasons),
                   tmp_path / 'serving', tmp_path / 'pushed')
    assert pushed.get_int_custom_property('pushed') == 0
    assert pushed.get_string_custom_property(versions.NOT_PUSHED_REASON_PROPERTY) == (
        'not blessed: sparse_categorical_accuracy 0.8712 < 0.90')
    assert pushed.get_int_custom_property(versions.INCOMPATIBLE_PROPERTY) == 0
    assert not os.path.exists(tmp_path / 'serving')


def test_a_push_keeps_no_second_copy_in_the_pushed_model_folder(tmp_path):
    (tmp_path / 'pushed').mkdir()  # TFX makes the output folder before the executor runs
    pushed = _push(push_executor.Executor, _artifacts(tmp_path), tmp_path / 'serving',
                   tmp_path / 'pushed')
    assert list((tmp_path / 'pushed').iterdir()) == []
    destination = pushed.get_string_custom_property('pushed_destination')
    assert destination == str(tmp_path / 'serving' / '1')
    assert _size(destination) == _size(tmp_path / 'model-a' / 'Format-Serving')
