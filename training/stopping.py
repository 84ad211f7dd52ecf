"""Early stopping for the training loop: best-epoch tracking, the stop rules, and why it stopped.

No TFX imports. The rules are pure functions (tested alone); `StoppingState` holds everything
they need as variables (best held-out accuracy and loss, best epoch, the last epoch evaluated,
training seconds spent, why training stopped) plus a copy of the best epoch's model variables,
so the loop puts it in its tf.train.Checkpoint: a run killed mid-epoch and rerun stops at the
same epoch with the same best weights as an uninterrupted one.
"""
import math
from typing import Callable, Optional

import tensorflow as tf

# Why training stopped (StoppingState.stop_code): still running or ran its planned length,
# patience ran out, the time budget was spent.
RUNNING, PATIENCE, BUDGET = 0, 1, 2


def improved(accuracy: float, loss: float, best_accuracy: float, best_loss: float) -> bool:
    """Higher held-out accuracy is better; at equal accuracy, lower loss breaks the tie."""
    return accuracy > best_accuracy or (accuracy == best_accuracy and loss < best_loss)


def patience_ran_out(epoch: int, progress_epoch: int, patience: int,
                     counted_from: int = 0) -> bool:
    """True after `patience` epochs without progress (patience 0: never), counted from the last
    epoch that made progress, or from epoch `counted_from` when that is later (patience_start).

    Progress is a held-out accuracy above the best or a held-out loss below the lowest so far
    (StoppingState.record): the loss moves smoothly where the accuracy of a few thousand examples
    swings by tenths of a point either way, so a plateau is where both have stopped improving.
    """
    return patience > 0 and epoch - max(progress_epoch, counted_from) >= patience


def patience_start(train_steps: int, warmup_steps: int, steps_per_epoch: int) -> int:
    """The epoch from whose end patience counts: the one in which the cosine schedule enters its
    last quarter (the rate under 15% of its peak). Before it, held-out accuracy swings from epoch
    to epoch by more than an epoch gains, and most of the gain comes as the rate decays: counted
    from the start, or from half the peak, patience stopped long Fashion-MNIST plans a third and
    two thirds of the way in (docs/training.md, "Training length and early stopping")."""
    if not steps_per_epoch:
        return 0
    return epoch_of(warmup_steps + 3 * (train_steps - warmup_steps) // 4, steps_per_epoch)


def budget_spent(seconds: float, budget_seconds: float) -> bool:
    return budget_seconds > 0 and seconds >= budget_seconds


def epoch_of(step: int, steps_per_epoch: int) -> int:
    """The (1-based) epoch a step belongs to; a partial last epoch counts as one."""
    return math.ceil(step / steps_per_epoch)


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    return f'{minutes:g} min' if minutes < 60 else f'{minutes / 60:g} h'


def stop_reason(code: int, *, steps: int, steps_per_epoch: int = 0, max_epochs: float = 0.0,
                epoch: int = 0, best_epoch: int = 0, best_accuracy: float = 0.0,
                patience: int = 0, budget_seconds: float = 0.0, restored: bool = False,
                note: str = '', counted_from: int = 0, progress_epoch: int = 0) -> str:
    """Why training stopped, as one sentence for the log, the summary and the report.

    steps_per_epoch 0 = a fixed length (train_steps); best_epoch 0 = no held-out evaluation.
    `note` says why there was no early stopping, when there was none; counted_from is
    patience_start's epoch, progress_epoch the last that improved accuracy or loss (0: the best).
    """
    best = (f'best {best_accuracy:.4f} at epoch {best_epoch}' if best_epoch else '')
    restore = f"; restored epoch {best_epoch}'s weights" if restored else ''
    if code == PATIENCE:
        epochs = f'{patience} epoch{"s" if patience != 1 else ""}'
        progress_epoch = progress_epoch or best_epoch
        where = (f'epoch {counted_from}, where the schedule entered its last quarter'
                 if counted_from > progress_epoch else f'epoch {progress_epoch}')
        return (f'early stopping: neither held-out accuracy nor loss improved for {epochs} after '
                f'{where} ({best}){restore}')
    if code == BUDGET:
        where = f'in epoch {epoch}' if steps_per_epoch else f'after {steps} steps'
        return (f'time budget of {_minutes(budget_seconds)} spent {where}'
                + (f' ({best})' if best else '') + restore)
    if not steps_per_epoch:
        return f'fixed length: {steps} steps (train_steps / --steps)'
    text = f'ran the maximum of {max_epochs:g} epochs'
    if best:
        text += f' ({best})'
    return text + restore + (f'; no early stopping: {note}' if note else '')


class StoppingState(tf.Module):
    """The loop's early-stopping state as variables, checkpointed with the model.

    Create it under the strategy's scope: the variables are then mirrored like the model's, and
    assigning them in cross-replica context (where the loop runs) updates every copy.
    """

    def __init__(self, model_variables):
        super().__init__(name='stopping')

        def scalar(value, dtype, name):
            return tf.Variable(value, dtype=dtype, trainable=False, name=name)

        self.best_accuracy = scalar(-1.0, tf.float64, 'best_accuracy')
        self.best_loss = scalar(math.inf, tf.float64, 'best_loss')
        self.best_epoch = scalar(0, tf.int64, 'best_epoch')     # 0 = none evaluated yet
        # The lowest held-out loss of any epoch, and the last epoch that improved on the best
        # accuracy or the lowest loss (patience counts from it).
        self.lowest_loss = scalar(math.inf, tf.float64, 'lowest_loss')
        self.progress_epoch = scalar(0, tf.int64, 'progress_epoch')
        self.last_epoch = scalar(0, tf.int64, 'last_epoch')     # the last epoch evaluated
        self.seconds = scalar(0.0, tf.float64, 'seconds')       # training time spent so far
        self.stop_code = scalar(RUNNING, tf.int64, 'stop_code')
        self.stop_step = scalar(0, tf.int64, 'stop_step')
        self._model_variables = list(model_variables)
        self.best_weights = [tf.Variable(tf.convert_to_tensor(v), trainable=False,
                                         name='best_weights') for v in self._model_variables]

    def record(self, epoch: int, accuracy: float, loss: float) -> bool:
        """Notes one epoch's held-out metrics; copies the weights if they are the best so far."""
        self.last_epoch.assign(epoch)
        if (accuracy > float(self.best_accuracy.numpy())
                or loss < float(self.lowest_loss.numpy())):
            self.progress_epoch.assign(epoch)
        self.lowest_loss.assign(min(loss, float(self.lowest_loss.numpy())))
        if not improved(accuracy, loss, float(self.best_accuracy.numpy()),
                        float(self.best_loss.numpy())):
            return False
        self.best_accuracy.assign(accuracy)
        self.best_loss.assign(loss)
        self.best_epoch.assign(epoch)
        for copy, variable in zip(self.best_weights, self._model_variables):
            copy.assign(tf.convert_to_tensor(variable))
        return True

    def restore_best(self) -> bool:
        """Puts the best epoch's weights back into the model, unless the last epoch was best."""
        if not int(self.best_epoch.numpy()) or int(self.best_epoch.numpy()) == int(
                self.last_epoch.numpy()):
            return False
        for copy, variable in zip(self.best_weights, self._model_variables):
            variable.assign(tf.convert_to_tensor(copy))
        return True

    def stop(self, code: int, step: int) -> None:
        self.stop_code.assign(code)
        self.stop_step.assign(step)

    def summary(self) -> dict:
        return {'best_epoch': int(self.best_epoch.numpy()),
                'best_accuracy': float(self.best_accuracy.numpy()),
                'best_loss': float(self.best_loss.numpy()),
                'last_epoch': int(self.last_epoch.numpy()),
                'progress_epoch': int(self.progress_epoch.numpy()),
                'stop_code': int(self.stop_code.numpy())}


def describe(state: StoppingState, options, step: int, restored: bool,
             note: Optional[str] = '') -> str:
    """stop_reason for the state at the end of training (options: loop.LoopOptions)."""
    s = state.summary()
    return stop_reason(
        s['stop_code'], steps=step, steps_per_epoch=options.steps_per_epoch,
        max_epochs=options.max_epochs, epoch=epoch_of(step, options.steps_per_epoch)
        if options.steps_per_epoch else 0, best_epoch=s['best_epoch'],
        best_accuracy=s['best_accuracy'], patience=options.params.patience,
        budget_seconds=options.time_budget_seconds, restored=restored, note=note or '',
        counted_from=patience_start(options.train_steps, options.warmup_steps,
                                    options.steps_per_epoch),
        progress_epoch=s['progress_epoch'])


def agreed_seconds(strategy: tf.distribute.Strategy, seconds: float) -> float:
    """The workers' clocks averaged by one all-reduce: the same number on every worker, so all
    take the same budget decision (ReduceOp has no MAX)."""
    per_replica = strategy.experimental_distribute_values_from_function(
        lambda _: tf.constant(seconds, tf.float64))
    return float(strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None))


class EarlyStopping:
    """The stop rules the loop asks after each update (Orbit's split: the loop evaluates, logs
    and checkpoints; this decides, and notes the decision in the StoppingState).

    The held-out slice is evaluated at each epoch end, and where the time budget stops training
    mid-epoch (so the stop keeps the best weights so far); patience counts from
    patience_start's epoch; a spent budget stops at once. `options` (loop.LoopOptions) are
    passed at each call: the length may have been re-planned (replan.Replanner).
    """

    def __init__(self, state: StoppingState):
        self.state = state

    @staticmethod
    def over_budget(options, clock: Callable[[], float]) -> bool:
        """Whether the time budget is spent; asks the clock (an all-reduce over the workers:
        agreed_seconds) only when there is a budget."""
        return options.time_budget_seconds > 0 and budget_spent(
            clock(), options.time_budget_seconds)

    @staticmethod
    def evaluates(options, step: int, over_budget: bool) -> bool:
        """Whether the held-out slice is evaluated after this update (with epochs only)."""
        per_epoch = options.steps_per_epoch
        return bool(per_epoch) and (step % per_epoch == 0 or step == options.train_steps
                                    or over_budget)

    def decide(self, options, step: int, held_out: Optional[dict], over_budget: bool) -> bool:
        """Whether to stop after this update: records this epoch's held-out metrics (when
        evaluated), then patience, then the budget."""
        if held_out is not None:
            epoch = epoch_of(step, options.steps_per_epoch)
            self.state.record(epoch, held_out['accuracy'], held_out['loss'])
            if patience_ran_out(epoch, int(self.state.progress_epoch.numpy()),
                                options.params.patience,
                                patience_start(options.train_steps, options.warmup_steps,
                                               options.steps_per_epoch)):
                self.state.stop(PATIENCE, step)
                return True
        if over_budget:
            self.state.stop(BUDGET, step)
            return True
        return False
