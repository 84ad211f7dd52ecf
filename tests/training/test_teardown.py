"""Letting go of TensorFlow objects in a thread of their own (training/teardown.py), and the
step trial that hands its candidates over to it."""
import os
import subprocess
import sys
import threading

import tensorflow as tf

from training import trial

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_process_that_ends_right_after_training_waits_for_the_streams_teardown(tmp_path):
    # The teardown thread outlives the loop; a process that ends at once (a worker with nothing
    # to export) must still let it finish, or it is cancelled mid-teardown and the process
    # aborts. Here the teardown takes a while and the process returns straight after handing
    # it over: the file the teardown writes last must be there once the process has exited.
    done = tmp_path / 'torn-down'
    script = (
        'import time\n'
        'from training import teardown\n'
        'class Stream:\n'
        '    def __del__(self):\n'
        '        time.sleep(1.0)\n'
        f'        open({str(done)!r}, "w").close()\n'
        'teardown.drop_in_background([Stream()], "drop")\n')
    result = subprocess.run([sys.executable, '-c', script], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert done.exists()


class _SlowIterator:
    """A candidate's iterator whose teardown waits, as a distributed one's can: until the
    test says the trial has returned (or 60 s). Records the thread that dropped it."""

    def __init__(self, returned: threading.Event, dropped_in: list):
        self.returned, self.dropped_in = returned, dropped_in

    def __iter__(self):
        return self

    def __next__(self):
        return 0

    def __del__(self):
        self.dropped_in.append((threading.current_thread().name, self.returned.wait(60)))


class _Steps:
    """The StepFunctions a candidate's build returns, as far as the trial uses them."""

    def __init__(self, returned, dropped_in):
        iterator = _SlowIterator(returned, dropped_in)
        # No reference cycle: the iterator goes when its last holder lets go, not at a GC.
        self.strategy = _Strategy(iterator)

    def train_step(self, iterator):
        return (tf.constant(0.5),)


class _Strategy:
    def __init__(self, iterator):
        self.iterator = iterator

    def experimental_distribute_dataset(self, dataset):
        iterator, self.iterator = self.iterator, None   # the trial's iterator, its only one
        return [iterator]


def test_the_trial_returns_before_its_candidates_iterators_are_torn_down():
    returned, dropped_in = threading.Event(), []

    def build(candidate):
        return _Steps(returned, dropped_in)
    figures = trial.run(build, tf.data.Dataset.range(1), [trial.Candidate('float32', False),
                                                          trial.Candidate('float32', True)],
                        examples_per_update=8, rounds=1, seconds=0.01)
    returned.set()   # the trial came back while its iterators were still held
    assert set(figures) == {trial.Candidate('float32', False), trial.Candidate('float32', True)}
    assert all(rate > 0 for rate in figures.values())
    for thread in threading.enumerate():
        if thread.name == 'drop-step-trial':
            thread.join(60)
    # Each dropped in the trial's teardown thread, after the trial had returned.
    assert dropped_in == [('drop-step-trial', True)] * 2
