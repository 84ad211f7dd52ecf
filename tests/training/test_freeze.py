"""The frozen-backbone warm-up: only the head trains while frozen, everything after unfreezing."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from training import freeze, loop, progress, steps as steps_lib


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
    options = loop.LoopOptions.of(train_steps=10, global_batch_size=8, learning_rate=0.05,
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


def test_the_loop_freezes_the_first_epochs_then_trains_everything(tmp_path):
    model = _model()
    options = loop.LoopOptions.of(train_steps=6, global_batch_size=8, learning_rate=0.05,
                               steps_per_epoch=2, max_epochs=3, freeze_epochs=2,
                               checkpoint_interval=100)
    steps = steps_lib.StepFunctions(model, loop.make_optimizer(options),
                                    tf.distribute.get_strategy(), 8)
    backbone, head = model.get_layer('backbone'), model.get_layer('logits')
    start, seen = _weights(backbone), {}
    listener = lambda event: seen.setdefault(event.step, (  # noqa: E731
        _weights(backbone), _weights(head), steps.frozen))
    unsubscribe = progress.subscribe(listener)
    try:
        images = np.random.default_rng(0).random((64, 8, 8, 1), dtype=np.float32)
        labels = np.arange(64, dtype=np.int32) % 3
        loop.run_training(steps, lambda skip: tf.data.Dataset.from_tensor_slices(
            (images, labels)).repeat().skip(skip).batch(8, drop_remainder=True), options,
                          checkpoint_dir=str(tmp_path / 'ckpt'))
    finally:
        unsubscribe()
    # Epochs 1-2 (steps 1-4): the head learns, the backbone stays as initialised.
    assert [seen[s][2] for s in range(1, 7)] == [True] * 4 + [False] * 2
    assert not any(_changed(start, seen[4][0]))
    assert all(_changed(seen[0][1], seen[4][1]))  # step 0: the loop's start, before training
    # Epoch 3: every layer trains.
    assert all(_changed(start, seen[6][0])) and not steps.frozen


def test_freezing_needs_epochs():
    options = loop.LoopOptions.of(train_steps=4, global_batch_size=8, learning_rate=0.05,
                               freeze_epochs=1)
    steps = _steps(_model(), 1)
    with pytest.raises(ValueError, match='freeze_epochs needs training by epochs'):
        loop.run_training(steps, lambda skip: tf.data.Dataset.from_tensor_slices(
            (np.zeros((8, 8, 8, 1), np.float32), np.zeros(8, np.int32))).repeat().batch(8),
                          options)


def test_the_policy_freezes_the_first_epochs_and_never_without_a_warm_up():
    policy = freeze.Freezing(freeze_epochs=2, steps_per_epoch=3)
    assert [policy.frozen_at(step) for step in range(1, 9)] == [True] * 6 + [False] * 2
    assert policy.describe(True) == 'backbone frozen: training only the head for 2 epochs'
    assert freeze.Freezing(0, 3).frozen_at(1) is None and freeze.Freezing(0, 0).frozen_at(1) is None
    with pytest.raises(ValueError, match='needs training by epochs'):
        freeze.Freezing(2, steps_per_epoch=0).frozen_at(1)
