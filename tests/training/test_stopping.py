"""Early stopping: the rules and their sentences, the held-out split, and the loop that uses them
(best weights restored, resume mid-epoch, the time budget)."""
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from core import features
from training import data, loop, stopping, steps as steps_lib
from helpers import DIGITS


@pytest.mark.parametrize('accuracy, loss, expected', [
    (0.9, 0.5, True), (0.8, 0.5, False), (0.85, 0.39, True), (0.85, 0.4, False),
    (0.85, 0.41, False)])
def test_higher_accuracy_improves_and_lower_loss_breaks_ties(accuracy, loss, expected):
    assert stopping.improved(accuracy, loss, 0.85, 0.4) is expected


def test_patience_budget_and_epoch_rules():
    assert not stopping.patience_ran_out(epoch=5, progress_epoch=3, patience=3)
    assert stopping.patience_ran_out(epoch=6, progress_epoch=3, patience=3)
    assert not stopping.patience_ran_out(epoch=60, progress_epoch=3, patience=0)  # 0 = never
    # Counted from the schedule's half-peak epoch when the best came before it.
    assert not stopping.patience_ran_out(epoch=6, progress_epoch=3, patience=3, counted_from=5)
    assert stopping.patience_ran_out(epoch=8, progress_epoch=3, patience=3, counted_from=5)
    assert stopping.patience_ran_out(epoch=9, progress_epoch=6, patience=3, counted_from=5)
    # The last quarter of the cosine decay, after the warm-up.
    assert stopping.patience_start(train_steps=40, warmup_steps=0, steps_per_epoch=2) == 15
    assert stopping.patience_start(train_steps=44, warmup_steps=4, steps_per_epoch=4) == 9
    assert stopping.patience_start(train_steps=40, warmup_steps=0, steps_per_epoch=0) == 0
    assert stopping.budget_spent(600.0, 600.0) and not stopping.budget_spent(599.0, 600.0)
    assert not stopping.budget_spent(1e9, 0.0)  # 0 = no budget
    assert [stopping.epoch_of(s, 4) for s in (1, 4, 5, 8, 9)] == [1, 1, 2, 2, 3]


def test_stop_reasons_say_why():
    assert stopping.stop_reason(stopping.PATIENCE, steps=90, steps_per_epoch=10, max_epochs=20,
                                epoch=12, best_epoch=9, best_accuracy=0.93124, patience=3,
                                restored=True) == (
        "early stopping: neither held-out accuracy nor loss improved for 3 epochs after epoch 9 "
        "(best 0.9312 at epoch 9); restored epoch 9's weights")
    # The loss improved after the best accuracy: patience counted from that epoch.
    assert stopping.stop_reason(stopping.PATIENCE, steps=110, steps_per_epoch=10, max_epochs=20,
                                epoch=14, best_epoch=9, best_accuracy=0.93124, patience=3,
                                restored=True, progress_epoch=11) == (
        "early stopping: neither held-out accuracy nor loss improved for 3 epochs after epoch 11 "
        "(best 0.9312 at epoch 9); restored epoch 9's weights")
    # The best epoch before the half-peak epoch: patience counted from the latter.
    assert stopping.stop_reason(stopping.PATIENCE, steps=90, steps_per_epoch=10, max_epochs=20,
                                epoch=13, best_epoch=9, best_accuracy=0.93124, patience=3,
                                restored=True, counted_from=10) == (
        'early stopping: neither held-out accuracy nor loss improved for 3 epochs after epoch '
        "10, where the schedule entered its last quarter (best 0.9312 at epoch 9); restored "
        "epoch 9's weights")
    assert stopping.stop_reason(stopping.RUNNING, steps=200, steps_per_epoch=10, max_epochs=20,
                                epoch=20, best_epoch=18, best_accuracy=0.5,
                                restored=True) == (
        "ran the maximum of 20 epochs (best 0.5000 at epoch 18); restored epoch 18's weights")
    assert stopping.stop_reason(stopping.BUDGET, steps=65, steps_per_epoch=10, max_epochs=20,
                                epoch=7, best_epoch=6, best_accuracy=0.9,
                                budget_seconds=600) == (
        'time budget of 10 min spent in epoch 7 (best 0.9000 at epoch 6)')
    assert stopping.stop_reason(stopping.BUDGET, steps=65, budget_seconds=5400) == (
        'time budget of 1.5 h spent after 65 steps')
    assert stopping.stop_reason(stopping.RUNNING, steps=400) == (
        'fixed length: 400 steps (train_steps / --steps)')
    assert stopping.stop_reason(stopping.RUNNING, steps=40, steps_per_epoch=2, max_epochs=20,
                                note='no held-out slice (validation_percent is 0)') == (
        'ran the maximum of 20 epochs; no early stopping: no held-out slice '
        '(validation_percent is 0)')


def _write_train_split(folder, per_class=40):
    os.makedirs(folder)
    with tf.io.TFRecordWriter(os.path.join(folder, 'data-00000-of-00001.gz'), 'GZIP') as writer:
        for label in range(3):
            for name in sorted(os.listdir(os.path.join(DIGITS, str(label))))[:per_class]:
                with open(os.path.join(DIGITS, str(label), name), 'rb') as handle:
                    writer.write(features.make_example(handle.read(), label, str(label), 8, 8,
                                                       name).SerializeToString())
    return os.path.join(folder, '*')


def _images(dataset):
    return sorted(image.tobytes() + bytes([label]) for images, labels in dataset.as_numpy_iterator()
                  for image, label in zip(images, labels))


def test_the_held_out_split_is_deterministic_disjoint_and_covers_the_train_split(tmp_path):
    pattern = _write_train_split(str(tmp_path / 'train'))
    held_in, held_out = data.count_split(pattern, 25)
    assert held_in + held_out == 120 and 15 <= held_out <= 45  # about a quarter
    assert data.count_split(pattern, 25) == (held_in, held_out)
    assert data.count_split(pattern, 0) == (120, 0)
    everything = _images(data.eval_dataset(pattern, 32, (8, 8, 1)))
    out = _images(data.held_out_dataset(pattern, 25, 32, (8, 8, 1)))
    assert out == _images(data.held_out_dataset(pattern, 25, 32, (8, 8, 1)))
    # The (shuffled, endless) train stream's first pass: the held-in examples, each once.
    stream = data.train_dataset(pattern, 1, (8, 8, 1), seed=3, held_out_percent=25)
    kept = _images(stream.take(held_in))
    assert len(out) == held_out and sorted(kept + out) == everything


def test_the_train_sample_is_held_in_and_spread_over_the_classes_of_a_sorted_split(tmp_path):
    # The split is written class by class (as ingestion's shards may be): its first records
    # are all of one class, so a sample of them would be scored on that class alone.
    pattern = _write_train_split(str(tmp_path / 'train'))
    sample = data.train_sample_dataset(pattern, 25, 30, 32, (8, 8, 1))
    images = _images(sample)
    out = set(_images(data.held_out_dataset(pattern, 25, 32, (8, 8, 1))))
    assert 15 <= len(images) <= 60 and not out & set(images)   # about 30% of 120, none held out
    counts = [sum(image[-1] == label for image in images) for label in range(3)]
    assert min(counts) >= 5, counts   # every one of the 3 classes, not the first one's only
    assert images == _images(data.train_sample_dataset(pattern, 25, 30, 32, (8, 8, 1)))


def _problem(seed=0):
    """Separable train points, and a held-out slice whose labels are noise: its accuracy goes
    up and down as training moves the boundary, so patience has something to decide."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(3, 4)) * 4
    labels = rng.integers(0, 3, 96).astype(np.int32)
    points = (centers[labels] + rng.normal(size=(96, 4))).astype(np.float32)
    noise = rng.integers(0, 3, 48).astype(np.int32)
    held = (centers[rng.integers(0, 3, 48)] + 3 * rng.normal(size=(48, 4))).astype(np.float32)
    return points, labels, tf.data.Dataset.from_tensor_slices((held, noise)).batch(16)


def _run(tmp_dir=None, stream_limit=None, **option_overrides):
    points, labels, held_out = _problem()
    args = dict(train_steps=40, global_batch_size=16, learning_rate=0.3, optimizer='sgd',
                steps_per_epoch=2, max_epochs=20, patience=2, checkpoint_interval=3)
    args.update(option_overrides)
    options = loop.LoopOptions.of(**args)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    steps = steps_lib.StepFunctions(model, loop.make_optimizer(options),
                                    tf.distribute.get_strategy(), 16)
    snapshots = {}

    def held_out_fn():  # the weights each epoch was judged on, to compare with the restore
        snapshots[steps.step.numpy().item()] = model.get_weights()
        return steps.evaluate(held_out)

    def stream(skip):
        batches = (tf.data.Dataset.from_tensor_slices((points, labels)).repeat().skip(skip)
                   .batch(16, drop_remainder=True))
        return batches.take(stream_limit - skip // 16) if stream_limit else batches
    result = loop.run_training(steps, stream, options, checkpoint_dir=tmp_dir,
                               held_out_fn=held_out_fn)
    return result, model.get_weights(), snapshots


def test_early_stopping_fires_and_restores_the_best_epochs_weights():
    result, weights, snapshots = _run()
    best, run = result.best_epoch, result.epochs_run
    # Patience 2, counted from epoch 15 (the schedule's last quarter: 30 of 40 updates), as the
    # best epoch came before it; before the maximum.
    assert 1 <= best < 15 and run == 17
    assert result.steps_run == 2 * run and result.held_out_accuracy > 0
    for restored, judged in zip(weights, snapshots[2 * best]):
        np.testing.assert_array_equal(restored, judged)
    assert any(not np.array_equal(a, b) for a, b in zip(weights, snapshots[2 * run]))
    assert result.stop_reason == (
        'early stopping: neither held-out accuracy nor loss improved for 2 epochs after epoch '
        '15, where the schedule entered its last quarter '
        f"(best {result.held_out_accuracy:.4f} at epoch {best}); restored epoch {best}'s "
        'weights')


def test_a_run_killed_mid_epoch_stops_like_an_uninterrupted_one(tmp_path):
    straight, straight_weights, _ = _run()
    ckpt = str(tmp_path / 'ckpt')
    # Killed during step 8 (epoch 4 of 2 steps each), after the checkpoints at steps 3 and 6.
    with pytest.raises(tf.errors.OutOfRangeError):
        _run(ckpt, stream_limit=7)
    assert tf.train.latest_checkpoint(ckpt).endswith('ckpt-6')
    resumed, resumed_weights, _ = _run(ckpt)
    assert resumed.start_step == 6
    for key in ('best_epoch', 'epochs_run', 'steps_run', 'held_out_accuracy', 'stop_reason'):
        assert getattr(resumed, key) == getattr(straight, key), key
    for a, b in zip(straight_weights, resumed_weights):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    # A rerun after the stop (say, the export crashed) trains no further and ends the same.
    again, again_weights, _ = _run(ckpt)
    assert again.start_step == again.steps_run == straight.steps_run
    assert again.stop_reason == straight.stop_reason
    for a, b in zip(straight_weights, again_weights):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)


def test_a_spent_time_budget_stops_at_the_next_step_with_the_held_out_judged():
    result, _, snapshots = _run(time_budget_minutes=1e-6 / 60, patience=0)
    assert result.steps_run == 1 and list(snapshots) == [1]  # judged mid-epoch 1
    assert result.stop_reason.startswith('time budget of ')
    assert result.stop_reason.endswith(
        f"spent in epoch 1 (best {result.held_out_accuracy:.4f} at epoch 1)")


def test_without_patience_every_epoch_runs_and_the_best_is_kept():
    result, weights, snapshots = _run(patience=0, train_steps=12, max_epochs=6)
    assert result.epochs_run == 6.0 and len(snapshots) == 6
    assert result.stop_reason.startswith(
        f"ran the maximum of 6 epochs (best {result.held_out_accuracy:.4f} at epoch "
        f"{result.best_epoch})")
    for restored, judged in zip(weights, snapshots[2 * result.best_epoch]):
        np.testing.assert_array_equal(restored, judged)


def _early_stopping():
    weights = [tf.Variable([1.0, 2.0])]
    return stopping.EarlyStopping(stopping.StoppingState(weights)), weights


def test_the_held_out_slice_is_evaluated_at_epoch_ends_the_last_step_and_a_spent_budget():
    options = loop.LoopOptions.of(train_steps=25, steps_per_epoch=10, max_epochs=2.5)
    evaluates = stopping.EarlyStopping.evaluates
    assert [s for s in range(1, 26) if evaluates(options, s, False)] == [10, 20, 25]
    assert evaluates(options, 3, over_budget=True)          # the budget stops mid-epoch
    fixed = loop.LoopOptions.of(train_steps=25)
    assert not any(evaluates(fixed, s, True) for s in (10, 25))   # no epochs: never


def test_the_budget_asks_the_clock_only_when_there_is_one():
    def clock():
        raise AssertionError('an all-reduce every worker would have to join')
    assert not stopping.EarlyStopping.over_budget(loop.LoopOptions.of(train_steps=5), clock)
    budget = loop.LoopOptions.of(train_steps=5, time_budget_minutes=1.0)
    assert stopping.EarlyStopping.over_budget(budget, lambda: 60.0)
    assert not stopping.EarlyStopping.over_budget(budget, lambda: 59.0)


def test_decide_stops_when_patience_runs_out_after_the_schedules_last_quarter():
    # 12 one-update epochs: patience 2 counts from epoch 9 (patience_start), not epoch 1.
    options = loop.LoopOptions.of(train_steps=12, steps_per_epoch=1, max_epochs=12.0,
                                  patience=2)
    policy, weights = _early_stopping()
    decided = []
    for step in range(1, 13):
        weights[0].assign([step, step])
        decided.append(policy.decide(options, step, {'accuracy': 0.5 if step == 1 else 0.4,
                                                     'loss': 1.0}, over_budget=False))
        if decided[-1]:
            break
    assert decided == [False] * 10 + [True]                 # stopped after epoch 11
    summary = policy.state.summary()
    assert (summary['best_epoch'], summary['stop_code']) == (1, stopping.PATIENCE)
    assert policy.state.restore_best() and weights[0].numpy().tolist() == [1.0, 1.0]


def test_decide_stops_on_a_spent_budget_and_records_the_epoch_first():
    options = loop.LoopOptions.of(train_steps=20, steps_per_epoch=10, max_epochs=2.0,
                                  time_budget_minutes=1.0)
    policy, _ = _early_stopping()
    assert not policy.decide(options, 10, {'accuracy': 0.7, 'loss': 0.5}, over_budget=False)
    assert policy.decide(options, 13, {'accuracy': 0.8, 'loss': 0.4}, over_budget=True)
    summary = policy.state.summary()
    assert (summary['best_epoch'], summary['stop_code']) == (2, stopping.BUDGET)
    assert int(policy.state.stop_step.numpy()) == 13


def test_a_whole_percent_holds_out_what_it_did_with_100_buckets_and_a_finer_share_less(tmp_path):
    # Models trained on a whole percent's slice before shares finer than a percent keep it:
    # the records whose hash modulo 100 is below the percent, as the 100 buckets were.
    pattern = _write_train_split(str(tmp_path / 'train'))
    records = list(data._records(pattern).as_numpy_iterator())
    coarse = tf.strings.to_hash_bucket_fast(records, 100).numpy()

    def slice_of(share):
        return {r for r in data._records(pattern).filter(
            lambda r: data._held_out(r, share)).as_numpy_iterator()}
    for percent in (1, 10, 25, 50):
        assert slice_of(percent) == {r for r, b in zip(records, coarse) if b < percent}
    # A share to 0.01% is a subset of the next whole percent's slice, and holds the whole
    # percents below it: 25.5% of 120 records is between 25% and 26%.
    finer = slice_of(25.5)
    assert slice_of(25) <= finer <= slice_of(26)
    assert data.count_split(pattern, 25.5) == (120 - len(finer), len(finer))
    # The train stream leaves out exactly that slice.
    stream = data.train_dataset(pattern, 1, (8, 8, 1), seed=3, held_out_percent=25.5)
    everything = _images(data.eval_dataset(pattern, 32, (8, 8, 1)))
    kept = _images(stream.take(120 - len(finer)))
    out = _images(data.held_out_dataset(pattern, 25.5, 32, (8, 8, 1)))
    assert len(out) == len(finer) and sorted(kept + out) == everything
