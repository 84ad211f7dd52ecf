"""Unit tests of one update: loss normalisation, loss scaling, skipped non-finite updates,
dtypes."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from training import loop, precision, steps as steps_lib
from models import resnet


@pytest.fixture(autouse=True)
def _restore_policy():
    yield
    keras.mixed_precision.set_global_policy('float32')


def _data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 8, 8, 1), dtype=np.float32), rng.integers(0, 3, n).astype(np.int32)


def _model():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 1))
    hidden = keras.layers.Dense(8, activation='relu')(keras.layers.Flatten()(inputs))
    return keras.Model(inputs, keras.layers.Dense(3, dtype='float32')(hidden))


def _steps(batch, scale=None, accumulation=1, label_smoothing=0.0):
    options = loop.LoopOptions.of(train_steps=10, global_batch_size=batch, learning_rate=0.1,
                               optimizer='sgd', accumulation_steps=accumulation)
    return steps_lib.StepFunctions(_model(), loop.make_optimizer(options),
                                   tf.distribute.get_strategy(), batch, accumulation, scale,
                                   label_smoothing=label_smoothing)


def _iterator(images, labels, batch):
    return iter(tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(batch))


def test_reported_loss_is_the_mean_over_the_update():
    images, labels = _data()
    steps = _steps(8, accumulation=4)
    expected = float(keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        labels, steps.model(images)))
    loss, correct, wait, applied = steps.train_step(_iterator(images, labels, 8))
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert 0 <= float(correct) <= 32 and float(wait) >= 0 and bool(applied)
    assert int(steps.optimizer.iterations.numpy()) == 1 and int(steps.step.numpy()) == 1


@pytest.mark.parametrize('smoothing', [0.1, 0.3])
def test_label_smoothing_is_keras_categorical_smoothing(smoothing):
    """The smoothed loss of sparse labels equals Keras' one-hot categorical cross-entropy with
    the same `label_smoothing`, and differs from the plain loss."""
    images, labels = _data()
    steps = _steps(32, label_smoothing=smoothing)
    logits = steps.model(images)
    expected = float(keras.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=smoothing)(tf.one_hot(labels, 3), logits))
    plain = float(keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits))
    loss, _, _, _ = steps.train_step(_iterator(images, labels, 32))
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert abs(expected - plain) > 1e-3


def test_loss_scaling_is_undone_exactly_once():
    images, labels = _data()
    plain = _steps(16)
    scaled = _steps(16, precision.DynamicLossScale(enabled=True, initial_scale=1024.0))
    for steps in (plain, scaled):
        iterator = _iterator(images, labels, 16)
        for _ in range(5):
            steps.train_step(iterator)
    for a, b in zip(plain.model.get_weights(), scaled.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_non_finite_update_is_skipped_and_counted():
    images, labels = _data()
    images[3, 0, 0, 0] = np.nan
    steps = _steps(32)
    before = [w.copy() for w in steps.model.get_weights()]
    *_, applied = steps.train_step(_iterator(images, labels, 32))
    assert not bool(applied)
    assert int(steps.skipped_updates.numpy()) == 1
    assert int(steps.optimizer.iterations.numpy()) == 0  # the schedule did not advance
    for a, b in zip(before, steps.model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_forced_overflow_under_mixed_float16_leaves_weights_unchanged_and_finite():
    keras.mixed_precision.set_global_policy('mixed_float16')
    images, labels = _data()
    scale = precision.DynamicLossScale(enabled=True)
    steps = _steps(16, scale)
    iterator = _iterator(images, labels, 16)
    steps.train_step(iterator)  # a normal update first: the skip must not be vacuous
    assert int(steps.skipped_updates.numpy()) == 0
    before = [w.copy() for w in steps.model.get_weights()]
    scale.scale.assign(3e38)  # every float16 gradient overflows
    *_, applied = steps.train_step(iterator)
    assert not bool(applied) and int(steps.skipped_updates.numpy()) == 1
    assert float(scale.scale.numpy()) == pytest.approx(1.5e38)
    for a, b in zip(before, steps.model.get_weights()):
        np.testing.assert_array_equal(a, b)
        assert np.isfinite(b).all() and b.dtype == np.float32  # float32 master weights


def test_loss_scale_grows_after_a_run_of_good_updates():
    scale = precision.DynamicLossScale(enabled=True, initial_scale=8.0, growth_interval=3)
    for _ in range(3):
        scale.update(tf.constant(True))
    assert float(scale.scale.numpy()) == 16.0 and int(scale.good_updates.numpy()) == 0
    scale.update(tf.constant(False))
    assert float(scale.scale.numpy()) == 8.0


@pytest.mark.parametrize('policy', ['float32', 'mixed_float16', 'mixed_bfloat16'])
def test_default_model_logits_are_float32_under_every_policy(policy):
    keras.mixed_precision.set_global_policy(policy)
    model = resnet.build_model((8, 8, 1), 10)
    logits = model(np.zeros((2, 8, 8, 1), np.float32))
    assert logits.dtype == tf.float32
    assert all(w.dtype == 'float32' for w in model.trainable_weights)
    if policy != 'float32':  # the body really computes in low precision
        assert model.layers[1].compute_dtype == policy.split('_')[1]


def test_evaluate_counts_every_example_once_with_a_partial_batch():
    images, labels = _data(n=10)
    steps = _steps(4)
    metrics = steps.evaluate(tf.data.Dataset.from_tensor_slices((images, labels)).batch(4))
    logits = steps.model(images).numpy()
    assert metrics['examples'] == 10
    assert metrics['accuracy'] == pytest.approx(np.mean(logits.argmax(-1) == labels))
    expected = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    assert metrics['loss'] == pytest.approx(float(expected), rel=1e-5)
