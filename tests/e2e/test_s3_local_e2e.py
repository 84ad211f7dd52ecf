"""A local run against a real S3 server (SeaweedFS, tests/support/seaweedfs.py), with flags
alone: `--data s3://…` (span folders in a landing bucket), `--pipeline-root s3://…` and
`--serving-dir s3://…`, ML Metadata, logs and the report staying under --output.

Run 1 ingests span 1 and pushes version 1 into the bucket, which then loads from s3:// and
predicts. Span 2 lands; run 2 (keeping 1 run) trains on the window, compares with version 1 and
pushes version 2, and retention deletes run 1's artifacts from the bucket. A rollback to version
1 makes version 3 there, which scores images in the bucket. No key in the bucket is a zero-byte
"folder" object (KFP #13476)."""
import os
import sys

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2
import pytest
import tensorflow as tf

from pipeline.runs import retention
from helpers import copy_digits, run_command, runner_command

pytestmark = pytest.mark.e2e


def _pngs(folder: str, count: int):
    names = sorted(os.listdir(folder))[:count]
    return [open(os.path.join(folder, name), 'rb').read() for name in names]


def test_local_run_on_s3(s3, tmp_path):
    data = tmp_path / 'landing'
    copy_digits(str(data / 'span-1'), per_class=30)
    s3.server.upload_folder(str(data / 'span-1'), s3.name, 'landing/span-1')
    out = str(tmp_path / 'out')
    serving = s3.uri('serving')
    command = runner_command(s3.uri('landing'), out, '--config', 'smoke', '--pipeline-root',
                             s3.uri('root'), '--serving-dir', serving, '--window', '2')

    first = run_command(command)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert f'pushed: version 1 at {serving}/1' in first.stdout
    # Small enough to be listed and run in-process (pipeline/definition/beam_mode.py lists the
    # bucket).
    assert 'beam: in-process' in first.stdout and '90 files' in first.stdout
    keys = s3.keys()
    assert 'serving/1/saved_model.pb' in keys and 'serving/1/variables/variables.index' in keys
    assert any(k.startswith('root/ImageExampleGen/examples/') for k in keys)
    assert not [k for k in keys if k.endswith('/')], 'zero-byte folder objects'
    assert os.path.isfile(os.path.join(out, 'metadata.sqlite'))
    assert not os.path.exists(os.path.join(out, 'serving'))
    assert not os.path.exists(os.path.join(out, 'pipeline_root'))

    loaded = tf.saved_model.load(f'{serving}/1')
    pngs = _pngs(str(data / 'span-1' / '1'), 4)
    scores = loaded.signatures['predict_images'](images=tf.constant(pngs))
    probabilities = next(v for k, v in scores.items() if v.shape == (4, 3)).numpy()
    assert probabilities.shape == (4, 3)
    assert abs(probabilities.sum(axis=1) - 1).max() < 1e-4

    copy_digits(str(data / 'span-2'), per_class=25)
    s3.server.upload_folder(str(data / 'span-2'), s3.name, 'landing/span-2')
    second = run_command(command + ['--keep-runs', '1'])
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert f'pushed: version 2 at {serving}/2' in second.stdout
    assert 'window: spans 1-2' in second.stdout, second.stdout
    assert 'baseline: served version 1' in second.stdout, second.stdout
    with open(os.path.join(out, 'report.html'), encoding='utf-8') as handle:
        assert 'Served now: version 2.' in handle.read()   # read from the bucket
    retained = next(line for line in second.stdout.splitlines() if 'retention:' in line)
    assert 'deleted' in retained, retained

    # What retention marked DELETED is gone from the bucket; what it kept is there.
    connection = metadata_store_pb2.ConnectionConfig()
    connection.sqlite.filename_uri = os.path.join(out, 'metadata.sqlite')
    store = metadata_store.MetadataStore(connection)
    artifacts = store.get_artifacts()
    deleted = [a.uri for a in artifacts if a.state == metadata_store_pb2.Artifact.DELETED]
    live = [a.uri for a in artifacts if a.state == metadata_store_pb2.Artifact.LIVE
            and a.uri.startswith(s3.uri('root'))]
    assert deleted and live
    keys = s3.keys()
    prefix = s3.uri('')
    for uri in deleted:
        assert not [k for k in keys if k.startswith(uri[len(prefix):] + '/')
                    or k == uri[len(prefix):]], uri
    assert any(k.startswith('root/ImageTrainer/model/') for k in keys)
    assert not [k for k in keys if k.endswith('/')]
    assert retention.HIDDEN_PREFIX not in ' '.join(keys)

    rolled = run_command([sys.executable, 'runner.py', '--rollback', '1', '--output', out,
                          '--serving-dir', serving], timeout=300)
    assert rolled.returncode == 0, rolled.stderr[-3000:]
    assert f'{serving}/3' in rolled.stdout
    keys = s3.keys('serving/')
    assert {k.split('/')[1] for k in keys} == {'1', '2', '3', 'models.config'}
    one = {k[len('serving/1/'):]: size for k, size in keys.items() if k.startswith('serving/1/')}
    three = {k[len('serving/3/'):]: size for k, size in keys.items() if k.startswith('serving/3/')}
    assert one == three

    # Scoring images that sit in the bucket with the version served from it.
    scored = run_command([sys.executable, 'runner.py', '--score', s3.uri('landing', 'span-1', '1'),
                          '--output', out, '--serving-dir', serving], timeout=300)
    assert scored.returncode == 0, scored.stdout[-3000:] + scored.stderr[-3000:]
    assert f'Scored 30 of 30 inputs with model version 3 ({serving}/3)' in scored.stdout
