"""End-to-end: three scheduled runs as spans land in a bucket, one of them drifted, then a
rollback and a scoring job, all on a real S3 server (SeaweedFS, tests/support/seaweedfs.py).

Scheduled retraining on the embedded digits (real 8x8 scans), through `runner.py --local` as a
nightly job runs it, with flags alone: `--data s3://…` (span folders in a landing bucket),
`--pipeline-root s3://…` and `--serving-dir s3://…` (ML Metadata, logs and the report stay under
--output), the smoke settings, --keep-runs 2 and --window 2:
  day 1: span-1 (4 classes, 30 images each)     -> trains on span 1, pushes version 1, which
                                                   loads from s3:// and predicts
  day 2: span-2, drifted: 44 threes, 3 of each  -> trains on spans 1-2; label drift reported with
         other class                               its figure against the data of version 1; not
                                                   pushed; exit 0
  day 3: span-3 (the usual mix)                 -> trains on spans 2-3 (window 2, span 1 left
                                                   out), compared with version 1 read from the
                                                   bucket, pushes version 2
Every span holds images no other span has. (A fourth day, a balanced day before the drifted one,
showed nothing these three do not: the push after a comparison is day 3's, and --window 2 drops
a span one day sooner than the default 3.) Then `runner.py --rollback 1` serves version 1's
model again as the newest version, in the bucket, and `runner.py --score` scores images that sit
in the bucket with it. Along the way: the spans already ingested are not converted again, the
window is recorded on the Model, retention deletes older runs' artifacts from the bucket, marked
DELETED in ML Metadata, while every artifact still LIVE is there; no key in the bucket is a
zero-byte "folder" object (KFP #13476).
"""
import json
import os
import sys

import pytest
import tensorflow as tf

from pipeline.runs import retention
from helpers import DIGITS, run_command, runner_command

pytestmark = pytest.mark.e2e

CLASSES = ('0', '1', '2', '3')
SLICE = 44   # each span takes its own slice of each class's files: nothing is shared


def _land(store, bucket: str, base: str, span: int, counts: dict) -> None:
    folder = os.path.join(base, f'span-{span}')
    for name, count in counts.items():
        files = sorted(os.listdir(os.path.join(DIGITS, name)))[(span - 1) * SLICE:][:count]
        os.makedirs(os.path.join(folder, name))
        for file_name in files:
            os.link(os.path.join(DIGITS, name, file_name),
                    os.path.join(folder, name, file_name))
    store.upload_folder(folder, bucket, f'landing/span-{span}')


def _served(store, bucket: str) -> list:
    return sorted({int(key.split('/')[1]) for key in store.keys(bucket, 'serving/')
                   if key.split('/')[1].isdigit()})


@pytest.fixture(scope='module')
def days(store, tmp_path_factory):
    base = tmp_path_factory.mktemp('retraining')
    bucket = store.new_bucket()
    root, serving = f's3://{bucket}/root', f's3://{bucket}/serving'
    out = str(base / 'out')
    drifted = {'3': SLICE, '0': 3, '1': 3, '2': 3}
    results, keys, reports, loaded = [], [], [], None
    for span in (1, 2, 3):
        _land(store, bucket, str(base / 'landing'), span,
              drifted if span == 2 else {name: 30 for name in CLASSES})
        # No curated schema: the schema is inferred once and then kept (the served data's).
        done = run_command(runner_command(
            f's3://{bucket}/landing', out, '--config', 'smoke', '--keep-runs', '2', '--window',
            '2', '--pipeline-root', root, '--serving-dir', serving, digits_schema=False))
        results.append((done, _served(store, bucket)))
        keys.append(store.keys(bucket))
        with open(os.path.join(out, 'report.html'), encoding='utf-8') as handle:
            reports.append(handle.read())
        if span == 1 and done.returncode == 0:   # what the bucket serves, before retention
            loaded = _predict(f'{serving}/1', os.path.join(DIGITS, '1'))
    rollback = run_command([sys.executable, 'runner.py', '--rollback', '1', '--output', out,
                            '--serving-dir', serving], timeout=300)
    keys.append(store.keys(bucket))   # after the rollback
    scored = run_command([sys.executable, 'runner.py', '--score', f's3://{bucket}/landing/span-1/1',
                          '--output', out, '--serving-dir', serving], timeout=300)
    return {'out': out, 'bucket': bucket, 'store': store, 'serving': serving, 'root': root,
            'results': results, 'keys': keys, 'reports': reports, 'loaded': loaded,
            'rollback': rollback, 'scored': scored, 'keys_at_end': store.keys(bucket)}


def _predict(version_uri: str, folder: str):
    """The probabilities the version, loaded from its s3:// folder, gives 4 PNGs of folder."""
    pngs = [open(os.path.join(folder, name), 'rb').read()
            for name in sorted(os.listdir(folder))[:4]]
    scores = tf.saved_model.load(version_uri).signatures['predict_images'](
        images=tf.constant(pngs))
    return next(v for v in scores.values() if v.shape == (4, len(CLASSES))).numpy()


def _store(out: str):
    from ml_metadata import metadata_store
    from ml_metadata.proto import metadata_store_pb2
    return metadata_store.MetadataStore(metadata_store_pb2.ConnectionConfig(
        sqlite=metadata_store_pb2.SqliteMetadataSourceConfig(
            filename_uri=os.path.join(out, 'metadata.sqlite'))))


def _models(out: str) -> list:
    """The trained Models, oldest first, as {property: value}."""
    models = sorted(_store(out).get_artifacts_by_type('Model'), key=lambda a: a.id)
    return [{k: v.string_value or v.int_value for k, v in m.custom_properties.items()}
            for m in models if m.custom_properties.get('spans')]


def _key(days, uri: str) -> str:
    return uri[len(f"s3://{days['bucket']}/"):]


def test_every_day_exits_zero_and_only_good_days_reach_serving(days):
    for done, _ in days['results']:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert [served for _, served in days['results']] == [[1], [1], [1, 2]]


def test_the_first_day_serves_from_the_bucket_and_keeps_only_its_records_local(days):
    first = days['results'][0][0].stdout
    assert f"pushed: version 1 at {days['serving']}/1" in first
    # Small enough to be listed and run in-process (pipeline/definition/beam_mode.py lists the
    # bucket).
    assert 'beam: in-process' in first and '120 files' in first, first
    keys = days['keys'][0]
    assert 'serving/1/saved_model.pb' in keys and 'serving/1/variables/variables.index' in keys
    assert any(k.startswith('root/ImageExampleGen/examples/') for k in keys)
    out = days['out']
    assert os.path.isfile(os.path.join(out, 'metadata.sqlite'))
    assert not os.path.exists(os.path.join(out, 'serving'))
    assert not os.path.exists(os.path.join(out, 'pipeline_root'))
    probabilities = days['loaded']
    assert probabilities is not None and probabilities.shape == (4, len(CLASSES))
    assert abs(probabilities.sum(axis=1) - 1).max() < 1e-4


def test_no_key_in_the_bucket_is_a_folder_object(days):
    for keys in days['keys'] + [days['keys_at_end']]:
        assert not [k for k in keys if k.endswith('/')], 'zero-byte folder objects'
        assert retention.HIDDEN_PREFIX not in ' '.join(keys)


def test_the_next_push_compares_with_version_one_read_from_the_bucket(days):
    third = days['results'][2][0].stdout
    assert f"pushed: version 2 at {days['serving']}/2" in third
    assert 'baseline: served version 1' in third, third
    assert 'Served now: version 2.' in days['reports'][2]   # read from the bucket


def test_the_drifted_span_is_reported_with_its_figure_and_not_pushed(days):
    results = days['results']
    console = results[1][0].stdout
    drift = [line.strip() for line in console.splitlines() if line.strip().startswith('drift:')]
    assert drift, console
    # 44 of 53 images are threes: L-infinity about 0.83 - 0.25 against the balanced day.
    assert 'label' in drift[0] and '> 0.30' in drift[0] and 'served version 1' in drift[0]
    figure = float(drift[0].split('L∞ ')[1].split()[0])
    assert 0.45 <= figure <= 0.70, drift[0]
    pushed = [line for line in console.splitlines() if line.strip().startswith('pushed:')]
    assert pushed and 'no' in pushed[0] and 'label L∞' in pushed[0], console
    # The normal day after it is measured too, below the threshold.
    later = [line.strip() for line in results[2][0].stdout.splitlines()
             if line.strip().startswith('drift:')]
    assert later and '> 0.30' not in later[0], results[2][0].stdout


def test_each_model_trains_on_the_window_and_records_its_spans(days):
    out = days['out']
    spans = [model['spans'] for model in _models(out)]
    assert spans == ['1', '1,2', '2,3'], spans
    window = json.loads(_models(out)[-1]['window'])
    assert [entry['span'] for entry in window] == [2, 3]
    keys = days['keys'][2]
    for entry in window:  # every span of the window is still in the bucket
        assert [k for k in keys if k.startswith(_key(days, entry['uri']) + '/Split-train/')]
    with tf.io.gfile.GFile(f"{days['serving']}/2/assets.extra/training_data.json") as handle:
        assert [e['span'] for e in json.load(handle)['window']] == [2, 3]


def test_spans_already_ingested_are_not_converted_again(days):
    # Each run's ingestion wrote (converted) only the span that was new that day.
    examples = sorted(_store(days['out']).get_artifacts_by_type('Examples'), key=lambda a: a.id)
    found = [a.custom_properties['num_found'].int_value for a in examples]
    assert found == [120, 53, 120], found


def test_retention_deletes_old_runs_from_the_bucket_and_marks_them_in_ml_metadata(days):
    results = days['results']
    assert any('retention:' in line and 'deleted' in line
               for line in results[2][0].stdout.splitlines()), results[2][0].stdout
    from ml_metadata.proto import metadata_store_pb2
    artifacts = _store(days['out']).get_artifacts()
    keys = days['keys'][2]

    def present(uri):
        key = _key(days, uri)
        return any(k == key or k.startswith(key + '/') for k in keys)
    deleted = [a for a in artifacts if a.state == metadata_store_pb2.Artifact.DELETED]
    assert deleted
    for artifact in deleted:
        assert not present(artifact.uri), artifact.uri
    # Every LIVE artifact of a kind that always has files is there (a folder with no file,
    # such as a baseline compared in place, has no object in a bucket).
    types = {t.id: t.name for t in _store(days['out']).get_artifact_types()}
    live = [a for a in artifacts if a.state == metadata_store_pb2.Artifact.LIVE
            and types[a.type_id] in ('Examples', 'Model', 'ExampleStatistics', 'ModelEvaluation')]
    assert any(types[a.type_id] == 'Model' for a in live)
    for artifact in live:
        assert present(artifact.uri), artifact.uri


def test_rollback_serves_version_one_again_as_the_newest_in_the_bucket(days):
    rollback = days['rollback']
    assert rollback.returncode == 0, rollback.stdout + rollback.stderr
    assert f"{days['serving']}/3" in rollback.stdout
    keys = days['store'].keys(days['bucket'], 'serving/')
    assert _served(days['store'], days['bucket'])[-1] == 3
    one = {k[len('serving/1/'):]: size for k, size in keys.items() if k.startswith('serving/1/')}
    three = {k[len('serving/3/'):]: size for k, size in keys.items() if k.startswith('serving/3/')}
    assert one and one == three
    for name in ('saved_model.pb', 'assets.extra/training_data.json'):   # the same bytes
        read = [days['store'].client().get_object(
            Bucket=days['bucket'], Key=f'serving/{v}/{name}')['Body'].read() for v in (1, 3)]
        assert read[0] == read[1], name
    with open(os.path.join(days['out'], 'rollbacks.jsonl')) as handle:
        record = json.loads(handle.readlines()[-1])
    assert record['version'] == 3 and record['copy_of'] == 1


def test_images_in_the_bucket_are_scored_with_the_version_served_from_it(days):
    scored = days['scored']
    assert scored.returncode == 0, scored.stdout[-3000:] + scored.stderr[-3000:]
    assert (f"Scored 30 of 30 inputs with model version 3 ({days['serving']}/3)"
            in scored.stdout), scored.stdout
