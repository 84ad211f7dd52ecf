"""Retention's deletes on an object store (pipeline/runs/retention.py _remove_uri, through
core/storage.py remove): one listing and DeleteObjects batches of 1,000 keys, on SeaweedFS
(tests/support) where the store can answer, and on botocore's Stubber where it cannot be made
to (a key DeleteObjects refuses, a 503 in the middle)."""
from concurrent import futures

import pytest
from botocore import stub

from core import storage
from pipeline.runs import retention


def _count_deletes(client, calls):
    def count(params, **_):
        calls.append(len(params['Delete']['Objects']))
    client.meta.events.register('provide-client-params.s3.DeleteObjects', count)
    return lambda: client.meta.events.unregister('provide-client-params.s3.DeleteObjects', count)


def test_a_prefix_of_more_than_1000_objects_goes_in_two_batches_and_its_bytes_are_summed(s3):
    client = s3.server.client()
    # 1,001: one key more than a DeleteObjects request takes, so a second batch is needed.
    keys = {f'run/Trainer/model/7/part-{i:04d}': i % 13 for i in range(1001)}
    # Siblings sharing the name's start are not under the folder and stay.
    siblings = {'run/Trainer/model/70/data': 3, 'run/Trainer/model/7-x': 4}
    with futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda item: client.put_object(Bucket=s3.name, Key=item[0],
                                                     Body=b'x' * item[1]),
                      {**keys, **siblings}.items()))
    calls = []
    undo = _count_deletes(storage._checker(), calls)  # pylint: disable=protected-access
    try:
        removed = retention._remove_uri(s3.uri('run', 'Trainer', 'model', '7'))
    finally:
        undo()
    assert removed == sum(keys.values())
    assert sorted(calls) == [1, 1000]
    assert s3.keys('run/') == siblings


def test_one_object_and_nothing_there(s3):
    s3.server.client().put_object(Bucket=s3.name, Key='run/eval.json', Body=b'{"a": 1}')
    assert retention._remove_uri(s3.uri('run', 'eval.json')) == 8
    assert s3.keys() == {}
    assert retention._remove_uri(s3.uri('run', 'eval.json')) == 0
    assert retention._remove_uri(s3.uri('never', 'written') + '/') == 0


@pytest.fixture
def stubbed(monkeypatch):
    """The project's checking client, on an endpoint nothing answers, with a Stubber: every
    request is answered by what the test queued."""
    for key, value in {'AWS_ENDPOINT_URL': 'http://127.0.0.1:9', 'AWS_ACCESS_KEY_ID': 'k',
                       'AWS_SECRET_ACCESS_KEY': 's', 'AWS_REGION': 'us-east-1'}.items():
        monkeypatch.setenv(key, value)
    with stub.Stubber(storage._checker()) as stubber:  # pylint: disable=protected-access
        stubber.add_response('list_objects_v2', {
            'Contents': [{'Key': 'm/7/a', 'Size': 2}, {'Key': 'm/7/b', 'Size': 3}]},
            {'Bucket': 'b', 'Prefix': 'm/7/'})
        yield stubber
        stubber.assert_no_pending_responses()


DELETION = {'Bucket': 'b', 'Delete': {'Objects': [{'Key': 'm/7/a'}, {'Key': 'm/7/b'}],
                                    'Quiet': True}}


def test_a_key_the_store_refuses_to_delete_raises_naming_it_and_the_code(stubbed):
    # SeaweedFS cannot be made to refuse one key of a DeleteObjects (its identities' rights are
    # per bucket, and an unversioned delete is never held): the answer is queued instead.
    stubbed.add_response('delete_objects', {'Errors': [
        {'Key': 'm/7/b', 'Code': 'AccessDenied', 'Message': 'Access Denied'}]},
        DELETION)
    with pytest.raises(OSError) as raised:
        retention._remove_uri('s3://b/m/7')
    assert str(raised.value) == ('cannot delete s3://b/m/7/b: the store answered AccessDenied '
                                 '(Access Denied)')


def test_a_store_that_fails_mid_delete_is_asked_again(stubbed):
    stubbed.add_client_error('delete_objects', 'ServiceUnavailable', http_status_code=503,
                             expected_params=DELETION)
    stubbed.add_response('delete_objects', {}, DELETION)
    assert retention._remove_uri('s3://b/m/7/') == 5
