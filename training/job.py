"""One training job from files to files: data in, SavedModel, logs and checkpoints out.

No TFX imports: the executor maps TFX artifacts to the paths of a `TrainJob` and calls
`train_and_export`; tests call it directly. The model architecture is user code, named by
import path; a local weights file, when given, is passed to the builder as `weights=`.
Checkpoints are deleted once the model is exported (the SavedModel is the durable result); a
run that does not finish keeps them, and the next attempt resumes from them.
"""
import dataclasses
import importlib
import inspect
import json
import os
import tempfile
import time
from typing import Callable, Dict, Optional, Tuple, Union

from absl import logging
import keras
import tensorflow as tf

from components.common import inputs, model_signature
from training import data, distribute, export, loop, precision, steps as steps_lib
from training import augment as augment_lib, warm_start, warmup
from training import plan
from training.params import TrainParams


@dataclasses.dataclass(frozen=True)
class TrainJob:
    """One training: its data, and its plan (options: the TrainParams and the length)."""
    # A file pattern, or several: one per span of the training window (common/window.py).
    train_pattern: Union[str, Tuple[str, ...]]
    eval_pattern: Union[str, Tuple[str, ...]]
    class_names: Tuple[str, ...]
    image_shape: Tuple[int, int, int]  # resolved: configured, or from the data
    options: loop.LoopOptions
    cache_decoded: bool = False        # keep the decoded train split in memory (small splits)
    warm_start_from: str = ''          # a SavedModel folder: start from its weights ('' = no)
    warm_start_version: int = -1       # the served version that folder is, for the metrics
    # What ingestion stored: images (encoded or raw) or a table. The builder's `input_shape`
    # is image_shape for images and {'numeric': (n,), 'categorical': (m,)} for a table.
    input_spec: inputs.InputSpec = inputs.InputSpec()
    input_statement: str = ''          # how image_shape was chosen, for people (the log line)
    # > 0: train up to this many epochs with early stopping (plan.plan_epochs sets the options'
    # train_steps and steps_per_epoch from the data); plan.AUTO_EPOCHS: as many as auto_epochs
    # says for the data; 0: options.train_steps, fixed.
    epochs: float = 0.0
    held_out_percent: int = 0          # share of the train split held out for early stopping

    @property
    def params(self) -> TrainParams:
        """What the user set: the model builder and weights, precision, seed, devices,
        augmentation, and the loop's parameters (training/params.py)."""
        return self.options.params


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


def decide_precision(job: TrainJob, num_gpus: Optional[int] = None,
                     bf16_cpu: Optional[bool] = None) -> Tuple[str, str]:
    """(policy, why): `auto` on a bf16 CPU builds the model once in float32 to count its cost.

    Keras' policy is global and applies when layers are built, so it must be known before the
    real model is; the throw-away build runs before the seed is set, so the real model's
    initial weights do not depend on it.
    """
    builder = import_builder(job.params.model_builder)
    shape = inputs.builder_input_shape(job.input_spec, job.image_shape)

    def measure():
        return precision.measure_cost(lambda: builder(shape, len(job.class_names)))
    return precision.choose_policy(job.params.mixed_precision, measure, num_gpus=num_gpus,
                                   bf16_cpu=bf16_cpu)


def build_steps(job: TrainJob, strategy: tf.distribute.Strategy,
                policy: str) -> steps_lib.StepFunctions:
    """Model, optimizer and loss scale under the strategy, with the policy already set."""
    params = job.params
    builder = import_builder(params.model_builder)
    if params.model_weights and 'weights' not in inspect.signature(builder).parameters:
        raise ValueError(f'{params.model_builder} takes no `weights` argument, so it cannot '
                         f'load {params.model_weights} (the models.applications builders do)')
    with strategy.scope():
        # Builders without weights keep the plain (input_shape, num_classes) contract.
        kwargs = {'weights': params.model_weights} if params.model_weights else {}
        model = builder(inputs.builder_input_shape(job.input_spec, job.image_shape),
                        len(job.class_names), **kwargs)
        optimizer = loop.make_optimizer(job.options)
        loss_scale = precision.DynamicLossScale(enabled=policy == 'mixed_float16')
    if model.outputs and model.outputs[0].dtype != 'float32':
        logging.warning('%s returns %s logits; the loop casts them to float32, but a float32 '
                        'last layer is more accurate.', params.model_builder,
                        model.outputs[0].dtype)
    return steps_lib.StepFunctions(model, optimizer, strategy, params.global_batch_size,
                                   params.accumulation_steps, loss_scale)


def train_and_export(job: TrainJob, serving_dir: str, log_dir: str,
                     checkpoint_dir: Optional[str] = None,
                     strategy: Optional[tf.distribute.Strategy] = None) -> Dict[str, float]:
    """Trains (resuming from checkpoint_dir), evaluates, exports, and writes metrics.json."""
    # The strategy first: a multi-worker one must be made before TensorFlow runs much.
    params = job.params
    strategy = strategy or distribute.make_strategy(params.devices)
    start = time.perf_counter()
    policy, why = decide_precision(job)
    logging.info('Precision %s -> %s: %s (%.2f s to decide; bench/bench_precision.py)',
                 params.mixed_precision, policy, why, time.perf_counter() - start)
    keras.utils.set_random_seed(params.seed)
    job, held_out, note = plan.plan_epochs(job)
    replicas = strategy.num_replicas_in_sync
    if params.global_batch_size % replicas:
        raise ValueError(f'global_batch_size {params.global_batch_size} does not split '
                         f'evenly over {replicas} replicas')
    is_chief, task = distribute.chief_and_task(strategy)
    logging.info('Training %s on %d replica(s), policy %s (asked: %s)%s%s: %s',
                 params.model_builder, strategy.num_replicas_in_sync, policy,
                 params.mixed_precision,
                 f', input {job.input_statement}' if job.input_statement else '',
                 '' if job.input_spec.kind == 'tabular' else
                 f', augment {augment_lib.describe(params.augment, params.flip)}', job.options)
    previous_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)  # global in Keras: restored below
    scratch = None if is_chief else tempfile.mkdtemp(prefix=f'ckpt_{task}_')
    try:
        steps = build_steps(job, strategy, policy)
        warmed = bool(job.warm_start_from) and warm_start.warm_start(
            steps.model, job.warm_start_from, model_signature.describe(
                job.class_names, job.image_shape, job.input_spec))
        options = job.options
        eval_data = data.eval_dataset(job.eval_pattern, params.global_batch_size,
                                      job.image_shape, spec=job.input_spec)
        held_out_data = data.held_out_dataset(
            job.train_pattern, job.held_out_percent, params.global_batch_size, job.image_shape,
            spec=job.input_spec) if job.held_out_percent else None
        workers, worker = distribute.num_workers(), distribute.input_pipeline(strategy)
        shard = data.shard_policy(len(tf.io.gfile.glob(job.train_pattern)), workers)
        if workers > 1:
            logging.info('Input over %d workers: %s sharding of the train split (%s), this is '
                         'worker %d', workers, shard, job.train_pattern, worker)
        metrics = loop.run_training(
            steps, lambda skip: data.train_dataset(job.train_pattern, params.global_batch_size,
                                                   job.image_shape, params.seed,
                                                   skip_examples=data.stream_skip(skip, shard,
                                                                                  workers),
                                                   shard=shard, worker=worker, num_workers=workers,
                                                   cache_decoded=job.cache_decoded,
                                                   spec=job.input_spec, augment=params.augment,
                                                   flip=params.flip,
                                                   held_out_percent=job.held_out_percent),
            options, log_dir=log_dir, checkpoint_dir=checkpoint_dir, is_chief=is_chief,
            checkpoint_write_dir=scratch,
            eval_fn=lambda: steps.evaluate(eval_data, params.eval_steps),
            held_out_fn=None if held_out_data is None else lambda: steps.evaluate(held_out_data),
            note=note)
        if job.epochs > 0:
            metrics['held_out_examples'] = held_out
        metrics['mixed_precision'] = policy
        metrics['precision_reason'] = why
        metrics['num_replicas'] = strategy.num_replicas_in_sync
        metrics['num_workers'] = workers
        metrics['input_sharding'] = shard
        metrics['warm_start_version'] = job.warm_start_version if warmed else -1
        if is_chief:
            export.export_serving_model(steps.model, serving_dir, job.image_shape,
                                        job.class_names, job.input_spec,
                                        warmup.first_examples(job.eval_pattern))
            tf.io.gfile.makedirs(log_dir)
            with tf.io.gfile.GFile(os.path.join(log_dir, 'metrics.json'), 'w') as handle:
                json.dump(metrics, handle, indent=2)
            if checkpoint_dir and tf.io.gfile.exists(checkpoint_dir):
                tf.io.gfile.rmtree(checkpoint_dir)  # the exported model supersedes them
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
        if scratch:
            tf.io.gfile.rmtree(scratch)
    return metrics
