"""Unit tests of the served-model lookup: the newest complete integer version, or None."""
import os

from components.baseline import served


def _version(serving_dir, name, complete=True):
    folder = os.path.join(serving_dir, name)
    os.makedirs(os.path.join(folder, 'variables'))
    if complete:
        open(os.path.join(folder, 'saved_model.pb'), 'wb').close()
    return folder


def test_missing_or_empty_folder_serves_nothing(tmp_path):
    assert served.newest_version(str(tmp_path / 'absent')) is None
    assert served.newest_version(str(tmp_path)) is None


def test_newest_is_the_largest_integer_not_the_latest_name(tmp_path):
    for name in ('9', '10', '2'):
        _version(str(tmp_path), name)
    assert served.newest_version(str(tmp_path)) == 10


def test_incomplete_and_non_version_folders_are_ignored(tmp_path):
    _version(str(tmp_path), '5')
    _version(str(tmp_path), '7', complete=False)   # a push still being copied
    _version(str(tmp_path), 'tmp-8')
    open(tmp_path / '9', 'w').close()               # a file, not a version folder
    assert served.newest_version(str(tmp_path)) == 5
