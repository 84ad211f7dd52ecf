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

from core import inputs, model_signature
from training import data, distribute, export, loop, precision, steps as steps_lib
from training import augment as augment_lib, warm_start, warmup
from training import flip_choice, length, plan, speed, trial
from training.params import TrainParams
from training.result import TrainResult


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
    # The share of the train split held out for early stopping, in percent to 0.01: asked
    # (validation_percent), then as plan.plan_epochs settled it.
    held_out_percent: float = 0

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


def decide_step(job: TrainJob, strategy: tf.distribute.Strategy,
                num_gpus: Optional[int] = None, bf16_cpu: Optional[bool] = None,
                workers: Optional[int] = None) -> trial.Decision:
    """Precision and XLA of the train step: as asked, or by a timed trial of the job's step
    (training/trial.py, which says when there is none). Call it after plan.plan_epochs (the
    planned length decides whether a trial pays) and before the seed is set (the trial's
    models must not change the real model's initial weights)."""
    params = job.params
    asked_policy, asked_xla = params.mixed_precision, params.xla
    if num_gpus is None:
        num_gpus = len(tf.config.list_physical_devices('GPU'))
    if bf16_cpu is None:
        bf16_cpu = precision.cpu_has_bf16()
    if asked_policy != 'auto':
        policies = [asked_policy]
    elif num_gpus:
        policies = ['mixed_float16']
    else:
        policies = ['float32'] + (['mixed_bfloat16'] if bf16_cpu else [])
    options = trial.candidates(policies, asked_xla)
    workers = distribute.num_workers() if workers is None else workers
    builder = import_builder(params.model_builder)
    shape = inputs.builder_input_shape(job.input_spec, job.image_shape)
    model_cost = None
    skip = None
    if len(options) == 1:
        skip = ''
    elif workers > 1:
        skip = f'no trial with {workers} worker processes (each would time its own)'
    elif job.input_spec.kind == 'tabular':
        skip = 'no trial for a table input'
    else:
        model_cost = precision.measure_cost(lambda: builder(shape, len(job.class_names)))
        work = 6 * model_cost.macs * job.options.train_steps * job.options.examples_per_update
        if work < trial.TRIAL_MIN_FLOP:
            skip = (f'no trial: {work / 1e12:.1f} TFLOP of training planned, under the '
                    f'{trial.TRIAL_MIN_FLOP / 1e12:g} TFLOP a trial pays for')
    if skip is not None:
        policy, why = precision.choose_policy(
            asked_policy, model_cost or (lambda: precision.measure_cost(
                lambda: builder(shape, len(job.class_names)))), num_gpus=num_gpus,
            bf16_cpu=bf16_cpu)
        xla = asked_xla == 'on'
        return trial.Decision(
            policy, xla, why if why == 'asked' or not skip else f'{why}; {skip}',
            'asked' if asked_xla != 'auto' else skip)
    return _run_trial(job, strategy, options)


def _run_trial(job: TrainJob, strategy: tf.distribute.Strategy,
               options) -> trial.Decision:
    """The timed trial of decide_step; Keras' global policy is restored after it."""
    params = job.params
    previous = keras.mixed_precision.global_policy()

    def build(candidate):
        keras.mixed_precision.set_global_policy(candidate.policy)
        return build_steps(job, strategy, candidate.policy, candidate.xla)
    start = time.perf_counter()
    try:
        figures = trial.run(build, speed.synthetic_batches(job.image_shape, len(job.class_names),
                                                           params.global_batch_size),
                            options, job.options.examples_per_update, log=logging.info)
    finally:
        keras.mixed_precision.set_global_policy(previous)
    chosen = trial.choose(figures)
    labels = {candidate.label: rate for candidate, rate in figures.items()}
    logging.info('Step trial in %.1f s: %s -> %s', time.perf_counter() - start,
                 trial.describe(labels), chosen.label)
    default = options[0]

    def reason(asked, value, default_value):
        if asked != 'auto':
            return 'asked'
        if value == default_value and chosen != default:
            return 'auto: in the fastest of a timed trial of the train step'
        if chosen == default:
            return (f'auto: nothing beat {default.label} by {trial.MARGIN - 1:.0%} in a timed '
                    'trial of the train step')
        return 'auto: the fastest in a timed trial of the train step'
    return trial.Decision(chosen.policy, chosen.xla,
                          reason(params.mixed_precision, chosen.policy, default.policy),
                          reason(params.xla, chosen.xla, default.xla), labels)


def build_steps(job: TrainJob, strategy: tf.distribute.Strategy,
                policy: str, xla: bool = False) -> steps_lib.StepFunctions:
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
        planned = loop.planned_steps_variable(job.options)
        optimizer = loop.make_optimizer(job.options, planned)
        loss_scale = precision.DynamicLossScale(enabled=policy == 'mixed_float16')
    if model.outputs and model.outputs[0].dtype != 'float32':
        logging.warning('%s returns %s logits; the loop casts them to float32, but a float32 '
                        'last layer is more accurate.', params.model_builder,
                        model.outputs[0].dtype)
    return steps_lib.StepFunctions(model, optimizer, strategy, params.global_batch_size,
                                   params.accumulation_steps, loss_scale, jit_compile=xla,
                                   planned_steps=planned,
                                   label_smoothing=params.label_smoothing)


def _against_peak(model: keras.Model, policy: str, examples_per_second) -> Dict[str, float]:
    """The run's training FLOP/s (speed.train_flops_per_example) against the matmul peak of
    its compute dtype, measured now in this process (speed.matmul_peak; its cost in
    docs/training.md, "Observability")."""
    flops = speed.train_flops_per_example(model)
    if not examples_per_second or not flops:
        return {}
    dtype = tf.bfloat16 if policy == 'mixed_bfloat16' else tf.float32
    start = time.perf_counter()
    with tf.device('/CPU:0' if not tf.config.list_physical_devices('GPU') else None):
        peak = speed.matmul_peak(dtype)
    logging.info('Matmul peak %s: %.0f GFLOP/s (measured in %.1f s)', dtype.name, peak / 1e9,
                 time.perf_counter() - start)
    achieved = examples_per_second * flops
    return {'train_flops_per_example': float(flops), 'train_flops_per_second': achieved,
            'peak_flops_per_second': peak, 'peak_dtype': dtype.name,
            'peak_fraction': achieved / peak}


def _flips_asked(job: TrainJob):
    """on or off (True, False) when known before training, 'auto' when it is measured."""
    if job.params.flip == 'auto':
        return 'auto' if job.held_out_percent else False
    return job.params.flip == 'on'


def _flip_choice(job: TrainJob, steps: steps_lib.StepFunctions,
                 held_out_data: Optional[tf.data.Dataset]) -> flip_choice.FlipChoice:
    """Flips as asked, or measured on the held-out slice (flip_choice.py) when there is one."""
    mode, evaluate, unmeasured = job.params.flip, None, ''
    if job.input_spec.kind == 'tabular':
        mode, unmeasured = 'off', 'a table has no image to mirror'
    elif held_out_data is not None:
        scored = {'held_out': held_out_data, 'mirrored': data.mirrored(held_out_data),
                  'train': data.train_sample_dataset(
                      job.train_pattern, job.held_out_percent, flip_choice.sample_percent(
                          job.options.steps_per_epoch * job.options.examples_per_update,
                          job.held_out_percent),
                      job.params.global_batch_size, job.image_shape, spec=job.input_spec)}

        def evaluate(kind: str) -> Dict[str, float]:
            return steps.evaluate(scored[kind])
    with steps.strategy.scope():  # mirrored like the weights, as the loop's StoppingState
        return flip_choice.FlipChoice(mode, len(job.class_names), evaluate, unmeasured)


def train_and_export(job: TrainJob, serving_dir: str, log_dir: str,
                     checkpoint_dir: Optional[str] = None,
                     strategy: Optional[tf.distribute.Strategy] = None) -> TrainResult:
    """Trains (resuming from checkpoint_dir), evaluates, exports, and writes the TrainResult
    as metrics.json (TrainResult.to_metrics)."""
    # The strategy first: a multi-worker one must be made before TensorFlow runs much.
    strategy = strategy or distribute.make_strategy(job.params.devices)
    # The length and the batch from the data, settled once and split over the replicas.
    job, held_out, note, held_out_note = plan.plan_epochs(job, strategy.num_replicas_in_sync)
    job, decision, decide_seconds = _decide(job, strategy)
    keras.utils.set_random_seed(job.params.seed)
    is_chief, task = distribute.chief_and_task(strategy)
    logging.info('Training %s on %d replica(s), policy %s (asked: %s)%s%s: %s',
                 job.params.model_builder, strategy.num_replicas_in_sync, decision.policy,
                 job.params.mixed_precision,
                 f', input {job.input_statement}' if job.input_statement else '',
                 '' if job.input_spec.kind == 'tabular' else
                 f', augment {augment_lib.describe(job.params.augment, _flips_asked(job))}',
                 job.options)
    previous_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(decision.policy)  # global in Keras: restored below
    scratch = None if is_chief else tempfile.mkdtemp(prefix=f'ckpt_{task}_')
    try:
        steps = build_steps(job, strategy, decision.policy, decision.xla)
        warmed = bool(job.warm_start_from) and warm_start.warm_start(
            steps.model, job.warm_start_from, model_signature.describe(
                job.class_names, job.image_shape, job.input_spec))
        result, flips, shard = _train(job, steps, log_dir, checkpoint_dir, is_chief, scratch,
                                      note)
        result = dataclasses.replace(
            result, held_out_examples=held_out if job.epochs > 0 else None,
            held_out_reason=held_out_note or None,
            **({} if job.input_spec.kind == 'tabular' else dict(flip=flips.flip_now(),
                                                                flip_reason=flips.reason())),
            mixed_precision=decision.policy, precision_reason=decision.precision_reason,
            xla=decision.xla, xla_reason=decision.xla_reason,
            step_trial=decision.trial_text() if decision.figures else None,
            step_trial_seconds=decide_seconds if decision.figures else None,
            **_against_peak(steps.model, decision.policy, result.examples_per_second),
            global_batch_size=job.params.global_batch_size,
            num_replicas=strategy.num_replicas_in_sync, num_workers=distribute.num_workers(),
            input_sharding=shard,
            warm_start_version=job.warm_start_version if warmed else -1)
        if is_chief:
            _export(job, steps, result, serving_dir, log_dir, checkpoint_dir)
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
        if scratch:
            tf.io.gfile.rmtree(scratch)
    return result


def _decide(job: TrainJob, strategy: tf.distribute.Strategy
            ) -> Tuple[TrainJob, trial.Decision, float]:
    """(the job, the step's precision and XLA as decide_step chose them, the seconds that took);
    a trial's time comes off the length's time target (length.after_trial)."""
    params = job.params
    start = time.perf_counter()
    decision = decide_step(job, strategy)
    seconds = time.perf_counter() - start
    logging.info('Precision %s -> %s: %s; XLA %s -> %s: %s (%.2f s to decide)',
                 params.mixed_precision, decision.policy, decision.precision_reason, params.xla,
                 'on' if decision.xla else 'off', decision.xla_reason, seconds)
    target = length.after_trial(job.options.time_target_seconds, params.time_budget_minutes,
                                seconds)
    if target != job.options.time_target_seconds:
        job = dataclasses.replace(job, options=dataclasses.replace(
            job.options, time_target_seconds=target))
    return job, decision, seconds


def _train(job: TrainJob, steps: steps_lib.StepFunctions, log_dir: str,
           checkpoint_dir: Optional[str], is_chief: bool, scratch: Optional[str], note: str
           ) -> Tuple[TrainResult, flip_choice.FlipChoice, str]:
    """The loop over the job's data: (its result, the flip choice, the train split's sharding
    over the workers)."""
    params = job.params
    eval_data = data.eval_dataset(job.eval_pattern, params.global_batch_size,
                                  job.image_shape, spec=job.input_spec)
    held_out_data = data.held_out_dataset(
        job.train_pattern, job.held_out_percent, params.global_batch_size, job.image_shape,
        spec=job.input_spec) if job.held_out_percent else None
    flips = _flip_choice(job, steps, held_out_data)
    workers, worker = distribute.num_workers(), distribute.input_pipeline(steps.strategy)
    shard = data.shard_policy(len(tf.io.gfile.glob(job.train_pattern)), workers)
    if workers > 1:
        logging.info('Input over %d workers: %s sharding of the train split (%s), this is '
                     'worker %d', workers, shard, job.train_pattern, worker)

    def train_data(skip: int) -> tf.data.Dataset:
        return data.train_dataset(
            job.train_pattern, params.global_batch_size, job.image_shape, params.seed,
            skip_examples=data.stream_skip(skip, shard, workers), shard=shard, worker=worker,
            num_workers=workers, cache_decoded=job.cache_decoded, spec=job.input_spec,
            augment=params.augment, flip=flips.flip_now(),
            held_out_percent=job.held_out_percent)
    result = loop.run_training(
        steps, train_data, job.options, log_dir=log_dir, checkpoint_dir=checkpoint_dir,
        is_chief=is_chief, checkpoint_write_dir=scratch,
        eval_fn=lambda: steps.evaluate(eval_data, params.eval_steps),
        held_out_fn=None if held_out_data is None else lambda: steps.evaluate(held_out_data),
        note=note, flip_choice=flips)
    return result, flips, shard


def _export(job: TrainJob, steps: steps_lib.StepFunctions, result: TrainResult,
            serving_dir: str, log_dir: str, checkpoint_dir: Optional[str]) -> None:
    """The chief's end: the SavedModel, metrics.json, and the checkpoints deleted."""
    export.export_serving_model(steps.model, serving_dir, job.image_shape, job.class_names,
                                job.input_spec, warmup.first_examples(job.eval_pattern))
    tf.io.gfile.makedirs(log_dir)
    with tf.io.gfile.GFile(os.path.join(log_dir, 'metrics.json'), 'w') as handle:
        json.dump(result.to_metrics(), handle, indent=2)
    if checkpoint_dir and tf.io.gfile.exists(checkpoint_dir):
        tf.io.gfile.rmtree(checkpoint_dir)  # the exported model supersedes them
