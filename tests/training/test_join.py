"""The rule by which the held-out slice joins training (training/join.py); the stream it makes is
tested in test_stopping.py, the loop that asks it in test_loop.py."""
import tensorflow as tf

from training import join

# Patience counts from epoch 15 of 20; the held-out loss of each check below, and the lowest.
FIRST, PLANNED = 15, 20.0


def _check(policy, epoch, loss, lowest, planned=PLANNED, examples=None):
    return policy.at_epoch_end(epoch, examples if examples is not None else epoch * 100,
                               planned, FIRST, loss, lowest)


def test_the_slice_joins_where_patience_starts_if_its_loss_is_still_at_a_new_low():
    policy = join.HeldOutJoin(4885)
    assert not _check(policy, 14, 0.30, 0.30)          # before patience counts: held out
    assert policy.joined_at() is None and policy.describe() == ''
    assert _check(policy, 15, 0.29, 0.29, examples=1500)
    assert policy.joined and policy.joined_at() == 1500
    assert policy.describe() == (
        'the 4,885 held-out examples joined training from epoch 16: their loss was still '
        'reaching new lows (0.2900 after epoch 15, where patience counts from epoch 15), so '
        'the final weights were kept')
    assert not _check(policy, 16, 0.20, 0.20)          # once joined, never asked again
    assert int(policy.epoch.numpy()) == 15


def test_a_loss_above_its_lowest_keeps_the_slice_out_until_a_new_low():
    policy = join.HeldOutJoin(4885)
    assert not _check(policy, 15, 0.31, 0.29)           # early stopping keeps watching
    assert not policy.joined
    assert policy.describe() == (
        'the 4,885 held-out examples stayed out: their loss did not reach a new low from epoch '
        '15 on while 2 epochs were left (after epoch 15: 0.3100 against the lowest 0.2900)')
    assert _check(policy, 16, 0.28, 0.28) and policy.joined_at() == 1600


def test_too_few_epochs_left_or_no_slice_or_no_score_keep_it_out():
    assert not _check(join.HeldOutJoin(4885), 19, 0.2, 0.2)       # one epoch left
    assert not _check(join.HeldOutJoin(4885), 15, 0.2, 0.2, planned=16.0)
    assert _check(join.HeldOutJoin(4885), 18, 0.2, 0.2)           # two left
    disabled = join.HeldOutJoin(0)
    assert not disabled.enabled and not _check(disabled, 15, 0.2, 0.2)
    assert disabled.describe() == ''
    assert not _check(join.HeldOutJoin(4885), 15, -1.0, 0.2)      # not scored this epoch


def test_the_decision_survives_a_checkpoint(tmp_path):
    policy = join.HeldOutJoin(600)
    _check(policy, 15, 0.29, 0.29, examples=4096)
    path = tf.train.Checkpoint(held_out_join=policy).save(str(tmp_path / 'ckpt'))
    resumed = join.HeldOutJoin(600)
    tf.train.Checkpoint(held_out_join=resumed).restore(path).assert_existing_objects_matched()
    assert resumed.joined_at() == 4096 and resumed.describe() == policy.describe()
