"""When the loop saves a checkpoint (training/checkpoints.py save_due). Which checkpoint a
training resumes from (checkpoints.latest) is tested with the storage reads,
tests/core/test_storage_reads.py."""
from training import checkpoints


def test_checkpoints_are_saved_at_the_interval_and_at_the_end_only():
    due = [step for step in range(1, 26) if checkpoints.save_due(step, 10, False, 25)]
    assert due == [10, 20, 25]
    assert checkpoints.save_due(7, 10, stopped=True, last_step=25)   # stopped early
    assert not checkpoints.save_due(5, 10, stopped=False, last_step=0)
