"""Serving versions in a bucket (SeaweedFS, tests/support/seaweedfs.py): no rename and no empty
folders there, so a version is copied in place with saved_model.pb last
(core/versions.py push_new)."""
import os
import socket

import pytest

from core import versions


def _model(path, tag: str) -> str:
    """A folder shaped like a SavedModel, with an empty file (assets may hold one)."""
    os.makedirs(os.path.join(path, 'variables'))
    os.makedirs(os.path.join(path, 'assets'))
    for name, text in (('saved_model.pb', f'graph {tag}'), ('variables/variables.index', tag),
                       ('assets/empty.txt', '')):
        with open(os.path.join(path, name), 'w') as handle:
            handle.write(text)
    return str(path)


def test_versions_in_a_bucket(s3, tmp_path):
    base = s3.uri('serving')
    first = versions.push(_model(tmp_path / 'a', 'a'), base, keep=2)
    assert (first.version, first.created, first.path) == (1, True, f'{base}/1')
    keys = s3.keys('serving/')
    assert keys.pop('serving/models.config') > 0
    assert keys == {'serving/1/saved_model.pb': 7, 'serving/1/variables/variables.index': 1,
                    'serving/1/assets/empty.txt': 0}
    again = versions.push(_model(tmp_path / 'a2', 'a'), base, keep=2)
    assert (again.version, again.created) == (1, False)

    # A push killed midway: version 2 has its variables but not yet its graph file.
    s3.server.client().put_object(Bucket=s3.name, Key='serving/2/variables/variables.index',
                                  Body=b'partial')
    assert versions.served_version(base) == 1
    second = versions.push(_model(tmp_path / 'b', 'b'), base, keep=2)
    assert second.version == 2 and second.created
    assert s3.keys('serving/2/')['serving/2/variables/variables.index'] == 1   # replaced whole

    third = versions.push(_model(tmp_path / 'c', 'c'), base, keep=2)
    assert (third.version, third.removed) == (3, (1,))
    assert sorted({k.split('/')[1] for k in s3.keys('serving/')}) == ['2', '3', 'models.config']
    assert versions.list_versions(base) == [2, 3] and versions.served_version(base) == 3


def test_nothing_pushed_yet_is_an_empty_bucket_folder(s3):
    base = s3.uri('never')
    assert versions.list_versions(base) == [] and versions.served_version(base) is None
    versions.remove_leftovers(base)   # listing a folder that does not exist: nothing to do


def test_a_store_that_does_not_answer_is_an_error_not_an_empty_folder(s3, tmp_path, monkeypatch):
    """tensorflow-io reads an outage as "not found": the push's checks would then take version 1
    for absent (and copy over it) or a complete version for a killed push's leftover (and delete
    it). They ask the store with boto3 instead, which tells the two apart."""
    from core import storage, store_watch
    base = s3.uri('serving')
    versions.push(_model(tmp_path / 'a', 'a'), base, keep=2)
    before = s3.keys('serving/')
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        dead = probe.getsockname()[1]
    endpoint = os.environ['AWS_ENDPOINT_URL']
    monkeypatch.setenv('AWS_ENDPOINT_URL', f'http://127.0.0.1:{dead}')
    monkeypatch.setattr(store_watch, 'BLIP_SECONDS', 1.0)   # how long a blip is waited out
    for check in (versions.list_versions, versions.complete_versions, versions.served_version,
                  versions.remove_leftovers):
        with pytest.raises(storage.StoreUnanswered, match=f'127.0.0.1:{dead}'):
            check(base)
    with pytest.raises(storage.StoreUnanswered):
        storage.exists(f'{base}/1/saved_model.pb')
    monkeypatch.setenv('AWS_ENDPOINT_URL', endpoint)   # the store answers again
    assert s3.keys('serving/') == before
    assert storage.exists(f'{base}/1/saved_model.pb') and storage.exists(f'{base}/1')
    assert not storage.exists(f'{base}/2') and not storage.exists(f'{base}/1/saved_model')
    assert storage.children(base) == ['1', 'models.config']
    assert storage.children(s3.uri('nothing')) == []
