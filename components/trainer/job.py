"""One training job from files to files: data in, SavedModel and logs out (no TFX imports).

The executor maps TFX artifacts to the paths of a `TrainJob` and calls `train_and_export`; tests
call it directly. The model architecture is user code, named by import path.
"""
import dataclasses
import importlib
import json
import os
from typing import Callable, Dict, Sequence, Tuple

from absl import logging
import keras
import tensorflow as tf

from components.trainer import data, export, loop


@dataclasses.dataclass(frozen=True)
class TrainJob:
    train_pattern: str
    eval_pattern: str
    class_names: Tuple[str, ...]
    image_shape: Tuple[int, int, int]
    model_builder: str
    options: loop.LoopOptions
    seed: int = 0


def import_builder(path: str) -> Callable[..., keras.Model]:
    """Resolves 'package.module.function' (or 'package.module:function') to the function."""
    module_name, sep, attr = path.rpartition(':') if ':' in path else path.rpartition('.')
    if not sep or not module_name or not attr:
        raise ValueError(f'model_builder must look like "package.module.function", got {path!r}')
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f'Cannot import model builder module {module_name!r}: {error}') from None
    builder = getattr(module, attr, None)
    if not callable(builder):
        raise ValueError(f'{module_name!r} has no callable {attr!r} (model_builder={path!r})')
    return builder


def make_strategy(devices: Sequence[str] = ()) -> tf.distribute.Strategy:
    """MirroredStrategy over the given devices, or over every visible GPU (else the CPU)."""
    return tf.distribute.MirroredStrategy(devices=list(devices) or None)


def train_and_export(job: TrainJob, serving_dir: str, log_dir: str,
                     strategy: tf.distribute.Strategy = None) -> Dict[str, float]:
    """Trains, evaluates on the eval split, exports the SavedModel and writes metrics.json."""
    keras.utils.set_random_seed(job.seed)
    strategy = strategy or make_strategy()
    logging.info('Training %s on %d replica(s): %s', job.model_builder,
                 strategy.num_replicas_in_sync, job.options)
    builder = import_builder(job.model_builder)
    with strategy.scope():
        model = builder(job.image_shape, len(job.class_names))
        optimizer = loop.make_optimizer(job.options)
    steps = loop.StepFunctions(model, optimizer, strategy, job.options.global_batch_size)
    train_data = data.train_dataset(job.train_pattern, job.options.global_batch_size,
                                    job.image_shape, seed=job.seed)
    eval_data = data.eval_dataset(job.eval_pattern, job.options.global_batch_size,
                                  job.image_shape)
    metrics = loop.run_training(steps, train_data, job.options, log_dir=log_dir,
                                eval_fn=lambda: steps.evaluate(eval_data))
    export.export_serving_model(model, serving_dir, job.image_shape, job.class_names)
    tf.io.gfile.makedirs(log_dir)
    with tf.io.gfile.GFile(os.path.join(log_dir, 'metrics.json'), 'w') as handle:
        json.dump(metrics, handle, indent=2)
    return metrics
