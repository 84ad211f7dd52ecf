"""The span index (components/ingest/spans/span_index.py): what is reused, what is not, and
concurrent writers."""
import json
import os
import threading

from core import window
from components.ingest.spans import span_index

PROPS = {'source': 'images', 'train_percent': 80, 'num_shards': 2, 'compress': 1}


def _span_folder(uri, files=('Split-train/a.gz', 'Split-eval/b.gz')):
    for name in files:
        os.makedirs(os.path.dirname(os.path.join(uri, name)), exist_ok=True)
        with open(os.path.join(uri, name), 'w') as handle:
            handle.write(name)
    return uri


def _record(root, uri, span=2, fingerprint='fp', **props):
    key = span_index.identity('/data', span, fingerprint, dict(PROPS, **props))
    entry = window.SpanEntry(span=span, uri=uri, fingerprint=fingerprint, num_train=4,
                             num_eval=1)
    span_index.record(root, key, entry, {'num_found': 5})
    return key


def test_a_recorded_span_is_found_with_its_files_and_properties(tmp_path):
    root, uri = str(tmp_path / 'root'), _span_folder(str(tmp_path / 'run1'))
    os.makedirs(os.path.join(uri, 'Span-1', 'Split-train'))  # an older span: not its files
    key = _record(root, uri)
    found = span_index.lookup(root, key)
    assert found['entry'].uri == uri and found['properties'] == {'num_found': 5}
    assert found['files'] == ['Split-eval/b.gz', 'Split-train/a.gz']
    # Parameters as Kubeflow hands them (2.0 for 2) are the same parameters.
    assert span_index.lookup(root, span_index.identity(
        '/data/', 2, 'fp', dict(PROPS, num_shards=2.0))) is not None


def test_another_fingerprint_parameter_span_or_base_is_a_miss(tmp_path):
    root, uri = str(tmp_path / 'root'), _span_folder(str(tmp_path / 'run1'))
    _record(root, uri)
    for other in (span_index.identity('/data', 2, 'changed', PROPS),
                  span_index.identity('/data', 2, 'fp', dict(PROPS, train_percent=50)),
                  span_index.identity('/data', 3, 'fp', PROPS),
                  span_index.identity('/other', 2, 'fp', PROPS),
                  span_index.identity('/data', 2, '', PROPS)):  # no fingerprint: unknown
        assert span_index.lookup(root, other) is None
    # What only decides whether a run fails does not change the records.
    assert span_index.lookup(root, span_index.identity(
        '/data', 2, 'fp', dict(PROPS, max_rejected_fraction=0.5))) is not None


def test_the_eval_cap_is_part_of_the_key_only_when_the_share_comes_from_the_data(tmp_path):
    root, uri = str(tmp_path / 'root'), _span_folder(str(tmp_path / 'run1'))
    _record(root, uri)  # a key as stored before max_eval_records existed
    for cap in (5_000, 10):  # a whole percent: the cap changes nothing written
        assert span_index.lookup(root, span_index.identity(
            '/data', 2, 'fp', dict(PROPS, max_eval_records=cap))) is not None
    _record(root, uri, train_percent=0, max_eval_records=5_000)
    assert span_index.lookup(root, span_index.identity(
        '/data', 2, 'fp', dict(PROPS, train_percent=0, max_eval_records=5_000))) is not None
    assert span_index.lookup(root, span_index.identity(
        '/data', 2, 'fp', dict(PROPS, train_percent=0, max_eval_records=10))) is None


def test_an_entry_whose_data_is_gone_is_ignored(tmp_path, caplog):
    root, uri = str(tmp_path / 'root'), _span_folder(str(tmp_path / 'run1'))
    key = _record(root, uri)
    os.remove(os.path.join(uri, 'Split-eval', 'b.gz'))
    with caplog.at_level('WARNING', logger='absl'):
        assert span_index.lookup(root, key) is None
    assert 'its data is gone (Split-eval/b.gz): ingesting it again' in caplog.text


def test_concurrent_writers_leave_one_whole_entry(tmp_path):
    root = str(tmp_path / 'root')
    uris = [_span_folder(str(tmp_path / f'run{i}')) for i in range(8)]
    threads = [threading.Thread(target=_record, args=(root, uri)) for uri in uris]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    folder = os.path.join(root, '_spans', 'ImageExampleGen')
    (name,) = os.listdir(folder)  # one file for the key, no temporary file left
    with open(os.path.join(folder, name)) as handle:
        assert json.load(handle)['entry']['uri'] in uris
    assert span_index.lookup(root, span_index.identity('/data', 2, 'fp', PROPS))['entry'].uri \
        in uris


def test_shards_are_hard_linked_on_a_local_disk(tmp_path):
    source = _span_folder(str(tmp_path / 'run1'))
    files = span_index.data_files(source)
    assert span_index.link_files(source, str(tmp_path / 'run2'), files) == 'linked'
    for name in files:
        assert os.path.samefile(os.path.join(source, name), tmp_path / 'run2' / name)
