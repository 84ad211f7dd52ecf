"""The frozen-backbone warm-up: only the head trains while frozen, everything after unfreezing."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from components.trainer import loop, steps as steps_lib


def _model(with_backbone=True):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 1))
    inner = keras.Input((8, 8, 1))
    features = keras.layers.GlobalAveragePooling2D()(keras.layers.BatchNormalization()(
        keras.layers.Conv2D(4, 3, padding='same')(inner)))
    backbone = keras.Model(inner, features, name='backbone' if with_backbone else 'features')
    logits = keras.layers.Dense(3, dtype='float32', name='logits')(backbone(inputs))
    return keras.Model(inputs, logits)


def _steps(model, accumulation):
    options = loop.LoopOptions(train_steps=10, global_batch_size=8, learning_rate=0.05,
                               accumulation_steps=accumulation)
    return steps_lib.StepFunctions(model, loop.make_optimizer(options),
                                   tf.distribute.get_strategy(), 8, accumulation)


def _iterator():
    rng = np.random.default_rng(0)
    images = rng.random((64, 8, 8, 1), dtype=np.float32)
    labels = rng.integers(0, 3, 64).astype(np.int32)
    return iter(tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(8))


def _weights(layer):
    # Every weight, BatchNorm's moving statistics included.
    return [w.numpy().copy() for w in layer.weights]


def _changed(before, after):
    return [not np.array_equal(a, b) for a, b in zip(before, after)]


@pytest.mark.parametrize('accumulation', [1, 2])
def test_only_the_head_trains_while_frozen_then_everything(accumulation):
    model = _model()
    steps = _steps(model, accumulation)
    backbone, head = model.get_layer('backbone'), model.get_layer('logits')
    iterator = _iterator()
    backbone_start, head_start = _weights(backbone), _weights(head)
    steps.set_frozen(True)
    for _ in range(3):
        steps.train_step(iterator)
    assert not any(_changed(backbone_start, _weights(backbone)))
    assert all(_changed(head_start, _weights(head)))
    steps.set_frozen(False)
    for _ in range(3):
        steps.train_step(iterator)
    # The conv kernel and bias, BN's scale, offset and moving statistics all move now.
    assert all(_changed(backbone_start, _weights(backbone)))
    assert int(steps.step.numpy()) == 6 and int(steps.optimizer.iterations.numpy()) == 6


def test_a_model_without_a_backbone_cannot_be_frozen():
    steps = _steps(_model(with_backbone=False), 1)
    with pytest.raises(ValueError, match="layer named 'backbone'"):
        steps.set_frozen(True)
    steps.set_frozen(False)  # a no-op: nothing was frozen
