"""Shared fixtures: small image folders built from the embedded digits, and bad files."""
import os
import shutil

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(REPO_ROOT, 'data', 'digits')


def copy_digits(dest: str, classes=('0', '1', '2'), per_class: int = 30) -> str:
    """Copies the first `per_class` PNGs of each class into dest/<class>/; returns dest."""
    for name in classes:
        os.makedirs(os.path.join(dest, name), exist_ok=True)
        for file_name in sorted(os.listdir(os.path.join(DIGITS, name)))[:per_class]:
            shutil.copy(os.path.join(DIGITS, name, file_name), os.path.join(dest, name, file_name))
    return dest


@pytest.fixture
def small_images(tmp_path):
    """3 classes x 5 digits: a handful of real images."""
    return copy_digits(str(tmp_path / 'images'), per_class=5)


@pytest.fixture
def png_bytes():
    with open(os.path.join(DIGITS, '0', sorted(os.listdir(os.path.join(DIGITS, '0')))[0]),
              'rb') as handle:
        return handle.read()
