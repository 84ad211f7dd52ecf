"""Unit tests of flips from evidence: the two questions, when they are asked, and a checkpointed
decision."""
import pytest
import tensorflow as tf

from training import flip_choice


def _scores(mirrored, train=0.99, plain=None):
    """evaluate(kind) returning these accuracies (the train sample's, and the held-out slice's
    when the loop has none), recording the kinds asked."""
    calls = []

    def evaluate(kind):
        calls.append(kind)
        return {'accuracy': {'mirrored': mirrored, 'train': train, 'held_out': plain}[kind]}
    return evaluate, calls


@pytest.mark.parametrize('plain, mirrored, classes, keeps', [
    (0.8980, 0.7045, 10, True),   # Fashion-MNIST after epoch 1: (0.7045 - 0.1) / 0.798 = 76%
    (0.74, 0.40, 10, False),      # 47%: under half
    (0.9814, 0.3673, 10, False),  # the digits after epoch 3: 30%
    (0.90, 0.10, 2, False),       # arrows: mirroring swaps the two labels (below chance)
    (0.90, 0.88, 2, True)])
def test_the_labels_keep_when_mirrored_images_keep_half_the_accuracy_above_chance(
        plain, mirrored, classes, keeps):
    # The model scores its train images far above the held-out ones: it needs flips.
    evaluate, calls = _scores(mirrored, train=0.99)
    choice = flip_choice.FlipChoice('auto', classes, evaluate)
    assert not choice.flip_now()
    assert choice.at_epoch_end(1, plain) is keeps and choice.flip_now() is keeps
    assert calls == (['mirrored', 'train'] if keeps else ['mirrored'])
    del calls[:]
    assert not choice.at_epoch_end(2, plain) and not calls  # decided for good
    assert ('keeps' if keeps else 'changes') + ' the labels' in choice.reason()
    assert 'after epoch 1 the held-out images' in choice.reason()


def test_flips_wait_until_the_model_scores_train_images_higher_than_held_out_ones():
    train = iter([0.75, 0.85, 0.90, 0.92, 0.96])
    calls = []

    def evaluate(kind):
        calls.append(kind)
        return {'accuracy': 0.60 if kind == 'mirrored' else next(train)}
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    # Fashion-MNIST in 9 epochs: train and held-out alike, so flips would only slow learning.
    assert [choice.at_epoch_end(e, a) for e, a in ((1, 0.74), (2, 0.85), (3, 0.89),
                                                   (4, 0.91))] == [False] * 4
    assert not choice.flip_now() and 'stayed off' in choice.reason()
    assert '(after epoch 4: 0.9200 against 0.9100)' in choice.reason()
    assert choice.at_epoch_end(5, 0.93) and choice.flip_now()   # 0.96 against 0.93
    assert 'after epoch 5 the model scored its train images higher' in choice.reason()
    assert calls == ['mirrored'] + ['train'] * 5
    assert not choice.at_epoch_end(6, 0.5) and len(calls) == 6  # on for good


def test_a_model_near_chance_is_measured_again_then_flips_stay_off():
    evaluate, calls = _scores(0.30)   # 10 classes: 0.3 is not halfway from 0.1 to 1
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    assert [choice.at_epoch_end(e, 0.3) for e in (1, 2, 3, 4)] == [False] * 4
    assert calls == ['mirrored'] * flip_choice.LAST_PROBE_EPOCH and not choice.flip_now()
    assert 'too close to chance' in choice.reason() and 'after epoch 3' in choice.reason()


def test_a_model_that_learns_by_the_second_epoch_is_tested_there():
    evaluate, _ = _scores(0.78, train=0.9)
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    assert choice.at_epoch_end(1, 0.3) is False and choice.at_epoch_end(2, 0.8) is True
    assert choice.flip_now() and 'after epoch 2 the held-out images' in choice.reason()


def test_without_a_score_from_the_loop_the_held_out_slice_is_scored_here():
    evaluate, calls = _scores(0.70, train=0.99, plain=0.9)
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    assert choice.at_epoch_end(1, -1.0) and calls[:2] == ['held_out', 'mirrored']


@pytest.mark.parametrize('mode, flips', [('on', True), ('off', False)])
def test_asked_flips_are_not_measured(mode, flips):
    evaluate, calls = _scores(0.1)
    choice = flip_choice.FlipChoice(mode, 10, evaluate)
    assert choice.flip_now() is flips and not choice.at_epoch_end(1, 0.5) and not calls
    assert choice.reason() == 'asked'


def test_without_a_held_out_slice_auto_is_off_and_says_why():
    choice = flip_choice.FlipChoice('auto', 10)
    assert not choice.at_epoch_end(1, 0.5) and not choice.flip_now()
    assert choice.reason() == 'auto: no held-out slice to measure it on'
    table = flip_choice.FlipChoice('auto', 3, unmeasured='a table has no image to mirror')
    assert table.reason() == 'auto: a table has no image to mirror'


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match='flip must be one of'):
        flip_choice.FlipChoice('sometimes')


def test_the_decision_and_its_figures_survive_a_checkpoint(tmp_path):
    evaluate, _ = _scores(0.70, train=0.86)
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    choice.at_epoch_end(1, 0.85)                    # keeps the labels, not needed yet
    path = tf.train.Checkpoint(flip_choice=choice).save(str(tmp_path / 'ckpt'))
    evaluate_again, calls = _scores(0.1, train=0.97)   # the labels are not tested again
    resumed = flip_choice.FlipChoice('auto', 10, evaluate_again)
    tf.train.Checkpoint(flip_choice=resumed).restore(path).assert_existing_objects_matched()
    assert not resumed.flip_now() and resumed.reason() == choice.reason()
    assert resumed.at_epoch_end(2, 0.94) and calls == ['train']
    assert '(0.9700 against 0.9400)' in resumed.reason()


@pytest.mark.parametrize('held_in, held_out_percent, expected', [
    (48_000, 10, 4),      # Fashion-MNIST: 53,333 in all, 2,000 of them are 3.75%
    (900, 40, 60),        # a small split: every held-in example
    (10_000_000, 10, 1)])  # never under 1%
def test_the_train_sample_is_about_two_thousand_images(held_in, held_out_percent, expected):
    assert flip_choice.sample_percent(held_in, held_out_percent) == expected
