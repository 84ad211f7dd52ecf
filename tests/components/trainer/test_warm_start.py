"""Unit tests of warm start from the served model: weights copied, mismatches train from scratch."""
import os

import keras
import numpy as np
import pytest

from core import inputs, model_signature
from components.trainer import executor
from training import export, warm_start
from models import resnet


def _serve(serving_dir, model, version=1):
    export.export_serving_model(model, os.path.join(serving_dir, str(version)), (8, 8, 1),
                                [str(i) for i in range(model.output_shape[-1])])


def _model(classes, seed):
    keras.utils.set_random_seed(seed)
    return resnet.build_model((8, 8, 1), classes)


@pytest.fixture(scope='module')
def served_three(tmp_path_factory):
    """_model(3, seed=1) served as version 1: exported once for the two tests that only read
    it (warm_start reads the folder and changes nothing in it)."""
    serving_dir = str(tmp_path_factory.mktemp('serving'))
    _serve(serving_dir, _model(3, seed=1))
    return os.path.join(serving_dir, '1')


def test_new_model_starts_from_the_served_weights(tmp_path):
    served = _model(3, seed=1)
    served.variables[0].assign(served.variables[0] + 0.5)  # distinct from any fresh init
    _serve(str(tmp_path), served, version=1)
    _serve(str(tmp_path), _model(3, seed=2), version=0)  # older: must not be the one used
    fresh = _model(3, seed=3)
    assert not np.allclose(fresh.variables[0].numpy(), served.variables[0].numpy())
    path, version = executor.warm_start_source(str(tmp_path))  # the newest complete version
    assert (path, version) == (os.path.join(str(tmp_path), '1'), 1)
    assert warm_start.warm_start(fresh, path)
    for a, b in zip(fresh.variables, served.variables):  # BatchNorm statistics included
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_changed_architecture_trains_from_scratch(served_three):
    fresh = _model(4, seed=3)  # one more class: the last layer's shape differs
    before = [v.numpy().copy() for v in fresh.variables]
    assert not warm_start.warm_start(fresh, served_three)
    for a, b in zip(before, fresh.variables):
        np.testing.assert_array_equal(a, b.numpy())


def test_nothing_served_yet(tmp_path):
    assert executor.warm_start_source(str(tmp_path / 'serving')) == ('', -1)
    assert executor.warm_start_source('') == ('', -1)  # no warm start asked


def test_a_served_model_for_other_classes_is_not_used_even_when_shapes_match(served_three):
    # served_three's classes: '0', '1', '2'.
    fresh = _model(3, seed=3)
    before = [v.numpy().copy() for v in fresh.variables]
    other_task = model_signature.describe(['cat', 'dog', 'fox'], (8, 8, 1), inputs.InputSpec())
    assert not warm_start.warm_start(fresh, served_three, other_task)
    for a, b in zip(before, fresh.variables):
        np.testing.assert_array_equal(a, b.numpy())
    same_task = model_signature.describe(['0', '1', '2'], (8, 8, 1), inputs.InputSpec())
    assert warm_start.warm_start(fresh, served_three, same_task)
