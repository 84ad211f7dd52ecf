"""core/storage.py's whole-file reads and open_read, and training/checkpoints.py, against a
store that answers a GET once with a 500 (the `relay` fixture: tests/support/s3_fault_proxy.py
in front of SeaweedFS): ours return the file; tensorflow-io's, in a process of its own (its S3
client is made once per process), return the error's XML in front of it, which is why ours
exist."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from core import storage
from training import checkpoints


def _save_checkpoint(directory):
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(3.0)), directory,
                                         max_to_keep=2)
    manager.save(checkpoint_number=10)
    manager.save(checkpoint_number=20)


def test_a_read_answered_once_with_a_500_returns_the_file_and_absent_is_none(s3, relay):
    uri = s3.uri('serving', 'models.config')
    with tf.io.gfile.GFile(uri, 'w') as handle:
        handle.write('model_config_list {\n}\n')
    relay.fail_next_get(f'{s3.name}/serving/models.config')
    assert storage.read_text(uri) == 'model_config_list {\n}\n'
    assert relay.failed == [f'{s3.name}/serving/models.config']   # the 500 was met
    assert storage.read_if_exists(s3.uri('serving', 'nothing')) is None
    with pytest.raises(FileNotFoundError, match='nothing'):
        storage.read(s3.uri('serving', 'nothing'))


def test_the_latest_checkpoint_is_found_through_a_500_and_a_broken_index_is_an_error(
        s3, relay, tmp_path):
    folder = s3.uri('ck')
    _save_checkpoint(folder)
    relay.fail_next_get(f'{s3.name}/ck/checkpoint')
    assert checkpoints.latest(folder) == f'{folder}/ckpt-20'
    assert relay.failed == [f'{s3.name}/ck/checkpoint']
    assert checkpoints.latest(s3.uri('none')) is None
    # On disk the same: an index naming files that are gone, or that does not parse, is an
    # error naming the folder, never "start from step 0".
    local = str(tmp_path / 'ck')
    _save_checkpoint(local)
    assert checkpoints.latest(local) == os.path.join(local, 'ckpt-20')
    for name in os.listdir(local):
        if name.startswith('ckpt-20'):
            os.remove(os.path.join(local, name))
    with pytest.raises(checkpoints.CheckpointsUnreadable, match='names ckpt-20, whose files'):
        checkpoints.latest(local)
    with open(os.path.join(local, 'checkpoint'), 'w') as handle:
        handle.write('<?xml version="1.0"?><Error>')
    with pytest.raises(checkpoints.CheckpointsUnreadable, match='does not parse'):
        checkpoints.latest(local)


def test_tensorflow_io_reads_the_error_in_front_of_the_file(s3, relay):
    """Why the reads above do not use tf.io.gfile on a bucket: the AWS SDK's retry of the 500
    succeeds, and the failed attempt's body stays in front of the bytes read; TensorFlow's
    checkpoint reader then finds no checkpoint."""
    uri = s3.uri('serving', 'models.config')
    with tf.io.gfile.GFile(uri, 'w') as handle:
        handle.write('model_config_list {\n}\n' + '#' * 400)
    _save_checkpoint(s3.uri('ck'))
    relay.fail_next_get(f'{s3.name}/serving/models.config')
    relay.fail_next_get(f'{s3.name}/ck/checkpoint')
    script = textwrap.dedent(f'''
        import json
        from core import storage
        storage.enable()
        import tensorflow as tf
        with tf.io.gfile.GFile({uri!r}) as handle:
            text = handle.read()
        print(json.dumps({{'text': text, 'latest': tf.train.latest_checkpoint({s3.uri("ck")!r})}}))
    ''')
    done = subprocess.run([sys.executable, '-c', script], capture_output=True,
                          text=True, timeout=240,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(relay.failed) == 2, relay.failed
    assert seen['text'].startswith('<?xml version="1.0" encoding="UTF-8"?>\n<Error>'), seen
    assert seen['latest'] is None, seen


def test_open_read_streams_an_object_in_ranges_through_a_500_and_refuses_a_replaced_one(
        s3, relay, monkeypatch):
    """What CSV and Parquet ingestion read a bucket's files with (components/ingest): lines and
    seeks as in a local file, the object's bytes although a range's GET answers 500, and an
    error, not a mix of two versions, when the object is replaced while it is read."""
    monkeypatch.setattr(storage, 'READ_CHUNK_BYTES', 1000)   # several GETs for the file
    text = 'x,y,label\n' + ''.join(f'{i},{i % 3},label{i % 2}\n' for i in range(500))
    s3.server.client().put_object(Bucket=s3.name, Key='in/data.csv', Body=text.encode())
    uri = s3.uri('in', 'data.csv')
    with storage.open_read(uri) as handle:
        assert handle.readline() == b'x,y,label\n'
        relay.fail_next_get(f'{s3.name}/in/data.csv')   # the next range's GET
        rest = handle.read()
        assert handle.seek(0, 2) == len(text) and handle.tell() == len(text)
        handle.seek(10)
        assert handle.readline() == b'0,0,label0\n'
    assert b'x,y,label\n' + rest == text.encode()
    assert relay.failed == [f'{s3.name}/in/data.csv']
    with storage.open_read(uri) as handle:
        handle.read(10)
        s3.server.client().put_object(Bucket=s3.name, Key='in/data.csv', Body=b'other')
        with pytest.raises(OSError, match='PreconditionFailed|412'):
            handle.read()
    with pytest.raises(FileNotFoundError):
        storage.open_read(s3.uri('in', 'nothing.csv'))
