"""End-to-end: the compiled Kubeflow spec, task by task, as open-source KFP 2.17 runs it
(tests/support/kfp_launcher.py, mode 'oss': untyped id-named inputs with ML Metadata's converted
metadata, the executor-logs output, inputs copied into each pod, KFP's cache, no hook).

Three scheduled runs on a span layout, with one ML Metadata and cache: spans 1 and 2 have
landed, and the first run ingests both, trains on them, evaluates without a baseline and pushes
version 1; the second, on unchanged input, compares with the served model, trains nothing and
makes no new version (ImportSchemaGen comes from the cache); then a span-3 folder arrives and the
third ingests it, trains and pushes version 2, trained and evaluated on the window of spans 1-3
(spans 1 and 2 referenced, not converted again; the unchanged rerun's ingestion hard-linked run
1's shards). Without the hook, the span and the input fingerprint are resolved by ingestion
itself (components/ingest/executor.py), and the skip is the trainer's
(components/trainer/unchanged.py).
"""
import glob
import json
import os

import pytest
import tensorflow as tf
from google.protobuf import json_format

from pipeline.definition import config as config_lib
from pipeline.definition.config_kubeflow import KubeflowConfig
from pipeline.definition.config_retraining import RetentionConfig
from pipeline.kubeflow import compiler

from helpers import copy_digits, version_folders
import kfp_launcher

pytestmark = pytest.mark.e2e


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_oss')
    data = base / 'data'
    # Two spans have landed before the first run; a third arrives before the last.
    copy_digits(str(data / 'span-1'), per_class=30)
    copy_digits(str(data / 'span-2'), per_class=35)
    # KFP's cache as it is: retention (which compiles every task uncached) has its own
    # scenario, test_kubeflow_retention.py.
    cfg = config_lib.smoke_config(str(data), str(base / 'out'),
                                  schema_path=config_lib.DIGITS_SCHEMA,
                                  retention=RetentionConfig(keep_runs=0))
    # The "image" is this checkout: its paths stay as they are.
    kf = KubeflowConfig(image='local', output_file=str(base / 'pipeline.json'),
                                   image_workdir=config_lib.REPO_ROOT)
    job = kfp_launcher.load_job(compiler.compile_pipeline(cfg, kf))
    launcher = kfp_launcher.Launcher(workdir=str(base / 'pods'))
    first = launcher.run_job(job, 'run-1')
    unchanged = launcher.run_job(job, 'run-2')
    versions_after_unchanged = version_folders(cfg.serving_dir)
    copy_digits(str(data / 'span-3'), per_class=40)  # the next day's data arrives
    third = launcher.run_job(job, 'run-3')
    return cfg, launcher, first, unchanged, versions_after_unchanged, third


def _artifact(outputs, task, key):
    artifacts = outputs[task].artifacts[key].artifacts
    assert len(artifacts) == 1
    return artifacts[0]


def _metadata(outputs, task, key):
    return json_format.MessageToDict(_artifact(outputs, task, key).metadata)


def test_every_task_got_untyped_inputs_named_by_id_and_copies_of_them(runs):
    _, launcher, first, _, _, _ = runs
    record = launcher.tasks[('run-1', 'Evaluator')]
    [model] = record.executor_input.inputs.artifacts['model'].artifacts
    assert model.type.instance_schema == '' and model.name == \
        _artifact(first, 'ImageTrainer', 'model').name
    assert 'executor-logs' in record.executor_input.outputs.artifacts
    examples = _artifact(first, 'ImageExampleGen', 'examples')
    mirror = launcher.tasks[('run-1', 'StatisticsGen')].pod.local_path_for_uri(examples.uri)
    assert glob.glob(os.path.join(mirror, 'Split-train', '*.gz'))


def test_ingestion_resolves_the_latest_span_and_fingerprints_it(runs):
    cfg, _, first, _, _, third = runs
    examples = _metadata(first, 'ImageExampleGen', 'examples')
    assert examples['split_names'] == '["train", "eval"]'
    # `custom:` because Examples also has a `span` property; TFX's driver sets the custom one.
    assert examples['custom:span'] == 2 and examples['num_found'] == 105
    assert examples['input_fingerprint'].startswith('split:images,num_files:105,')
    uri = _artifact(first, 'ImageExampleGen', 'examples').uri
    for split in ('train', 'eval'):
        assert len(glob.glob(os.path.join(uri, f'Split-{split}', '*.gz'))) == \
            cfg.ingest.num_shards
    newer = _metadata(third, 'ImageExampleGen', 'examples')
    assert newer['custom:span'] == 3 and newer['num_found'] == 120  # the new span, not the old
    assert newer['input_fingerprint'] != examples['input_fingerprint']


def test_statistics_and_schema_and_the_schema_comes_from_the_cache_later(runs):
    _, launcher, first, unchanged, _, third = runs
    stats = _artifact(first, 'StatisticsGen', 'statistics')
    for split in ('train', 'eval'):
        assert os.path.getsize(os.path.join(stats.uri, f'Split-{split}', 'FeatureStats.pb')) > 0
    schema = _artifact(first, 'ImportSchemaGen', 'schema')
    assert os.path.getsize(os.path.join(schema.uri, 'schema.pbtxt')) > 0
    assert '/smoke/run-1/ImportSchemaGen/' in schema.uri
    for later in (unchanged, third):  # the same artifact, from the first run's folder
        assert _artifact(later, 'ImportSchemaGen', 'schema') == schema
    cached = sorted(task for (run, task), r in launcher.tasks.items() if r.cached)
    assert cached == ['ImportSchemaGen', 'ImportSchemaGen']


def test_the_first_run_trains_a_model_serving_three_classes(runs):
    _, _, first, _, _, _ = runs
    model = _artifact(first, 'ImageTrainer', 'model')
    assert _metadata(first, 'ImageTrainer', 'model')['steps_run'] == 30
    loaded = tf.saved_model.load(os.path.join(model.uri, 'Format-Serving'))
    examples = _artifact(first, 'ImageExampleGen', 'examples')
    records = tf.data.TFRecordDataset(
        glob.glob(os.path.join(examples.uri, 'Split-eval', '*.gz')), compression_type='GZIP')
    out = loaded.signatures['serving_default'](examples=tf.stack(list(records.take(4))))
    assert out['probabilities'].shape == (4, 3)


def test_the_first_run_evaluates_without_baseline_and_pushes_version_one(runs):
    cfg, _, first, _, _, _ = runs
    assert _metadata(first, 'ServedModelBaseline', 'baseline')['served_version'] == -1
    assert os.listdir(_artifact(first, 'Evaluator', 'evaluation').uri)
    blessing = _artifact(first, 'Evaluator', 'blessing')
    assert os.path.exists(os.path.join(blessing.uri, 'BLESSED'))
    assert 'baseline_model' not in _metadata(first, 'Evaluator', 'blessing')
    pushed = _metadata(first, 'Pusher', 'pushed_model')
    assert pushed['pushed'] == 1 and pushed['pushed_version'] == '1'  # TFX: a string
    assert pushed['pushed_destination'].startswith(cfg.serving_dir)
    assert os.path.exists(os.path.join(pushed['pushed_destination'], 'saved_model.pb'))


def test_unchanged_data_compares_with_the_served_model_and_trains_nothing(runs):
    _, _, first, unchanged, versions_after, _ = runs
    baseline = _artifact(unchanged, 'ServedModelBaseline', 'baseline')
    assert _metadata(unchanged, 'ServedModelBaseline', 'baseline')['served_version'] == 1
    # A reference, not a copy: TFMA read the served version in place.
    served = _metadata(unchanged, 'ServedModelBaseline', 'baseline')['served_path']
    assert not os.path.exists(os.path.join(baseline.uri, 'Format-Serving'))
    assert os.path.exists(os.path.join(served, 'saved_model.pb'))
    assert _metadata(unchanged, 'Evaluator', 'blessing')['baseline_model'] == served
    model = _metadata(unchanged, 'ImageTrainer', 'model')
    assert model['training_skipped'] == 1 and model['steps_run'] == 0
    assert model['stop_reason'].startswith('no new data: serving version 1 unchanged')
    assert model['eval_accuracy'] == _metadata(first, 'ImageTrainer', 'model')['eval_accuracy']
    pushed = _metadata(unchanged, 'Pusher', 'pushed_model')
    assert pushed['pushed_version'] == '1' and pushed['pushed_version_reused'] == 1
    assert versions_after == ['1']


def test_a_new_span_retrains_and_pushes_a_new_version(runs):
    cfg, _, _, _, _, third = runs
    model = _metadata(third, 'ImageTrainer', 'model')
    assert 'training_skipped' not in model and model['steps_run'] == 30
    assert _metadata(third, 'Pusher', 'pushed_model')['pushed_version'] == '2'
    assert version_folders(cfg.serving_dir) == ['1', '2']


def test_the_window_is_recorded_and_nothing_is_converted_twice(runs):
    _, _, first, unchanged, _, third = runs
    first_uri = _artifact(first, 'ImageExampleGen', 'examples').uri
    again = _artifact(unchanged, 'ImageExampleGen', 'examples').uri
    # Ingestion is uncached here: the unchanged rerun linked run 1's shards, no conversion.
    for shard in glob.glob(os.path.join(first_uri, 'Split-*', '*.gz')):
        assert os.path.samefile(shard, os.path.join(again, os.path.relpath(shard, first_uri)))
    window = json.loads(_metadata(third, 'ImageExampleGen', 'examples')['window'])
    assert [entry['span'] for entry in window] == [1, 2, 3]
    # The first run converted both spans that had landed: span 1 into a folder of its own in
    # its Examples. The last run references spans 1 and 2 where they are; span 3 is its own.
    assert window[0]['uri'] == os.path.join(first_uri, 'Span-1')
    assert window[1]['uri'] in (first_uri, again)
    assert window[2]['uri'] == _artifact(third, 'ImageExampleGen', 'examples').uri
    assert window[0]['num_train'] + window[0]['num_eval'] == 90
    assert window[1]['num_train'] + window[1]['num_eval'] == 105
    model = _metadata(third, 'ImageTrainer', 'model')
    assert model['spans'] == '1,2,3' and json.loads(model['window']) == window
    assert _metadata(first, 'ImageTrainer', 'model')['spans'] == '1,2'
    served = os.path.join(_metadata(third, 'Pusher', 'pushed_model')['pushed_destination'],
                          'assets.extra', 'training_data.json')
    with open(served) as handle:
        assert [entry['span'] for entry in json.load(handle)['window']] == [1, 2, 3]


def test_drift_is_measured_against_the_data_of_the_served_version(runs):
    _, _, first, _, _, third = runs
    assert _metadata(first, 'DriftCheck', 'drift')['drift_text'] == \
        'drift: not measured (nothing served yet)'
    drift = _metadata(third, 'DriftCheck', 'drift')
    assert drift['compared_version'] == 1  # trained on spans 1 and 2
    values = json.loads(drift['drift_values'])
    label = [v for v in values if v['feature'] in ('label', 'label_name')]
    # The same three classes, equally many, as the served version's data: no label drift.
    assert label and all(v['value'] < 0.05 and not v['exceeded'] for v in label), values
    assert drift['drift_text'].endswith('vs the data of served version 1')
