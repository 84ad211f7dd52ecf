"""Unit tests of the time plan: the epochs that fit the training time, re-planned each epoch."""
import pytest

from training import replan


@pytest.mark.parametrize('spent, epoch, planned, expected', [
    (60.0, 30.0, 20.0, 20.0),     # 2 epochs in 60 s + 18 x 30 s = 10 min: the whole plan fits
    (160.0, 59.0, 20.0, 9.0),     # a busy machine: 2 + 440 / 59 = 9.5
    (80.0, 36.0, 20.0, 16.0),     # 2 + 520 / 36 = 16.4: whole epochs only
    (900.0, 400.0, 10.0, 3.0),    # a large split: never below 3 epochs
    (0.9, 0.3, 20.0, 20.0)])      # the digits: never above the plan
def test_the_plan_is_cut_to_the_epochs_that_fit_the_time(spent, epoch, planned, expected):
    assert replan.fit_epochs(spent, epoch, planned, 600.0) == expected


def test_never_fewer_epochs_than_are_done():
    assert replan.fit_epochs(700.0, 30.0, 40.0, 600.0, min_epochs=3, done=12) == 12


def _walk(plan, costs, planned=40.0):
    """Runs the plan over epochs of these costs, each estimated as the loop does (the mean of
    the last RECENT_EPOCHS but the first); returns the plan after each epoch, and the time."""
    spent, plans = 0.0, []
    for epoch, cost in enumerate(costs, start=1):
        spent += cost
        if epoch >= planned:
            break
        recent = costs[1:epoch][-replan.RECENT_EPOCHS:] or [cost]
        planned = plan.at_epoch_end(epoch, planned, spent, sum(recent) / len(recent))
        plans.append(planned)
    return plans, spent


def test_the_first_cut_is_at_the_second_epoch_and_a_quiet_run_keeps_it():
    plan = replan.TimePlan(40.0, 720.0, 3)
    # 18 s an epoch with a wobble of +-1 s: 2 + (720 - 38) / 18 = 39 epochs, and it stays.
    costs = [20.0, 18.0] + [18.0 + (1 if i % 2 else -1) * 0.9 for i in range(38)]
    plans, spent = _walk(plan, costs)
    assert plans[0] == 40.0 and plans[1] == 39.0 and set(plans[1:]) == {39.0}
    assert len(plan.changes) == 1 and spent <= 720.0 + 18
    assert plan.describe() == ('planned 39 of 40 epochs after the first 2 took 38 s (the last '
                               '18 s), to fit 12.0 min')


def test_a_slowdown_part_way_moves_the_end_so_the_run_ends_near_its_target():
    plan = replan.TimePlan(40.0, 720.0, 3)
    # A neighbour takes a core from epoch 11 on: 18 s epochs become 27 s.
    plans, spent = _walk(plan, [20.0] + [18.0] * 9 + [27.0] * 30)
    assert plans[1] == 39.0 and plans[10:13] == [35.0, 32.0, 29.0]   # as the mean catches up
    assert spent <= 720.0     # where the cut at epoch 2 alone would have run 38 + 8 x 18 + 29
    assert 're-planned 3 times' in plan.describe()   # x 27 = 965 s
    assert '35 at epoch 11 (21 s an epoch)' in plan.describe()


def test_a_neighbour_with_long_epochs_is_cut_where_an_epoch_would_overrun():
    plan = replan.TimePlan(40.0, 696.0, 3)
    # This machine's Fashion-MNIST: 7 epochs fit at 96 s, then a busy loop makes them 145 s.
    plans, spent = _walk(plan, [97.0, 98.0, 98.0, 96.0, 151.0, 143.0, 143.0])
    assert plans[1] == 7.0 and plans[-1] == 6.0 and spent <= 696.0 + 10


def test_a_speed_up_takes_back_epochs_up_to_the_length_from_the_data_only():
    plan = replan.TimePlan(40.0, 720.0, 3)
    # A neighbour leaves after epoch 6: 30 s epochs become 12 s.
    plans, _ = _walk(plan, [32.0, 30.0, 30.0, 30.0, 30.0, 30.0] + [12.0] * 34)
    assert plans[1] == 23.0                   # 2 + (720 - 62) / 30 = 23.9: cut first
    assert plans[6:9] == [28.0, 36.0, 40.0]   # as the mean catches up, then capped at 40


def test_a_plan_that_fits_is_not_cut_and_says_nothing():
    plan = replan.TimePlan(20.0, 720.0, 3)
    plans, _ = _walk(plan, [1.0] * 20, planned=20.0)
    assert set(plans) == {20.0} and plan.describe() == '' and not plan.changes


class _Planned:
    """The schedule's end as the loop checkpoints it (a tf.Variable's numpy and assign)."""

    def __init__(self, value):
        self.value = value

    def numpy(self):
        return self.value

    def assign(self, value):
        self.value = value


def _options(**changes):
    from training import loop
    return loop.LoopOptions.of(**dict(dict(
        train_steps=200, steps_per_epoch=10, max_epochs=20.0, time_target_seconds=600.0),
        **changes))


def test_the_replanner_cuts_the_length_and_moves_the_schedules_end():
    planned = _Planned(200)
    replanner = replan.Replanner(_options(), planned)
    assert not replanner.due(10, stopped=False)            # epoch 1: too early to measure
    assert replanner.due(20, stopped=False) and not replanner.due(20, stopped=True)
    replanner.at_epoch_end(20, 160.0, 59.0)                 # fit_epochs: 2 + 440 / 59 = 9
    assert (replanner.options.train_steps, replanner.options.max_epochs) == (90, 9.0)
    assert planned.value == 90 and replanner.changes() == 1
    assert replanner.describe().startswith('planned 9 of 20 epochs after the first 2 took 160 s')
    replanner.at_epoch_end(30, 220.0, 60.0)                 # inside the band: it stays
    assert replanner.options.train_steps == 90 and replanner.changes() == 1


def test_the_replanner_keeps_at_least_the_frozen_epochs_and_one_more():
    replanner = replan.Replanner(_options(freeze_epochs=5), _Planned(200))
    replanner.at_epoch_end(20, 500.0, 250.0)                # 2 epochs fit, 3 is the floor...
    assert replanner.options.max_epochs == 6.0              # ...but 5 frozen need a 6th


def test_a_resumed_attempt_takes_the_length_its_interruption_had_planned():
    replanner = replan.Replanner(_options(), _Planned(90))
    assert (replanner.options.train_steps, replanner.options.max_epochs) == (90, 9.0)
    assert replanner.describe() == 'planned 9 epochs before this attempt, to fit 10.0 min'
    assert replanner.time_plan.ceiling == 20.0              # it may move back up to the data's


def test_without_a_time_target_or_epochs_nothing_is_re_planned():
    for options in (_options(time_target_seconds=0.0),
                    _options(steps_per_epoch=0, max_epochs=0.0)):
        replanner = replan.Replanner(options, _Planned(200))
        assert not replanner.due(20, stopped=False) and replanner.changes() is None
        assert replanner.options == options and replanner.describe() == ''
    assert replan.Replanner(_options(), None).changes() is None   # no schedule end to move
