"""How fast a train step runs on this machine, against what the machine can do (no TFX imports).

- `matmul_peak`: the CPU's (or device's) arithmetic peak as a large square matmul reaches it,
  in float32 or bfloat16, measured in the same process as the step it is compared with: on a
  shared machine the load changes from minute to minute, so a peak measured elsewhere or earlier
  says little about the fraction of it a step reaches now.
- `train_flops_per_example`: the arithmetic of one trained example, counted from the model's
  forward multiply-adds (training/cost.py): 2 FLOPs per multiply-add forward, and the backward
  pass twice the forward (the gradient with respect to the input and to the weights), so 6 x
  multiply-adds. Normalisation, activations and the update are left out, as cost.py leaves
  them out: they are memory-bound, and the peak is a matmul's.
- `time_steps`: images per second of a StepFunctions' train step over a few seconds.

bench/bench_step.py prints all three per model, precision and XLA; trial.py uses time_steps to
choose precision and XLA; the trainer reports images/s and the fraction of peak (job.py).
"""
import time
from typing import Callable

import keras
import numpy as np
import tensorflow as tf

from training import cost

PEAK_SIZE = 1024   # a matmul this large runs at the peak on a CPU core and costs ~2 GFLOP


def matmul_peak(dtype: tf.DType = tf.float32, size: int = PEAK_SIZE,
                seconds: float = 0.3) -> float:
    """FLOP/s of repeated size x size matmuls in `dtype` (float32 accumulation for bfloat16),
    the best of about `seconds` of them after one untimed run."""
    a = tf.random.stateless_normal((size, size), seed=(1, 2))
    a, b = tf.cast(a, dtype), tf.cast(tf.transpose(a), dtype)
    matmul = tf.function(lambda x, y: tf.reduce_sum(tf.cast(tf.matmul(x, y), tf.float32)))
    float(matmul(a, b))
    best, deadline = 0.0, time.perf_counter() + seconds
    while not best or time.perf_counter() < deadline:
        start = time.perf_counter()
        float(matmul(a, b))
        best = max(best, 2 * size ** 3 / (time.perf_counter() - start))
    return best


def train_flops_per_example(model: keras.Model) -> int:
    """6 x the forward multiply-adds (see the module docstring)."""
    return 6 * cost.macs(model)


def synthetic_batches(image_shape, num_classes: int, global_batch: int,
                      seed: int = 0) -> tf.data.Dataset:
    """An endless stream of global batches of random [0, 1) images and labels: the train
    step's work without the input pipeline's (which the trainer reports as its input wait)."""
    rng = np.random.default_rng(seed)
    images = rng.random((4 * global_batch, *image_shape), dtype=np.float32)
    labels = rng.integers(0, num_classes, 4 * global_batch).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(
        global_batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def time_steps(train_step: Callable[[], tuple], examples_per_update: int,
               seconds: float, step_seconds: float) -> float:
    """Examples/s of `train_step()` run for about `seconds` (at least 2 updates), given one
    update's seconds measured before (to choose the count without a clock read per step)."""
    count = max(2, round(seconds / max(step_seconds, 1e-6)))
    start = time.perf_counter()
    for _ in range(count):
        loss = train_step()[0]
    float(loss)  # waits for the last update
    return count * examples_per_update / (time.perf_counter() - start)
