"""Unit tests of the outer loop: options, schedule, TensorBoard scalars, checkpoint and resume."""
import glob
import os
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from training import flip_choice, loop, progress, steps as steps_lib


def _separable_data(n=96, dim=4, num_classes=3):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, num_classes, n).astype(np.int32)
    centers = rng.normal(size=(num_classes, dim)) * 4
    return (centers[labels] + rng.normal(size=(n, dim))).astype(np.float32), labels


def _steps(options, replannable=False):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    planned = loop.planned_steps_variable(options) if replannable else None
    return steps_lib.StepFunctions(model, loop.make_optimizer(options, planned),
                                   tf.distribute.get_strategy(), options.params.global_batch_size,
                                   options.params.accumulation_steps, planned_steps=planned)


def _stream(points, labels, batch):
    return lambda skip: (tf.data.Dataset.from_tensor_slices((points, labels)).repeat()
                         .skip(skip).batch(batch, drop_remainder=True))


@pytest.mark.parametrize('kwargs, field', [
    (dict(train_steps=0), 'train_steps'), (dict(global_batch_size=-1), 'global_batch_size'),
    (dict(learning_rate=-1.0), 'learning_rate'), (dict(warmup_steps=-1), 'warmup'),
    (dict(accumulation_steps=0), 'accumulation_steps'), (dict(optimizer='lamb'), 'optimizer'),
    (dict(checkpoint_interval=0), 'checkpoint_interval'), (dict(eval_steps=-1), 'eval_steps'),
    (dict(log_every=0), 'log_every')])
def test_options_are_validated(kwargs, field):
    args = dict(train_steps=10, global_batch_size=8, learning_rate=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=field):
        loop.LoopOptions.of(**args)


def test_a_warm_up_longer_than_the_plan_is_shortened_to_fit():
    assert loop.LoopOptions.of(train_steps=5, warmup_steps=5).warmup_steps == 4
    assert loop.LoopOptions.of(train_steps=50, warmup_steps=5).warmup_steps == 5


def test_adamw_decays_the_weights_as_asked():
    assert loop.make_optimizer(loop.LoopOptions.of(train_steps=10, optimizer='adamw',
                                                   weight_decay=0.01)).weight_decay == 0.01
    assert loop.make_optimizer(loop.LoopOptions.of(train_steps=10, optimizer='adamw')
                               ).weight_decay == 0.004  # Keras' own default, as before


def test_schedule_warms_up_then_decays_to_zero():
    options = loop.LoopOptions.of(train_steps=100, global_batch_size=8, learning_rate=0.1,
                               warmup_steps=10)
    schedule = loop.make_optimizer(options)._learning_rate
    assert [round(float(schedule(s)), 6) for s in (0, 5, 10)] == [0.0, 0.05, 0.1]
    assert float(schedule(55)) == pytest.approx(0.05, rel=1e-4)
    assert float(schedule(100)) == pytest.approx(0.0, abs=1e-7)


def test_training_learns_and_writes_every_tensorboard_scalar(tmp_path):
    points, labels = _separable_data()
    options = loop.LoopOptions.of(train_steps=40, global_batch_size=32, learning_rate=0.05,
                               accumulation_steps=2, log_every=10)
    steps = _steps(options)
    eval_data = tf.data.Dataset.from_tensor_slices((points, labels)).batch(32)
    before = steps.evaluate(eval_data)
    result = loop.run_training(steps, _stream(points, labels, 32), options,
                               log_dir=str(tmp_path), eval_fn=lambda: steps.evaluate(eval_data))
    assert result.eval_loss < before['loss'] / 2 and result.eval_accuracy > 0.9
    assert result.start_step == 0 and result.skipped_updates == 0
    scalars = {}
    for path in glob.glob(str(tmp_path / 'events.out.tfevents.*')):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append(
                    (event.step, float(tf.make_ndarray(value.tensor))))
    assert {'train/loss', 'train/accuracy', 'train/learning_rate', 'train/loss_scale',
            'eval/loss', 'eval/accuracy', 'perf/examples_per_second', 'perf/step_time_seconds',
            'perf/input_wait_fraction'} <= set(scalars)
    assert [step for step, _ in scalars['train/loss']] == [10, 20, 30, 40]
    assert all(0.0 <= v <= 1.0 for _, v in scalars['perf/input_wait_fraction'])
    assert all(v > 0 for _, v in scalars['perf/examples_per_second'])


def test_resume_continues_from_the_checkpoint_and_matches_an_uninterrupted_run(tmp_path):
    points, labels = _separable_data()
    options = loop.LoopOptions.of(train_steps=12, global_batch_size=16, learning_rate=0.05,
                               checkpoint_interval=4, optimizer='sgd')
    straight = _steps(options)
    loop.run_training(straight, _stream(points, labels, 16), options)

    ckpt = str(tmp_path / 'ckpt')
    first = _steps(options)
    # Interrupt after step 8's checkpoint: this run's data ends during step 9.

    def data_until_9(skip):
        return _stream(points, labels, 16)(skip).take(9 - skip // 16)

    with pytest.raises(tf.errors.OutOfRangeError):
        loop.run_training(first, data_until_9, options, checkpoint_dir=ckpt)
    assert tf.train.latest_checkpoint(ckpt).endswith('ckpt-8')

    resumed = _steps(options)  # a fresh process would start from new weights
    result = loop.run_training(resumed, _stream(points, labels, 16), options, checkpoint_dir=ckpt)
    assert result.start_step == 8 and int(resumed.step.numpy()) == 12
    for a, b in zip(straight.model.get_weights(), resumed.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    assert os.path.exists(os.path.join(ckpt, 'ckpt-12.index'))


def test_the_plan_is_cut_after_the_second_epoch_and_a_rerun_keeps_the_cut_plan(tmp_path):
    points, labels = _separable_data()
    # 10 epochs of 4 updates planned; no epoch fits the target, so the fewest timed epochs run.
    options = loop.LoopOptions.of(train_steps=40, global_batch_size=16, learning_rate=0.05,
                                  steps_per_epoch=4, max_epochs=10, time_target_seconds=1e-3,
                                  checkpoint_interval=4)
    ckpt = str(tmp_path / 'ckpt')
    steps = _steps(options, replannable=True)
    result = loop.run_training(steps, _stream(points, labels, 16), options, checkpoint_dir=ckpt)
    assert result.steps_run == 12 and result.epochs_run == 3
    assert 'planned 3 of 10 epochs after the first 2 took' in result.stop_reason
    assert float(steps.optimizer.learning_rate) == pytest.approx(0.0, abs=1e-7)  # decayed
    assert len(result.epoch_seconds) == 3 and result.examples_per_second > 0
    # A rerun over the same checkpoints keeps the cut plan instead of training on to 40.
    again = loop.run_training(_steps(options, replannable=True), _stream(points, labels, 16),
                              options, checkpoint_dir=ckpt)
    assert again.start_step == again.steps_run == 12
    assert 'planned 3 epochs before this attempt, to fit' in again.stop_reason


def _slowing_stream(points, labels, batch, slow_from, seconds):
    """_stream whose batches after the first slow_from examples each take `seconds` more, as
    when another process takes a core part way through training."""
    def delay(position, point, label):
        def wait(p):
            if p >= slow_from:
                time.sleep(seconds)
            return p
        tf.py_function(wait, [position], tf.int64)
        return point, label

    def make(skip):
        return (tf.data.Dataset.from_tensor_slices((points, labels)).repeat().enumerate()
                .skip(skip).batch(batch, drop_remainder=True)
                .map(lambda p, xy: delay(p[0], *xy)))
    return make


def test_a_run_that_slows_down_part_way_is_re_planned_to_end_near_its_target():
    points, labels = _separable_data()
    # 30 epochs of 4 updates planned; from epoch 4 each update waits 0.2 s (0.8 s an epoch), so
    # the 27 epochs left would take 22 s against a target of 6 s: cut at epoch 2 only, the run
    # would overrun by 16 s.
    target, slow_epoch = 6.0, 0.8
    options = loop.LoopOptions.of(train_steps=120, global_batch_size=16, learning_rate=0.05,
                                  steps_per_epoch=4, max_epochs=30, time_target_seconds=target)
    steps = _steps(options, replannable=True)
    result = loop.run_training(steps, _slowing_stream(points, labels, 16, 3 * 64, 0.2), options)
    seconds = result.epoch_seconds
    assert result.plan_changes >= 1 and 4 <= result.epochs_run < 20, result
    assert 're-planned' in result.stop_reason and 'at epoch' in result.stop_reason
    # Within the band of one epoch (plus the lag of the recent mean's one more).
    assert sum(seconds) <= target + 2 * slow_epoch + 0.5, seconds
    assert int(steps.planned_steps.numpy()) == result.steps_run  # the schedule's end moved
    assert float(steps.optimizer.learning_rate) == pytest.approx(0.0, abs=1e-7)  # decayed


def test_flips_that_start_at_an_epoch_end_rebuild_the_stream_where_it_was():
    points, labels = _separable_data()
    options = loop.LoopOptions.of(train_steps=24, global_batch_size=16, learning_rate=0.05,
                                  steps_per_epoch=4, max_epochs=6)
    steps = _steps(options)
    with steps.strategy.scope():
        # Mirroring keeps the labels (0.9 held out, 0.9 mirrored), and the model scores its
        # train images (0.99) far above the held-out ones: flips start after epoch 1.
        choice = flip_choice.FlipChoice(
            'auto', 3, lambda kind: {'accuracy': 0.99 if kind == 'train' else 0.9})
    built = []

    def make_train_data(skip):
        built.append((skip, choice.flip_now()))
        return _stream(points, labels, 16)(skip)
    result = loop.run_training(steps, make_train_data, options, flip_choice=choice,
                               held_out_fn=lambda: {'accuracy': 0.9, 'loss': 1.0})
    assert built == [(0, False), (4 * 16, True)]   # the stream again, at its place, with flips
    assert result.steps_run == 24 and 'after epoch 1 the model scored' in choice.reason()


def test_without_a_target_or_a_plan_variable_the_length_stays(tmp_path):
    points, labels = _separable_data()
    options = loop.LoopOptions.of(train_steps=12, global_batch_size=16, learning_rate=0.05,
                                  steps_per_epoch=4, max_epochs=3, time_target_seconds=1e-3)
    result = loop.run_training(_steps(options), _stream(points, labels, 16), options)
    assert result.steps_run == 12 and 'planned' not in result.stop_reason


def test_progress_reports_every_update_and_where_a_rerun_resumes(tmp_path):
    points, labels = _separable_data()
    options = loop.LoopOptions.of(train_steps=20, global_batch_size=32, learning_rate=0.05,
                                  checkpoint_interval=8)
    seen = []
    unsubscribe = progress.subscribe(seen.append)
    try:
        loop.run_training(_steps(options), _stream(points, labels, 32), options,
                          checkpoint_dir=str(tmp_path))
        assert [(p.step, p.total, p.running) for p in (seen[0], seen[-1])] == [
            (0, 20, True), (20, 20, False)]
        assert [p.step for p in seen if p.running] == list(range(21))
        assert seen[-1].checkpoint_step() == 20  # saved at 8, 16 and the last step
        resumed = loop.LoopOptions.of(train_steps=30, global_batch_size=32,
                                      learning_rate=0.05)
        loop.run_training(_steps(resumed), _stream(points, labels, 32), resumed,
                          checkpoint_dir=str(tmp_path))
    finally:
        unsubscribe()
    assert seen[-1].start_step == 20 and seen[-1].step == 30
