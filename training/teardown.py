"""Letting go of TensorFlow objects whose teardown waits, in a thread of their own (no TFX imports).

A distributed dataset iterator's teardown can keep the thread that drops it waiting, using no
CPU, for seconds to a minute: the train stream's (its decoded cache, shuffle buffer and prefetch
threads) took 4-31 s between the final evaluation and the export on Fashion-MNIST; the step
trial's four iterators over a few random batches took 11-28 s, measured in a pipeline's
trainer on Fashion-MNIST with 0.02 s of CPU (docs/training.md, "Mixed precision"), and the trial's
seconds come off the training's time. Nothing waits for either, so they go in a thread.
"""
import threading


def drop_in_background(box: list, name: str) -> None:
    """Empties `box` in a thread of its own, so that what only it holds is torn down there
    while this thread goes on: the caller must hold no other reference to it.

    Not a daemon: Python waits for it before it finalizes. A daemon thread still in
    TensorFlow's teardown when a process ends (a worker that has nothing to export ends right
    after training) is cancelled inside C++ code, and the process aborts ("terminate called
    after throwing an instance of ''", exit code -6: a two-worker run failed so)."""
    threading.Thread(target=box.clear, name=name, daemon=False).start()
