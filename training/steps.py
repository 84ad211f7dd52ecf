"""The inner training step: micro-batches, gradient accumulation, one all-reduce, one update.

No TFX imports. One call of `train_step` is one optimizer update:
1. k times (k = accumulation_steps), inside the same tf.function: take a micro-batch, compute
   the per-replica loss as sum / (global batch x k), and add the (loss-scaled) gradients to
   replica-local accumulators. No cross-replica traffic and no host round trip here. (With
   k = 1 there is no loop and no accumulator: the micro-batch's gradients go straight to 2.)
2. One all-reduce (SUM) of the accumulated gradients, in replica context.
3. In cross-replica context: unscale, check every gradient is finite (all replicas see the
   same reduced values, so they agree), and apply the update only if so; skipped updates are
   counted and never touch the weights. The optimizer's iteration counter, which drives the
   learning-rate schedule, therefore advances once per applied update, not per micro-batch.

The optimizer is applied outside strategy.run with already-reduced gradients, so Keras does not
reduce them a second time (its all-reduce only runs in replica context).

A frozen-backbone warm-up (`set_frozen(True)`) trains only what is outside the model's layer
named `backbone` (models/applications.py): Keras' `trainable = False` leaves its weights and its
BatchNorm statistics alone, and its backward pass is not computed. The step is compiled once per
state; the optimizer was built over every weight, so unfreezing keeps its slots.
"""
import keras
import tensorflow as tf
from tensorflow.python.framework import config as tf_config  # no public getter in TF 2.16

from training.precision import DynamicLossScale

_SUM = tf.distribute.ReduceOp.SUM
BACKBONE = 'backbone'  # the layer a frozen-backbone warm-up freezes (models/applications.py)


def _replica_local(initial, name: str) -> tf.Variable:
    return tf.Variable(initial, trainable=False, name=name,
                       synchronization=tf.VariableSynchronization.ON_READ,
                       aggregation=tf.VariableAggregation.SUM)


class StepFunctions:
    """Compiled train and eval steps for one model, optimizer and strategy."""

    def __init__(self, model: keras.Model, optimizer: keras.optimizers.Optimizer,
                 strategy: tf.distribute.Strategy, global_batch_size: int,
                 accumulation_steps: int = 1, loss_scale: DynamicLossScale = None,
                 jit_compile: bool = False, planned_steps: tf.Variable = None,
                 label_smoothing: float = 0.0):
        if accumulation_steps < 1:
            raise ValueError(f'accumulation_steps must be >= 1, got {accumulation_steps}')
        self.model, self.optimizer, self.strategy = model, optimizer, strategy
        self.global_batch_size = global_batch_size
        self.accumulation_steps = accumulation_steps
        self.label_smoothing = float(label_smoothing)
        # A function of its own, called in each replica: TensorFlow optimises the model's
        # forward and backward pass as one unit (measured: ~25% faster under MirroredStrategy
        # on these CPUs than the same ops inlined into the distributed step). With jit_compile
        # XLA compiles that unit (the forward and backward pass, not the input, the all-reduce
        # or the update, which XLA cannot take on a CPU); training/trial.py decides it.
        self.jit_compile = jit_compile
        # The planned updates the learning-rate schedule decays over (loop.make_optimizer), when
        # the loop may re-plan them after the first epoch; checkpointed so a resumed run keeps
        # the plan.
        self.planned_steps = planned_steps
        self._gradients_fn = tf.function(self._replica_gradients, reduce_retracing=True,
                                         jit_compile=jit_compile)
        # Gradients reach the optimizer already all-reduced by us (one collective per update)
        # and it is applied outside strategy.run; Keras would otherwise all-reduce them again,
        # in the default replica context, which fails on per-replica values. This hooks a
        # private method of the pinned Keras 3.6; the equivalence tests fail loudly if it moves.
        optimizer._all_reduce_sum_gradients = lambda grads_and_vars: list(grads_and_vars)
        with strategy.scope():
            # Built under the scope so the slot variables are mirrored like the weights.
            optimizer.build(model.trainable_variables)
            self.loss_scale = loss_scale or DynamicLossScale(enabled=False)
            self.step = tf.Variable(0, trainable=False, dtype=tf.int64, name='step')
            self.skipped_updates = tf.Variable(0, trainable=False, dtype=tf.int64, name='skipped')
            # ON_READ variables are replica-local: each replica accumulates its own gradients,
            # and its loss and correct-count sums, which travel in the same all-reduce.
            # (Not needed, so not created, without accumulation.)
            self._accumulators = {} if accumulation_steps == 1 else {
                id(v): _replica_local(tf.zeros_like(v), 'grad_acc')
                for v in model.trainable_variables}
            self._loss_acc = _replica_local(tf.constant(0.0), 'loss_acc')
            self._correct_acc = _replica_local(tf.constant(0.0), 'correct_acc')
        self.frozen = False

    def set_frozen(self, frozen: bool) -> None:
        """Trains only the layers outside `backbone` (True), or every layer again (False)."""
        if frozen == self.frozen:
            return
        try:
            backbone = self.model.get_layer(BACKBONE)
        except ValueError:
            raise ValueError(f'a frozen-backbone warm-up needs a model with a layer named '
                             f'{BACKBONE!r} (the models.applications builders have one); '
                             f'{self.model.name} has none') from None
        backbone.trainable = not frozen
        self.frozen = frozen

    def checkpoint_items(self) -> dict:
        """What a checkpoint must hold to resume this loop exactly."""
        items = {'model': self.model, 'optimizer': self.optimizer, 'step': self.step,
                 'skipped_updates': self.skipped_updates, 'loss_scale': self.loss_scale.scale,
                 'good_updates': self.loss_scale.good_updates}
        if self.planned_steps is not None:
            items['planned_steps'] = self.planned_steps
        return items

    def _per_example_loss(self, labels, logits):
        # Logits are cast to float32 whatever the compute dtype, so the loss is always exact.
        logits = tf.cast(logits, tf.float32)
        loss = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        if not self.label_smoothing:
            return loss
        # Label smoothing e: the target is (1 - e) on the label plus e / K on every class, so
        # the loss is (1 - e) x cross-entropy + e x the mean over classes of -log p (Keras'
        # categorical `label_smoothing`, without one-hot labels).
        uniform = -tf.reduce_mean(tf.nn.log_softmax(logits), axis=-1)
        return (1.0 - self.label_smoothing) * loss + self.label_smoothing * uniform

    @staticmethod
    def _correct(labels, logits):
        predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32))

    def _replica_gradients(self, images, labels, frozen):
        """(scaled gradients, loss, correct count) of one micro-batch on this replica.

        `frozen` is not read: as a Python value it gives each backbone state its own trace,
        which captures that state's trainable variables."""
        k = self.accumulation_steps
        with tf.GradientTape() as tape:
            logits = self.model(images, training=True)
            per_example = self._per_example_loss(labels, logits)
            # Averaged over every example of the update: global batch x k micro-batches.
            loss = tf.nn.compute_average_loss(per_example,
                                              global_batch_size=self.global_batch_size * k)
            if self.model.losses:
                # Added on every replica and every micro-batch: divide by both counts.
                loss += tf.nn.scale_regularization_loss(tf.add_n(self.model.losses)) / k
            scaled_loss = loss * self.loss_scale.scale
        grads = tape.gradient(scaled_loss, self.model.trainable_variables)
        grads = [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                 for g, v in zip(grads, self.model.trainable_variables)]
        return grads, loss, self._correct(labels, logits)

    def _replica_accumulate(self, images, labels, frozen):
        grads, loss, correct = self._gradients_fn(images, labels, frozen)
        for accumulator, grad in zip(self._current_accumulators(), grads):
            accumulator.assign_add(grad)
        self._loss_acc.assign_add(loss)
        self._correct_acc.assign_add(correct)

    def _replica_reduce(self, local=None):
        """The update's only cross-replica communication: one batched all-reduce.

        `local` is [grads..., loss, correct] of a single micro-batch (no accumulation: the
        accumulators are skipped altogether), or None to reduce the accumulators.
        """
        if local is None:
            accumulators = self._current_accumulators() + [self._loss_acc, self._correct_acc]
            local = [tf.identity(a) for a in accumulators]
            for accumulator in accumulators:
                accumulator.assign(tf.zeros_like(accumulator))
        reduced = tf.distribute.get_replica_context().all_reduce(_SUM, local)
        grads = [g / self.loss_scale.scale for g in reduced[:-2]]
        finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
        return grads, finite, reduced[-2], reduced[-1]

    def _current_accumulators(self):
        return [self._accumulators[id(v)] for v in self.model.trainable_variables]

    def _replica_single(self, images, labels, frozen):
        grads, loss, correct = self._gradients_fn(images, labels, frozen)
        return self._replica_reduce(grads + [loss, correct])

    def _timed_next(self, iterator):
        """next(iterator), and the seconds spent waiting for it (measured in the graph)."""
        if tf_config.is_op_determinism_enabled():
            # tf.timestamp is refused under op determinism: report no wait rather than fail.
            return next(iterator), tf.constant(0.0, tf.float64)
        start = tf.timestamp()
        with tf.control_dependencies([start]):
            batch = next(iterator)
        ready = tf.nest.flatten(self.strategy.experimental_local_results(batch))
        with tf.control_dependencies(ready):
            return batch, tf.timestamp() - start

    def train_step(self, iterator):
        """One optimizer update; returns (loss, correct count, input wait seconds, applied)."""
        return self._train_step(iterator, self.frozen)

    @tf.function
    def _train_step(self, iterator, frozen):
        if self.accumulation_steps == 1:
            # No loop and no accumulators: the plain step, as fast as an un-accumulated loop.
            (images, labels), wait = self._timed_next(iterator)
            reduced = self.strategy.run(self._replica_single, args=(images, labels, frozen))
        else:
            wait = tf.constant(0.0, tf.float64)
            for _ in tf.range(self.accumulation_steps):
                (images, labels), waited = self._timed_next(iterator)
                self.strategy.run(self._replica_accumulate, args=(images, labels, frozen))
                wait += waited
            reduced = self.strategy.run(self._replica_reduce)
        grads, finite, loss_sum, correct_sum = reduced
        # Identical on every replica after the all-reduce: the first local copy speaks for all.
        finite, loss_sum, correct_sum = (self.strategy.experimental_local_results(v)[0]
                                         for v in (finite, loss_sum, correct_sum))

        def apply():
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
            return tf.constant(True)

        def skip():
            self.skipped_updates.assign_add(1)
            return tf.constant(False)

        applied = tf.cond(finite, apply, skip)
        self.loss_scale.update(finite)
        self.step.assign_add(1)
        return loss_sum, correct_sum, wait, applied

    def _replica_eval(self, images, labels):
        logits = self.model(images, training=False)
        loss_sum = tf.reduce_sum(self._per_example_loss(labels, logits))
        return loss_sum, self._correct(labels, logits), tf.cast(tf.shape(labels)[0], tf.float32)

    @tf.function
    def eval_step(self, batch):
        images, labels = batch
        sums = self.strategy.run(self._replica_eval, args=(images, labels))
        return [self.strategy.reduce(_SUM, s, None) for s in sums]

    def evaluate(self, dataset: tf.data.Dataset, max_batches: int = 0) -> dict:
        """Loss and accuracy over the split (or its first max_batches): sums, then one division."""
        loss_sum = correct = count = 0.0
        for index, batch in enumerate(self.strategy.experimental_distribute_dataset(dataset)):
            if max_batches and index >= max_batches:
                break
            batch_loss, batch_correct, batch_count = self.eval_step(batch)
            loss_sum += float(batch_loss)
            correct += float(batch_correct)
            count += float(batch_count)
        if count == 0:
            raise ValueError('The evaluation split is empty.')
        return {'loss': loss_sum / count, 'accuracy': correct / count, 'examples': count}
