"""Shared fixtures: small image folders built from the embedded digits; absl's log level and
TensorFlow's global seed kept from leaking between tests."""
import logging
import os
import sys

import pytest

from helpers import DIGITS, copy_digits


@pytest.fixture
def small_images(tmp_path):
    """3 classes x 5 digits: a handful of real images."""
    return copy_digits(str(tmp_path / 'images'), per_class=5)


@pytest.fixture
def png_bytes():
    folder = os.path.join(DIGITS, '0')
    with open(os.path.join(folder, sorted(os.listdir(folder))[0]), 'rb') as handle:
        return handle.read()


@pytest.fixture(autouse=True)
def _process_state_restored():
    """Each test starts with the absl logger's level as the session had it. TensorFlow's
    autotrackable._trackable_children (run by every SavedModel export) sets absl's verbosity to
    FATAL and back to what get_verbosity() returned: the root logger's effective WARNING, now
    set explicitly. Left so, a later test's caplog.at_level('INFO') no longer sees absl INFO
    lines (production sets INFO explicitly first: pipeline/logs.py, launch/worker.py).

    And each starts with no global TensorFlow seed, as a fresh process does: a test that trains
    sets one (training/job.py seeds the run), and with it tf.data's seeded shuffles take another
    order, so an in-process stream no longer matches the same stream in a fresh process."""
    logger = logging.getLogger('absl')
    level = logger.level
    yield
    logger.setLevel(level)
    if 'tensorflow' in sys.modules:  # only tests that loaded it can have set a seed
        sys.modules['tensorflow'].random.set_seed(None)
