"""The outer training loop: iteration, checkpoints and resume, logging, TensorBoard, evaluation.

No TFX imports, so the loop can be tested alone. Following Orbit's split, the maths of one
update lives in `steps.py`; this module owns everything around it. Checkpoints go to a folder
that stays the same across retries of one training run, so a killed run resumes from its last
checkpoint; TensorFlow writes each checkpoint's files first and then atomically replaces the
`checkpoint` index, so a kill mid-save leaves the previous checkpoint as the one restored.
Where the running training is goes out as events (progress.py), for a console to show.
"""
import dataclasses
import math
import time
from typing import Callable, Dict, Optional

from absl import logging
import keras
import tensorflow as tf

from training import checkpoints, freeze, progress, replan, stopping, teardown
from training.flip_choice import FlipChoice
from training.params import TrainParams
from training.result import TrainResult
from training.steps import StepFunctions


@dataclasses.dataclass(frozen=True)
class LoopOptions:
    """One training run's plan: the user's parameters and the length planned from the data.

    `params` (TrainParams, validated there) are what the user set; the rest is planned:
    train_steps counts updates, the fixed length or with steps_per_epoch > 0 the planned
    maximum (max_epochs x steps_per_epoch, rounded up), which the learning-rate schedule decays
    over after a warm-up of params.warmup_steps, shortened to fit. An update sees
    params.global_batch_size (one micro-batch over all replicas) x params.accumulation_steps
    examples. With epochs, the held-out slice is evaluated at every epoch end; training stops
    after params.patience epochs without improvement (0 = never), and with a time budget at
    the first step after it is spent. time_target_seconds > 0 (a length planned from the data,
    plan.plan_epochs) re-plans the epochs at each epoch end from replan.REPLAN_EPOCH on to those
    that fit that many training seconds at the recent epochs' cost (replan.TimePlan); the
    schedule then decays over the new length.
    """
    params: TrainParams
    train_steps: int
    steps_per_epoch: int = 0     # 0 = a fixed length, no epochs and no early stopping
    max_epochs: float = 0.0      # with steps_per_epoch: the planned epochs
    log_every: int = 50
    time_target_seconds: float = 0.0   # with steps_per_epoch: see the docstring; 0 = no cap

    def __post_init__(self):
        checks = [
            (self.train_steps >= 1, 'train_steps must be >= 1'),
            (self.log_every >= 1, 'log_every must be >= 1'),
            (self.steps_per_epoch >= 0, 'steps_per_epoch must be >= 0'),
            (not self.steps_per_epoch or self.max_epochs > 0, 'max_epochs must be > 0')]
        for ok, message in checks:
            if not ok:
                raise ValueError(f'{message}, got {self}')

    @classmethod
    def of(cls, train_steps: int, steps_per_epoch: int = 0, max_epochs: float = 0.0,
           log_every: int = 50, time_target_seconds: float = 0.0, **params) -> 'LoopOptions':
        """This plan over TrainParams.bare(**params): for the library used alone (tests,
        benchmarks), where no config made the parameters."""
        return cls(TrainParams.bare(**params), train_steps, steps_per_epoch, max_epochs,
                   log_every, time_target_seconds)

    def with_length(self, train_steps: int) -> 'LoopOptions':
        """This plan at another length (by epochs: max_epochs follows), as re-planned."""
        return dataclasses.replace(self, train_steps=train_steps,
                                   max_epochs=round(train_steps / self.steps_per_epoch, 3))

    @property
    def warmup_steps(self) -> int:
        return min(self.params.warmup_steps, self.train_steps - 1)

    @property
    def examples_per_update(self) -> int:
        return self.params.examples_per_update

    @property
    def time_budget_seconds(self) -> float:
        return 60 * self.params.time_budget_minutes


class WarmupCosine(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to `peak` over warmup_steps, then cosine decay to 0 at
    `total_steps`: Keras' CosineDecay with warmup_target (alpha 0), except that the end is a
    variable, so the loop can re-plan the length at epoch ends (replan.TimePlan)."""

    def __init__(self, peak: float, warmup_steps: int, total_steps: tf.Variable):
        self.peak, self.warmup_steps, self.total_steps = peak, warmup_steps, total_steps

    def __call__(self, step):
        step = tf.cast(step, tf.float32)
        warmup = float(self.warmup_steps)
        decay = tf.maximum(tf.cast(self.total_steps, tf.float32) - warmup, 1.0)
        done = tf.clip_by_value((step - warmup) / decay, 0.0, 1.0)
        cosine = 0.5 * self.peak * (1.0 + tf.cos(math.pi * done))
        if not self.warmup_steps:
            return cosine
        return tf.where(step < warmup, self.peak * step / warmup, cosine)

    def get_config(self):
        return {'peak': self.peak, 'warmup_steps': self.warmup_steps,
                'total_steps': int(self.total_steps.numpy())}


def planned_steps_variable(options: LoopOptions) -> tf.Variable:
    """The planned number of updates as a variable (checkpointed with the loop's state)."""
    return tf.Variable(options.train_steps, dtype=tf.int64, trainable=False,
                       name='planned_steps')


def make_optimizer(options: LoopOptions,
                   planned_steps: Optional[tf.Variable] = None) -> keras.optimizers.Optimizer:
    """Linear warm-up then cosine decay to 0 at planned_steps (options.train_steps when not
    given); the schedule reads the applied-update count."""
    schedule = WarmupCosine(options.params.learning_rate, options.warmup_steps,
                            planned_steps if planned_steps is not None
                            else planned_steps_variable(options))
    if options.params.optimizer == 'sgd':
        return keras.optimizers.SGD(learning_rate=schedule, momentum=0.9)
    if options.params.optimizer == 'adamw':
        return keras.optimizers.AdamW(learning_rate=schedule,
                                      weight_decay=options.params.weight_decay)
    return keras.optimizers.Adam(learning_rate=schedule)


class _Window:
    """Sums over the steps since the last log line, for averages and rates."""

    def __init__(self):
        self.loss = self.correct = self.wait = 0.0
        self.steps = 0
        self.start = time.perf_counter()

    def add(self, loss, correct, wait):
        self.loss += float(loss)
        self.correct += float(correct)
        self.wait += float(wait)
        self.steps += 1


def run_training(steps: StepFunctions, make_train_data: Callable[[int], tf.data.Dataset],
                 options: LoopOptions, log_dir: Optional[str] = None,
                 checkpoint_dir: Optional[str] = None,
                 eval_fn: Optional[Callable[[], Dict[str, float]]] = None,
                 is_chief: bool = True,
                 checkpoint_write_dir: Optional[str] = None,
                 held_out_fn: Optional[Callable[[], Dict[str, float]]] = None,
                 note: str = '',
                 flip_choice: Optional[FlipChoice] = None) -> TrainResult:
    """Trains for options.train_steps updates or until it stops early, resuming if it can.

    make_train_data(skip_examples) must return the training stream with that many examples
    skipped, so a resumed run sees exactly the data the interrupted one would have seen next.
    held_out_fn evaluates the held-out slice at epoch ends (options.steps_per_epoch > 0); the
    best epoch's weights are restored before eval_fn and the return. flip_choice (flip auto) is
    asked at each epoch end whether flips start now; then the stream is made again from
    make_train_data at this step (it reads the choice). Every worker restores from
    checkpoint_dir; under multi-worker training only the chief writes there, and the others
    write to their own checkpoint_write_dir (saving is collective). Returns the loop's part of
    the TrainResult: the last window's train loss/accuracy, counters, how training stopped and
    why (`stop_reason`, where `note` says why there was no early stopping), and eval_fn's
    metrics ('eval_').
    """
    with steps.strategy.scope():  # mirrored like the weights they copy
        state = stopping.StoppingState(steps.model.variables)
    manager = _restore(steps, state, flip_choice, options.train_steps, checkpoint_dir,
                       checkpoint_write_dir)
    writer = (tf.summary.create_file_writer(log_dir) if log_dir and is_chief
              else tf.summary.create_noop_writer())
    run = _Controller(steps, make_train_data, state, replan.Replanner(
        options, getattr(steps, 'planned_steps', None)), held_out_fn, flip_choice, manager,
        checkpoint_dir)
    with writer.as_default():
        while not run.stopped and run.step < run.options.train_steps:
            run.update()
        reason = run.finish(note)
        evaluated = _evaluate(eval_fn, run.step)
    writer.flush()
    run.reporter.update(running=False)
    return run.result(reason, evaluated)


def _restore(steps: StepFunctions, state: stopping.StoppingState,
             flip_choice: Optional[FlipChoice], train_steps: int,
             checkpoint_dir: Optional[str], write_dir: Optional[str]):
    """The checkpoint manager (None without checkpoint_dir), after restoring the model, the
    optimizer, the stopping state and the flip choice from the newest checkpoint, if any."""
    if not checkpoint_dir:
        return None
    extra = {'flip_choice': flip_choice} if flip_choice is not None else {}
    checkpoint = tf.train.Checkpoint(**steps.checkpoint_items(), stopping=state, **extra)
    latest = checkpoints.latest(checkpoint_dir)
    if latest:
        checkpoint.restore(latest).assert_existing_objects_matched()
        logging.info('Resuming from checkpoint %s at step %d of %d', latest,
                     int(steps.step.numpy()), train_steps)
    return tf.train.CheckpointManager(checkpoint, write_dir or checkpoint_dir, max_to_keep=2)


class _Controller:
    """One attempt of the loop, as Orbit's Controller: the mechanism around each update (the
    train stream, the clock, logs, TensorBoard, checkpoints, progress events), which asks the
    policies what to do: freeze.Freezing before an update, stopping.EarlyStopping after it, the
    flip choice and replan.Replanner (the length, `options`) at epoch ends, and
    checkpoints.save_due."""

    def __init__(self, steps: StepFunctions, make_train_data, state: stopping.StoppingState,
                 replanner: replan.Replanner, held_out_fn, flip_choice, manager,
                 checkpoint_dir: Optional[str]):
        self.steps, self.make_train_data, self.state = steps, make_train_data, state
        self.replanner, self.held_out_fn, self.flip_choice = replanner, held_out_fn, flip_choice
        self.manager, self.stopping = manager, stopping.EarlyStopping(state)
        self.freezing = freeze.Freezing(self.options.params.freeze_epochs,
                                        self.options.steps_per_epoch)
        self.step = self.start_step = int(steps.step.numpy())
        self.reporter = progress.Reporter()
        self.reporter.update(step=self.start_step, total=self.options.train_steps,
                             start_step=self.start_step, checkpoint_dir=checkpoint_dir or '',
                             running=True)
        self.stopped = int(state.stop_code.numpy()) != stopping.RUNNING  # stopped before a crash
        self.iterator = self._stream(self.start_step)
        self.held_out = {}   # the last held-out evaluation, for the flip choice
        self.window, self.window_result = _Window(), {}
        self.run_start = time.perf_counter()
        self.speed = _Speed(self.run_start)
        # Training seconds: those of earlier attempts (checkpointed) plus this process's.
        self.spent_before = float(state.seconds.numpy())

    @property
    def options(self) -> LoopOptions:
        return self.replanner.options

    def clock(self) -> float:
        """The training seconds so far, the same on every worker (an all-reduce)."""
        return stopping.agreed_seconds(self.steps.strategy,
                                       self.spent_before + time.perf_counter() - self.run_start)

    def _stream(self, at_step: int):
        return iter(self.steps.strategy.experimental_distribute_dataset(
            self.make_train_data(at_step * self.options.examples_per_update)))

    def update(self) -> None:
        """One update, then the stop rules, the epoch end, the log window and the checkpoint."""
        self.step += 1
        step = self.step
        frozen = self.freezing.frozen_at(step)
        if frozen is not None and frozen != self.steps.frozen:
            self.steps.set_frozen(frozen)
            logging.info('step %d: %s', step, self.freezing.describe(frozen))
        update_start = time.perf_counter()
        outputs = self.steps.train_step(self.iterator)
        self.window.add(*outputs[:3])
        self.speed.add(step - self.start_step, time.perf_counter() - update_start,
                       float(outputs[2]), self.options.examples_per_update)
        self.reporter.update(step=step)
        self.stopped = self._judge(step)
        if self.options.steps_per_epoch and step % self.options.steps_per_epoch == 0:
            self._epoch_end(step)
        options = self.options   # as re-planned at this epoch end
        if step % options.log_every == 0 or step == options.train_steps or self.stopped:
            self.window_result = _log_window(self.steps, options, step, self.window,
                                             self.start_step, self.run_start)
            self.window = _Window()
        if self.manager and checkpoints.save_due(step, options.params.checkpoint_interval,
                                                 self.stopped, options.train_steps):
            self.state.seconds.assign(self.spent_before + time.perf_counter() - self.run_start)
            self.manager.save(checkpoint_number=step)

    def _judge(self, step: int) -> bool:
        """Whether to stop: the held-out evaluation when due (logged, and written for
        TensorBoard), then the stop rules' decision."""
        options = self.options
        over = self.stopping.over_budget(options, self.clock)
        held_out = None
        if self.held_out_fn is not None and self.stopping.evaluates(options, step, over):
            held_out = self.held_out = self.held_out_fn()
        stop = self.stopping.decide(options, step, held_out, over)
        if held_out is not None:
            best = self.state.summary()
            for name in ('accuracy', 'loss'):
                tf.summary.scalar(f'held_out/{name}', held_out[name], step=step)
            logging.info('epoch %d/%g  held-out acc %.4f loss %.4f (best %.4f at epoch %d)',
                         stopping.epoch_of(step, options.steps_per_epoch), options.max_epochs,
                         held_out['accuracy'], held_out['loss'], best['best_accuracy'],
                         best['best_epoch'])
        return stop

    def _epoch_end(self, step: int) -> None:
        """The epoch's time, the flip choice (a new stream when flips start), re-planning."""
        self.speed.epoch_end()
        options = self.options
        # Only while epochs remain: flips decided after the last would train nothing.
        if self.flip_choice is not None and not self.stopped and step < options.train_steps \
                and self.flip_choice.at_epoch_end(step // options.steps_per_epoch,
                                                  self.held_out.get('accuracy', -1.0)):
            self.iterator = None  # its in-memory cache goes before the next one fills
            self.iterator = self._stream(step)
        if self.replanner.due(step, self.stopped):
            self.replanner.at_epoch_end(step, self.clock(), stopping.agreed_seconds(
                self.steps.strategy, self.speed.recent_epoch(options.steps_per_epoch,
                                                             step - self.start_step)))
            self.reporter.update(total=self.options.train_steps)

    def finish(self, note: str) -> str:
        """Ends the attempt: the stream dropped, the best epoch's weights restored; returns
        why training stopped."""
        # The train stream is not read again; its teardown (the distributed iterator's decoded
        # cache, shuffle buffer and prefetch threads) took 4-31 s on 2 cores, Fashion-MNIST,
        # between the final eval and the export, with nothing waiting for it.
        box, self.iterator = [self.iterator], None
        teardown.drop_in_background(box, 'drop-train-stream')
        if self.step < self.options.train_steps:
            self.reporter.update(total=self.step)  # stopped early: the progress line ends complete
        restored = self.state.restore_best()
        reason = stopping.describe(self.state, self.options, self.step, restored, note)
        if self.replanner.describe():
            reason += f' ({self.replanner.describe()})'
        logging.info('training stopped after %d steps: %s', self.step, reason)
        return reason

    def result(self, reason: str, evaluated: Dict[str, float]) -> TrainResult:
        """The loop's part of the TrainResult."""
        options = self.options
        best = self.state.summary() if options.steps_per_epoch else {}
        held_out = bool(best.get('best_epoch'))
        return TrainResult(
            **self.window_result, **evaluated, start_step=self.start_step,
            skipped_updates=int(self.steps.skipped_updates.numpy()), steps_run=self.step,
            stop_reason=reason, **self.speed.result(), plan_changes=self.replanner.changes(),
            epochs_run=round(self.step / options.steps_per_epoch, 3) if best else None,
            best_epoch=best.get('best_epoch'),
            held_out_accuracy=best['best_accuracy'] if held_out else None,
            held_out_loss=best['best_loss'] if held_out else None)


def _evaluate(eval_fn: Optional[Callable[[], Dict[str, float]]], step: int) -> Dict[str, float]:
    """eval_fn's loss and accuracy after training (logged, and written for TensorBoard), as
    the TrainResult's eval_ fields; {} without eval_fn."""
    if eval_fn is None:
        return {}
    metrics = eval_fn()
    for name in ('loss', 'accuracy'):
        tf.summary.scalar(f'eval/{name}', metrics[name], step=step)
    logging.info('eval after %d steps: loss %.4f  accuracy %.4f on %d examples',
                 step, metrics['loss'], metrics['accuracy'], int(metrics['examples']))
    return {f'eval_{name}': metrics[name] for name in ('loss', 'accuracy')}


class _Speed:
    """The run's training rate (the first update of a process, which traces, left out), its
    input wait, and each epoch's wall seconds (its held-out evaluation included)."""

    def __init__(self, start: float):
        self.seconds = self.wait = self.first = 0.0
        self.examples = 0
        self.epochs, self.epoch_start = [], start

    def add(self, index: int, seconds: float, wait: float, examples: int) -> None:
        if index > 1:
            self.seconds += seconds
            self.wait += wait
            self.examples += examples
        else:
            self.first = seconds

    def recent_epoch(self, steps_per_epoch: int, updates: int) -> float:
        """What a later epoch should cost: the mean of the last replan.RECENT_EPOCHS epochs of
        this process but its first (which traced the step and filled the cache); when the
        first is all there is (a resumed run that started inside it, `updates` done here), its
        part without the first, tracing update, scaled to a whole epoch."""
        if updates > steps_per_epoch and len(self.epochs) > 1:
            recent = self.epochs[1:][-replan.RECENT_EPOCHS:]
            return sum(recent) / len(recent)
        return (self.epochs[-1] - self.first) * steps_per_epoch / max(1, updates - 1)

    def epoch_end(self) -> None:
        now = time.perf_counter()
        self.epochs.append(now - self.epoch_start)
        self.epoch_start = now

    def result(self) -> Dict[str, object]:
        """The TrainResult's speed fields (none when no update was timed)."""
        if not self.seconds:
            return {}
        return {'examples_per_second': self.examples / self.seconds,
                'input_wait_fraction': min(1.0, self.wait / self.seconds),
                'epoch_seconds': tuple(round(e, 1) for e in self.epochs)}


def _log_window(steps, options, step, window, start_step, run_start) -> Dict[str, float]:
    elapsed = time.perf_counter() - window.start
    examples = window.steps * options.examples_per_update
    result = {'train_loss': window.loss / window.steps,
              'train_accuracy': window.correct / examples}
    lr = float(steps.optimizer.learning_rate)
    scalars = {'train/loss': result['train_loss'], 'train/accuracy': result['train_accuracy'],
               'train/learning_rate': lr, 'train/loss_scale': float(steps.loss_scale.scale.numpy()),
               'train/skipped_updates': float(steps.skipped_updates.numpy()),
               'perf/examples_per_second': examples / elapsed,
               'perf/step_time_seconds': elapsed / window.steps,
               'perf/input_wait_fraction': min(1.0, window.wait / elapsed)}
    for name, value in scalars.items():
        tf.summary.scalar(name, value, step=step)
    done = step - start_step
    eta = (time.perf_counter() - run_start) / done * (options.train_steps - step)
    logging.info('step %d/%d  loss %.4f  acc %.3f  lr %.2e  %.0f ex/s  input wait %.0f%%  '
                 'ETA %.0fs', step, options.train_steps, result['train_loss'],
                 result['train_accuracy'], lr, scalars['perf/examples_per_second'],
                 100 * scalars['perf/input_wait_fraction'], eta)
    return result
