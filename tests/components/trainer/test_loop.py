"""Unit tests of the training loop: loss normalisation, evaluation sums, schedule, TensorBoard."""
import glob

import keras
import numpy as np
import pytest
import tensorflow as tf

from components.trainer import loop


def _linear_model(num_classes=3, dim=4):
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((dim,)), keras.layers.Dense(num_classes)])


def _separable_data(n=96, dim=4, num_classes=3):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, num_classes, n).astype(np.int32)
    centers = rng.normal(size=(num_classes, dim)) * 4
    points = (centers[labels] + rng.normal(size=(n, dim))).astype(np.float32)
    return points, labels


def _steps(model, batch, lr=0.05, steps=40):
    options = loop.LoopOptions(train_steps=steps, global_batch_size=batch, learning_rate=lr)
    strategy = tf.distribute.get_strategy()
    return loop.StepFunctions(model, loop.make_optimizer(options), strategy, batch), options


@pytest.mark.parametrize('kwargs, field', [
    (dict(train_steps=0), 'train_steps'), (dict(global_batch_size=0), 'global_batch_size'),
    (dict(learning_rate=-1.0), 'learning_rate'), (dict(warmup_steps=5, train_steps=5), 'warmup'),
    (dict(log_every=0), 'log_every')])
def test_options_are_validated(kwargs, field):
    args = dict(train_steps=10, global_batch_size=8, learning_rate=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=field):
        loop.LoopOptions(**args)


def test_step_loss_is_the_global_batch_mean():
    points, labels = _separable_data(n=16)
    model = _linear_model()
    steps, _ = _steps(model, batch=16)
    expected = float(keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        labels, model(points)))
    iterator = iter(tf.data.Dataset.from_tensor_slices((points, labels)).batch(16))
    loss, correct = steps.train_step(iterator)
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    assert 0 <= float(correct) <= 16


def test_evaluate_counts_every_example_once_with_a_partial_batch():
    points, labels = _separable_data(n=10)
    model = _linear_model()
    steps, _ = _steps(model, batch=4)
    metrics = steps.evaluate(tf.data.Dataset.from_tensor_slices((points, labels)).batch(4))
    logits = model(points).numpy()
    assert metrics['examples'] == 10
    assert metrics['accuracy'] == pytest.approx(np.mean(logits.argmax(-1) == labels))
    expected_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
    assert metrics['loss'] == pytest.approx(float(expected_loss), rel=1e-5)


def test_training_learns_and_writes_tensorboard_scalars(tmp_path):
    points, labels = _separable_data()
    model = _linear_model()
    steps, options = _steps(model, batch=32)
    data = tf.data.Dataset.from_tensor_slices((points, labels)).repeat().batch(32)
    eval_data = tf.data.Dataset.from_tensor_slices((points, labels)).batch(32)
    before = steps.evaluate(eval_data)
    result = loop.run_training(steps, data, options, log_dir=str(tmp_path),
                               eval_fn=lambda: steps.evaluate(eval_data))
    assert result['eval_loss'] < before['loss'] / 2
    assert result['eval_accuracy'] > 0.9
    tags = set()
    for path in glob.glob(str(tmp_path / 'events.out.tfevents.*')):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(v.tag for v in event.summary.value)
    assert {'train/loss', 'train/accuracy', 'train/learning_rate', 'eval/loss', 'eval/accuracy',
            'perf/examples_per_second', 'perf/step_time_seconds'} <= tags


def test_schedule_warms_up_then_decays_per_update():
    options = loop.LoopOptions(train_steps=100, global_batch_size=8, learning_rate=0.1,
                               warmup_steps=10)
    schedule = loop.make_optimizer(options).learning_rate  # evaluated at the current iteration
    lr = loop.make_optimizer(options)._learning_rate
    assert float(lr(0)) == pytest.approx(0.0)
    assert float(lr(5)) == pytest.approx(0.05)
    assert float(lr(10)) == pytest.approx(0.1)
    assert float(lr(55)) == pytest.approx(0.05, rel=1e-4)
    assert float(lr(100)) == pytest.approx(0.0, abs=1e-7)
    assert float(schedule) == pytest.approx(0.0)
