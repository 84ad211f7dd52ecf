"""The length policy (training/length.py): the length and batch from the data, the batch's
split, and the time a length is cut to."""
import pytest

from training import length, plan


@pytest.mark.parametrize('held_in, epochs', [
    (1427, 20),       # the digits: 20 passes (22 updates each) cap the 1M examples
    (43_036, 20),     # Fashion-MNIST: 1M examples are 23 passes; at most 20
    (70_000, 15),     # 1M examples are 14.3 passes
    (1_000_000, 10),  # large data: still 10 passes (then cut to the time: fit_epochs)
    (189, 200),       # 189 photos are 2 updates per epoch: 400 updates need 200 epochs
    (469, 58)])       # a 469-row table: 7 updates per epoch
def test_training_length_from_the_data(held_in, epochs):
    assert length.auto_epochs(held_in, 64) == epochs


@pytest.mark.parametrize('held_in, batch, epochs', [
    (1427, 64, 20),       # the digits: 11 updates an epoch at 128; the smaller batch
    (25_599, 64, 20),     # 199 updates an epoch at 128
    (25_600, 128, 40),    # 200: the larger batch, and twice the epochs (2M examples: 79)
    (43_036, 128, 40),    # Fashion-MNIST: the same 13,440 updates as 20 epochs would take...
    (70_000, 128, 29),    # ...twice 1M examples are 28.6 passes
    (1_000_000, 128, 10)])  # never below 10 passes (then cut to the time: fit_epochs)
def test_the_batch_from_the_data_keeps_the_updates(held_in, batch, epochs):
    assert length.auto_batch(held_in) == batch
    assert length.auto_epochs(held_in, batch, length.batch_scale(0, batch)) == epochs
    assert length.batch_scale(128, 128) == 1.0   # a configured batch keeps the rule
    # The report's estimate of the updates resolves the batch the same way.
    properties = dict(train_steps=0, train_epochs=0.0, global_batch_size=0,
                      accumulation_steps=1, validation_percent=0)
    assert plan.resolve_train_steps(properties, held_in) == epochs * (held_in // batch)


@pytest.mark.parametrize('configured, held_in, batch', [
    (32, 100_000, 32),   # configured: kept
    (0, -1, 64),         # a fixed length: uncounted, the smaller batch
    (0, 25_599, 64), (0, 25_600, 128)])
def test_the_batch_is_settled_once_from_the_configured_or_the_data(configured, held_in, batch):
    assert length.settle_batch(configured, held_in) == batch


@pytest.mark.parametrize('batch, parts, ok', [
    (64, 2, True), (10, 3, False), (32, 3, False), (0, 4, True), (0, 3, False), (8, 0, False)])
def test_workers_or_replicas_take_equal_shares_of_the_batch(batch, parts, ok):
    assert length.splits(batch, parts) is ok
    if batch == 0 and ok:  # every batch the data settles on splits as AUTO_BATCH does
        assert all(length.splits(length.auto_batch(n), parts) for n in (10, 1_000_000))


def test_a_length_by_epochs_settles_the_batch_and_counts_the_updates():
    planned = length.by_epochs(0, 2, 1427, 5.0)    # the digits, 2 micro-batches an update
    assert planned == length.Length(batch=64, steps_per_epoch=11, epochs=5.0, train_steps=55)
    auto = length.by_epochs(0, 1, 43_036, plan.AUTO_EPOCHS)   # Fashion-MNIST, from the data
    assert (auto.batch, auto.epochs, auto.steps_per_epoch) == (128, 40.0, 336)
    assert length.by_epochs(16, 1, 10, 0.5).train_steps == 1   # never fewer than 1 update


def test_the_time_target_and_the_trial_taken_off_it():
    assert length.time_target_seconds(0.0, from_data=True) == 60 * length.AUTO_TRAIN_MINUTES
    assert length.time_target_seconds(0.0, from_data=False) == 0.0   # the user's length
    assert length.time_target_seconds(2.5, from_data=False) == 150.0  # the budget, always
    assert length.after_trial(720.0, 0.0, 20.0) == 700.0
    assert length.after_trial(150.0, 2.5, 20.0) == 150.0   # a user's budget is kept
    assert length.after_trial(0.0, 0.0, 20.0) == 0.0       # no target: none made
    assert length.after_trial(10.0, 0.0, 20.0) == 1.0      # never to nothing


@pytest.mark.parametrize('percent, held_out, share', [
    (10, 4_885, 5.11),      # Fashion-MNIST's 10% of 47,921: about 2,500 are 5.11%
    (10, 2_501, 9.99),      # just over: rounded down, never more than asked
    (20, 10_000, 5.0),
    (10, 10 ** 9, 0.01)])   # ten billion examples: the finest share, 0.01%
def test_a_held_out_slice_larger_than_ranking_needs_is_cut_to_a_share_to_001(percent, held_out,
                                                                           share):
    assert length.held_out_share(percent, held_out) == share
    assert share <= percent
