"""Which version scores, and its SavedModel placed where the stock BulkInferrer reads one."""
import os

import pytest

from components.score import served


def _version(serving, version, complete=True):
    folder = serving / str(version)
    (folder / 'variables').mkdir(parents=True)
    (folder / 'variables' / 'variables.index').write_bytes(b'index')
    if complete:
        (folder / 'saved_model.pb').write_bytes(b'graph %d' % version)


def test_the_served_version_is_the_highest_complete_one(tmp_path):
    for version, complete in ((1, True), (3, True), (4, False)):
        _version(tmp_path, version, complete)
    assert served.resolve(str(tmp_path)) == (3, str(tmp_path / '3'))
    assert served.resolve(str(tmp_path), 1) == (1, str(tmp_path / '1'))


@pytest.mark.parametrize('version, message', [(2, 'Version 2 is not kept under .*; kept: 1, 3'),
                                              (4, 'Version 4 is not kept')])
def test_a_version_not_kept_is_refused_naming_the_kept_ones(tmp_path, version, message):
    for kept, complete in ((1, True), (3, True), (4, False)):
        _version(tmp_path, kept, complete)
    with pytest.raises(served.ScoringError, match=message):
        served.resolve(str(tmp_path), version)


def test_nothing_served_says_so(tmp_path):
    with pytest.raises(served.ScoringError, match='no served version under'):
        served.resolve(str(tmp_path / 'serving'))


def test_place_hard_links_every_file_locally(tmp_path):
    _version(tmp_path / 'serving', 2)
    target = tmp_path / 'model' / 'Format-Serving'
    assert served.place(str(tmp_path / 'serving' / '2'), str(target)) == 2
    for relative in ('saved_model.pb', os.path.join('variables', 'variables.index')):
        assert os.path.samefile(tmp_path / 'serving' / '2' / relative, target / relative)
