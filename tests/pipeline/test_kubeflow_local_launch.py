"""End-to-end: the compiled Kubeflow spec, executed task by task as KFP's launcher would.

Compiles create_pipeline() for a small sample (smoke config), then runs every task's container
command from the spec in a subprocess (kfp_launcher.py), twice, with the preCacheCheck hook as
Vertex AI runs it: the first run has nothing served (no baseline) and pushes; the second, on the
same input, compares with that served model, trains nothing and makes no new version.
"""
import glob
import os

import pytest
import tensorflow as tf
from google.protobuf import json_format

from pipeline import config as config_lib
from pipeline import kubeflow

from helpers import smoke_sample_config
import kfp_launcher

pytestmark = pytest.mark.e2e


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_launch')
    cfg = smoke_sample_config(str(base))
    # The "image" is this checkout: its paths stay as they are.
    kf = config_lib.KubeflowConfig(image='local', output_file=str(base / 'pipeline.json'),
                                   image_workdir=config_lib.REPO_ROOT)
    job = kfp_launcher.load_job(kubeflow.compile_pipeline(cfg, kf))
    first = kfp_launcher.run_job(job, 'run-1')
    second = kfp_launcher.run_job(job, 'run-2')
    return cfg, first, second


def _artifact(outputs, task, key):
    artifacts = outputs[task].artifacts[key].artifacts
    assert len(artifacts) == 1
    return artifacts[0]


def _metadata(artifact):
    return json_format.MessageToDict(artifact.metadata)


def test_ingestion_writes_tfrecords_after_the_fingerprint_driver(runs):
    cfg, first, _ = runs
    examples = _artifact(first, 'ImageExampleGen', 'examples')
    assert _metadata(examples)['split_names'] == '["train", "eval"]'
    for split in ('train', 'eval'):
        assert len(glob.glob(os.path.join(examples.uri, f'Split-{split}', '*.gz'))) == \
            cfg.ingest.num_shards
    with open(os.path.join(os.path.dirname(os.path.dirname(examples.uri)),
                           'ImageExampleGen', 'log.txt')) as log:
        assert 'Calculated fingerprint' in log.read()  # the preCacheCheck hook ran


def test_statistics_and_schema(runs):
    _, first, _ = runs
    stats = _artifact(first, 'StatisticsGen', 'statistics')
    for split in ('train', 'eval'):
        assert os.path.getsize(os.path.join(stats.uri, f'Split-{split}', 'FeatureStats.pb')) > 0
    schema = _artifact(first, 'ImportSchemaGen', 'schema')
    assert os.path.getsize(os.path.join(schema.uri, 'schema.pbtxt')) > 0


def test_trained_model_serves_three_classes(runs):
    _, first, _ = runs
    model = _artifact(first, 'ImageTrainer', 'model')
    loaded = tf.saved_model.load(os.path.join(model.uri, 'Format-Serving'))
    examples = _artifact(first, 'ImageExampleGen', 'examples')
    records = tf.data.TFRecordDataset(
        glob.glob(os.path.join(examples.uri, 'Split-eval', '*.gz')), compression_type='GZIP')
    out = loaded.signatures['serving_default'](examples=tf.stack(list(records.take(4))))
    assert out['probabilities'].shape == (4, 3)
    assert 'eval_accuracy' in _metadata(model)


def test_first_run_evaluates_without_baseline_and_pushes(runs):
    cfg, first, _ = runs
    assert _metadata(_artifact(first, 'ServedModelBaseline', 'baseline'))['served_version'] == -1
    evaluation = _artifact(first, 'Evaluator', 'evaluation')
    assert os.listdir(evaluation.uri)
    blessing = _artifact(first, 'Evaluator', 'blessing')
    assert os.path.exists(os.path.join(blessing.uri, 'BLESSED'))
    assert 'baseline_model' not in _metadata(blessing)
    pushed = _metadata(_artifact(first, 'Pusher', 'pushed_model'))
    assert pushed['pushed'] == 1
    assert os.path.exists(os.path.join(pushed['pushed_destination'], 'saved_model.pb'))
    assert pushed['pushed_destination'].startswith(cfg.serving_dir)


def test_second_run_compares_with_the_served_model(runs):
    cfg, first, second = runs
    served = int(os.path.basename(_metadata(_artifact(first, 'Pusher', 'pushed_model'))
                                  ['pushed_destination']))
    baseline = _artifact(second, 'ServedModelBaseline', 'baseline')
    assert _metadata(baseline)['served_version'] == served
    assert os.path.exists(os.path.join(baseline.uri, 'Format-Serving', 'saved_model.pb'))
    blessing = _metadata(_artifact(second, 'Evaluator', 'blessing'))
    assert blessing['baseline_model'] == baseline.uri
    # The same input (the hook's fingerprint), settings and code: the served model was handed
    # on untrained, found equal to itself, and no new version was made.
    model = _metadata(_artifact(second, 'ImageTrainer', 'model'))
    assert model['training_skipped'] == 1 and model['stop_reason'].startswith(
        f'no new data: serving version {served} unchanged')
    pushed = _metadata(_artifact(second, 'Pusher', 'pushed_model'))
    assert pushed['pushed_version'] == str(served) and pushed['pushed_version_reused'] == 1
    assert os.listdir(cfg.serving_dir) == [str(served)]
