"""Unit tests of flips from evidence: the two questions, when they are asked, and a checkpointed
decision."""
import pytest
import tensorflow as tf

from training import flip_choice


def _scores(plain, mirrored):
    """evaluate(mirrored) returning these accuracies, counting its calls."""
    calls = []

    def evaluate(mirror):
        calls.append(mirror)
        return {'accuracy': mirrored if mirror else plain, 'loss': 0.0}
    return evaluate, calls


def _epoch(choice, epoch, train, held_out):
    """One epoch of 10 updates of 100 examples at `train` accuracy, then its end."""
    for _ in range(10):
        choice.count(100 * train, 100)
    return choice.at_epoch_end(epoch, held_out)


@pytest.mark.parametrize('plain, mirrored, classes, keeps', [
    (0.8980, 0.7045, 10, True),   # Fashion-MNIST after epoch 1: (0.7045 - 0.1) / 0.798 = 76%
    (0.74, 0.40, 10, False),      # 47%: under half
    (0.9814, 0.3673, 10, False),  # the digits after epoch 3: 30%
    (0.90, 0.10, 2, False),       # arrows: mirroring swaps the two labels (below chance)
    (0.90, 0.88, 2, True)])
def test_the_labels_keep_when_mirrored_images_keep_half_the_accuracy_above_chance(
        plain, mirrored, classes, keeps):
    evaluate, calls = _scores(plain, mirrored)
    choice = flip_choice.FlipChoice('auto', classes, evaluate)
    # The model fits its train images much better than the held-out ones: it needs flips.
    assert _epoch(choice, 1, 0.99, plain) is keeps and choice.flip_now() is keeps
    assert calls == [False, True]
    assert not _epoch(choice, 2, 0.99, plain) and calls == [False, True]  # tested once
    assert ('keeps' if keeps else 'changes') + ' the labels' in choice.reason()
    assert 'after epoch 1' in choice.reason()


def test_flips_wait_until_the_model_fits_its_train_images_better_than_the_held_out_ones():
    evaluate, calls = _scores(0.85, 0.70)   # mirroring keeps the labels
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    # Fashion-MNIST in 9 epochs: train and held-out accuracy alike, flips would only slow it.
    assert [_epoch(choice, e, 0.88 + e / 100, 0.87 + e / 100) for e in (1, 2, 3, 4)] == [
        False] * 4
    assert not choice.flip_now() and 'stayed off' in choice.reason()
    assert '(after epoch 4: 0.9200 against 0.9100)' in choice.reason()
    assert _epoch(choice, 5, 0.95, 0.925) and choice.flip_now()
    assert 'after epoch 5 the model fitted its train images better' in choice.reason()
    assert not _epoch(choice, 6, 0.99, 0.5) and choice.flip_now()  # on for good
    assert calls == [False, True]


def test_a_model_near_chance_is_measured_again_then_flips_stay_off():
    evaluate, calls = _scores(0.30, 0.30)   # 10 classes: not halfway from 0.1 to 1
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    assert [_epoch(choice, e, 0.99, 0.3) for e in (1, 2, 3, 4)] == [False] * 4
    assert len(calls) == 2 * flip_choice.LAST_PROBE_EPOCH and not choice.flip_now()
    assert 'too close to chance' in choice.reason() and 'after epoch 3' in choice.reason()


def test_a_model_that_learns_by_the_second_epoch_is_tested_there():
    scores = iter([0.3, 0.3, 0.8, 0.78])

    def evaluate(mirror):
        return {'accuracy': next(scores)}
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    assert _epoch(choice, 1, 0.99, 0.3) is False and _epoch(choice, 2, 0.99, 0.8) is True
    assert choice.flip_now() and 'after epoch 2 the held-out images' in choice.reason()


@pytest.mark.parametrize('mode, flips', [('on', True), ('off', False)])
def test_asked_flips_are_not_measured(mode, flips):
    evaluate, calls = _scores(0.9, 0.1)
    choice = flip_choice.FlipChoice(mode, 10, evaluate)
    assert choice.flip_now() is flips and not _epoch(choice, 1, 0.99, 0.5) and not calls
    assert choice.reason() == 'asked'


def test_without_a_held_out_slice_auto_is_off_and_says_why():
    choice = flip_choice.FlipChoice('auto', 10)
    assert not _epoch(choice, 1, 0.99, 0.5) and not choice.flip_now()
    assert choice.reason() == 'auto: no held-out slice to measure it on'
    table = flip_choice.FlipChoice('auto', 3, unmeasured='a table has no image to mirror')
    assert table.reason() == 'auto: a table has no image to mirror'


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match='flip must be one of'):
        flip_choice.FlipChoice('sometimes')


def test_the_decision_its_figures_and_a_part_epoch_survive_a_checkpoint(tmp_path):
    evaluate, _ = _scores(0.85, 0.70)
    choice = flip_choice.FlipChoice('auto', 10, evaluate)
    _epoch(choice, 1, 0.86, 0.85)                  # keeps the labels, not needed yet
    for _ in range(5):                              # half of epoch 2 at 0.99, then killed
        choice.count(99, 100)
    path = tf.train.Checkpoint(flip_choice=choice).save(str(tmp_path / 'ckpt'))
    evaluate_again, calls = _scores(0.1, 0.1)   # a resumed run must not test the labels again
    resumed = flip_choice.FlipChoice('auto', 10, evaluate_again)
    tf.train.Checkpoint(flip_choice=resumed).restore(path).assert_existing_objects_matched()
    assert not resumed.flip_now() and resumed.reason() == choice.reason()
    for _ in range(5):                              # the rest of epoch 2 at 0.95: 0.97 in all
        resumed.count(95, 100)
    assert resumed.at_epoch_end(2, 0.94) and not calls
    assert '(0.9700 against 0.9400)' in resumed.reason()
