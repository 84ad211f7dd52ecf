"""The step's cost against the machine (training/speed.py): FLOP accounting, peak, batches."""
import keras
import tensorflow as tf

from training import cost, speed


def test_a_trained_example_costs_six_flops_per_forward_multiply_add():
    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(4, 3, padding='same')(inputs)   # 64 x 9 x 4 = 2,304
    model = keras.Model(inputs, keras.layers.Dense(3)(keras.layers.Flatten()(x)))  # 768
    assert cost.macs(model) == 2304 + 768
    assert speed.train_flops_per_example(model) == 6 * (2304 + 768)


def test_the_peak_is_a_positive_rate_in_either_dtype():
    for dtype in (tf.float32, tf.bfloat16):
        assert speed.matmul_peak(dtype, size=128, seconds=0.01) > 0


def test_synthetic_batches_have_the_jobs_shape_and_classes():
    images, labels = next(iter(speed.synthetic_batches((6, 5, 3), 4, global_batch=8)))
    assert images.shape == (8, 6, 5, 3) and images.dtype == tf.float32
    assert labels.dtype == tf.int32 and 0 <= int(tf.reduce_min(labels)) and int(
        tf.reduce_max(labels)) < 4


def test_time_steps_counts_the_examples_of_every_update():
    calls = []

    def step():
        calls.append(1)
        return (tf.constant(0.0),)
    rate = speed.time_steps(step, examples_per_update=10, seconds=0.0, step_seconds=1.0)
    assert len(calls) == 2 and rate > 0   # at least 2 updates, whatever the seconds
