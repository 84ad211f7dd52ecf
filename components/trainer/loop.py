"""The custom training loop under tf.distribute: the inner steps and the outer loop.

No TFX imports, so the loop can be tested alone. Following Orbit's split:
- `StepFunctions` holds the per-replica maths (`strategy.run`) and the cross-replica reduction;
- `run_training` is the outer loop: it owns iteration, logging, TensorBoard and evaluation.

The loss is a per-example sum divided by the *global* batch (tf.nn.compute_average_loss), so
gradients summed across replicas by the optimizer equal the gradient of the global-batch mean,
whatever the replica count.
"""
import dataclasses
import time
from typing import Callable, Dict, Optional

from absl import logging
import keras
import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class LoopOptions:
    """Hyper-parameters of one training run, validated at construction."""
    train_steps: int
    global_batch_size: int
    learning_rate: float
    warmup_steps: int = 0
    log_every: int = 50

    def __post_init__(self):
        if self.train_steps < 1:
            raise ValueError(f'train_steps must be >= 1, got {self.train_steps}')
        if self.global_batch_size < 1:
            raise ValueError(f'global_batch_size must be >= 1, got {self.global_batch_size}')
        if not self.learning_rate > 0:
            raise ValueError(f'learning_rate must be > 0, got {self.learning_rate}')
        if not 0 <= self.warmup_steps < self.train_steps:
            raise ValueError(f'warmup_steps must be in [0, train_steps), got {self.warmup_steps}')
        if self.log_every < 1:
            raise ValueError(f'log_every must be >= 1, got {self.log_every}')


def make_optimizer(options: LoopOptions) -> keras.optimizers.Optimizer:
    """Adam with linear warm-up then cosine decay; the schedule advances once per update."""
    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0 if options.warmup_steps else options.learning_rate,
        decay_steps=options.train_steps - options.warmup_steps,
        warmup_target=options.learning_rate if options.warmup_steps else None,
        warmup_steps=options.warmup_steps)
    return keras.optimizers.Adam(learning_rate=schedule)


class StepFunctions:
    """Compiled train and eval steps for one model, optimizer and strategy."""

    def __init__(self, model: keras.Model, optimizer: keras.optimizers.Optimizer,
                 strategy: tf.distribute.Strategy, global_batch_size: int):
        self.model, self.optimizer, self.strategy = model, optimizer, strategy
        self.global_batch_size = global_batch_size

    def _per_example_loss(self, labels, logits):
        # Logits are cast to float32 whatever the compute dtype, so the loss is always exact.
        return keras.losses.sparse_categorical_crossentropy(
            labels, tf.cast(logits, tf.float32), from_logits=True)

    def _replica_train(self, images, labels):
        with tf.GradientTape() as tape:
            logits = self.model(images, training=True)
            per_example = self._per_example_loss(labels, logits)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=self.global_batch_size)
            if self.model.losses:
                # Regularisation is added once per replica, so divide by the replica count.
                loss += tf.nn.scale_regularization_loss(tf.add_n(self.model.losses))
        grads = tape.gradient(loss, self.model.trainable_variables)
        # Keras 3's optimizer all-reduces (sums) the gradients across replicas before applying.
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        correct = tf.reduce_sum(tf.cast(
            tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), labels), tf.float32))
        return loss, correct

    @tf.function
    def train_step(self, iterator):
        images, labels = next(iterator)
        loss, correct = self.strategy.run(self._replica_train, args=(images, labels))
        sum_ = tf.distribute.ReduceOp.SUM
        return self.strategy.reduce(sum_, loss, None), self.strategy.reduce(sum_, correct, None)

    def _replica_eval(self, images, labels):
        logits = self.model(images, training=False)
        loss_sum = tf.reduce_sum(self._per_example_loss(labels, logits))
        correct = tf.reduce_sum(tf.cast(
            tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), labels), tf.float32))
        return loss_sum, correct, tf.cast(tf.shape(labels)[0], tf.float32)

    @tf.function
    def eval_step(self, batch):
        images, labels = batch
        sums = self.strategy.run(self._replica_eval, args=(images, labels))
        return [self.strategy.reduce(tf.distribute.ReduceOp.SUM, s, None) for s in sums]

    def evaluate(self, dataset: tf.data.Dataset) -> Dict[str, float]:
        """Loss and accuracy over one full pass: sums, then one division, so batches weigh right."""
        loss_sum = correct = count = 0.0
        for batch in self.strategy.experimental_distribute_dataset(dataset):
            batch_loss, batch_correct, batch_count = self.eval_step(batch)
            loss_sum += float(batch_loss)
            correct += float(batch_correct)
            count += float(batch_count)
        if count == 0:
            raise ValueError('The evaluation split is empty.')
        return {'loss': loss_sum / count, 'accuracy': correct / count, 'examples': count}


def run_training(steps: StepFunctions, train_data: tf.data.Dataset, options: LoopOptions,
                 log_dir: Optional[str] = None,
                 eval_fn: Optional[Callable[[], Dict[str, float]]] = None) -> Dict[str, float]:
    """Runs options.train_steps updates, logging progress and TensorBoard scalars.

    Returns the final train loss/accuracy (over the last logging window) and, when eval_fn is
    given, the eval metrics it returns, prefixed with 'eval_'.
    """
    writer = tf.summary.create_file_writer(log_dir) if log_dir else tf.summary.create_noop_writer()
    iterator = iter(steps.strategy.experimental_distribute_dataset(train_data))
    window_loss = window_correct = 0.0
    window_steps, window_start, run_start = 0, time.perf_counter(), time.perf_counter()
    result: Dict[str, float] = {}
    with writer.as_default():
        for step in range(1, options.train_steps + 1):
            loss, correct = steps.train_step(iterator)
            window_loss += float(loss)
            window_correct += float(correct)
            window_steps += 1
            if step % options.log_every == 0 or step == options.train_steps:
                elapsed = time.perf_counter() - window_start
                examples = window_steps * options.global_batch_size
                result = {'train_loss': window_loss / window_steps,
                          'train_accuracy': window_correct / examples}
                lr = float(steps.optimizer.learning_rate)
                for name, value in (('train/loss', result['train_loss']),
                                    ('train/accuracy', result['train_accuracy']),
                                    ('train/learning_rate', lr),
                                    ('perf/examples_per_second', examples / elapsed),
                                    ('perf/step_time_seconds', elapsed / window_steps)):
                    tf.summary.scalar(name, value, step=step)
                eta = (time.perf_counter() - run_start) / step * (options.train_steps - step)
                logging.info('step %d/%d  loss %.4f  acc %.3f  lr %.2e  %.0f ex/s  ETA %.0fs',
                             step, options.train_steps, result['train_loss'],
                             result['train_accuracy'], lr, examples / elapsed, eta)
                window_loss = window_correct = 0.0
                window_steps, window_start = 0, time.perf_counter()
        if eval_fn is not None:
            metrics = eval_fn()
            for name in ('loss', 'accuracy'):
                tf.summary.scalar(f'eval/{name}', metrics[name], step=options.train_steps)
                result[f'eval_{name}'] = metrics[name]
            logging.info('eval after %d steps: loss %.4f  accuracy %.4f on %d examples',
                         options.train_steps, metrics['loss'], metrics['accuracy'],
                         int(metrics['examples']))
    writer.flush()
    return result
