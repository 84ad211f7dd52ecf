"""Shared fixtures: small image folders built from the embedded digits."""
import os

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
