"""The timed trial that decides `auto` precision and XLA (training/trial.py, job.decide_step)."""
import keras
import pytest
import tensorflow as tf

from training import job as job_lib, loop, trial

F32, F32_XLA = trial.Candidate('float32', False), trial.Candidate('float32', True)
BF16, BF16_XLA = trial.Candidate('mixed_bfloat16', False), trial.Candidate('mixed_bfloat16', True)


def test_candidates_put_the_default_first_and_follow_what_was_asked():
    assert trial.candidates(['float32', 'mixed_bfloat16'], 'auto') == [F32, F32_XLA, BF16,
                                                                        BF16_XLA]
    assert trial.candidates(['float32'], 'off') == [F32]
    assert trial.candidates(['mixed_bfloat16'], 'on') == [BF16_XLA]


@pytest.mark.parametrize('rates, expected', [
    ({F32: 1000.0, F32_XLA: 520.0, BF16: 1040.0}, F32),      # 4% faster: within the noise
    ({F32: 1000.0, F32_XLA: 520.0, BF16: 1060.0}, BF16),     # 6%: it wins
    ({F32: 1000.0, F32_XLA: 1300.0, BF16: 1200.0}, F32_XLA),  # the fastest, not the first win
    ({F32: 1000.0}, F32)])
def test_the_fastest_wins_only_by_the_margin_over_the_default(rates, expected):
    assert trial.choose(rates) == expected


def test_the_figures_read_as_ratios_to_the_default():
    assert trial.describe({'float32': 1520.0, 'float32 + XLA': 790.0}) == (
        'float32 1,520 img/s; float32 + XLA 790 img/s (0.52x)')
    assert trial.describe({}) == ''


def _job(shape=(8, 8, 1), steps=10, **params):
    return job_lib.TrainJob(
        train_pattern='', eval_pattern='', class_names=tuple('0123456789'), image_shape=shape,
        options=loop.LoopOptions.of(train_steps=steps, global_batch_size=32, learning_rate=1e-3,
                                    model_builder='models.resnet.build_model', **params))


def test_both_asked_is_no_trial():
    decision = job_lib.decide_step(_job(mixed_precision='mixed_bfloat16', xla='on'),
                                   tf.distribute.get_strategy())
    assert decision == trial.Decision('mixed_bfloat16', True, 'asked', 'asked')


@pytest.mark.parametrize('job, workers, why', [
    # The embedded digits' length: 0.3 TFLOP, not worth a trial.
    (_job(steps=440, mixed_precision='auto', xla='auto'), 1, 'TFLOP of training planned'),
    (_job(steps=10 ** 6, mixed_precision='auto', xla='auto'), 2, 'with 2 worker processes')])
def test_without_a_trial_auto_is_float32_without_xla_and_says_why(job, workers, why):
    decision = job_lib.decide_step(job, tf.distribute.get_strategy(), num_gpus=0, bf16_cpu=True,
                                   workers=workers)
    assert (decision.policy, decision.xla, decision.figures) == ('float32', False, {})
    assert why in decision.precision_reason
    assert decision.xla_reason.startswith('no trial') and why in decision.xla_reason


def test_a_trial_times_every_candidate_and_restores_the_policy(monkeypatch):
    monkeypatch.setattr(trial, 'TRIAL_MIN_FLOP', 0)
    monkeypatch.setattr(trial, 'SECONDS', 0.1)
    monkeypatch.setattr(trial, 'ROUNDS', 1)
    job = _job(mixed_precision='auto', xla='auto')
    decision = job_lib.decide_step(job, tf.distribute.get_strategy(), num_gpus=0, bf16_cpu=True,
                                   workers=1)
    assert list(decision.figures) == ['float32', 'float32 + XLA', 'mixed_bfloat16',
                                      'mixed_bfloat16 + XLA']
    assert all(rate > 0 for rate in decision.figures.values())
    labels = {c.label: c for c in (F32, F32_XLA, BF16, BF16_XLA)}
    expected = trial.choose({labels[k]: v for k, v in decision.figures.items()})
    assert (decision.policy, decision.xla) == expected
    assert decision.precision_reason.startswith('auto: ')
    assert decision.trial_text().startswith('float32 ')
    assert keras.mixed_precision.global_policy().name == 'float32'
