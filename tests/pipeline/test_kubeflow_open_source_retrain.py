"""End-to-end: scheduled runs under open-source KFP's behaviour (no preCacheCheck hook, no
cache), task by task from the compiled spec (kfp_launcher.py, run_hooks=False).

Three runs on a span layout: the first ingests span-1 and pushes version 1; the second, on
unchanged input, trains nothing and makes no new version; then a span-2 folder arrives and the
third ingests it, trains and pushes version 2. Without the hook, the span and the input
fingerprint are resolved by ingestion itself (components/ingest/executor.py), and the skip is
the trainer's (components/trainer/unchanged.py).
"""
import os

import pytest
from google.protobuf import json_format

from pipeline import config as config_lib
from pipeline import kubeflow

from helpers import copy_digits
import kfp_launcher

pytestmark = pytest.mark.e2e


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_oss')
    data = base / 'data'
    copy_digits(str(data / 'span-1'), per_class=30)
    cfg = config_lib.smoke_config(str(data), str(base / 'out'),
                                  schema_path=config_lib.DIGITS_SCHEMA)
    kf = config_lib.KubeflowConfig(image='local', output_file=str(base / 'pipeline.json'),
                                   image_workdir=config_lib.REPO_ROOT)
    job = kfp_launcher.load_job(kubeflow.compile_pipeline(cfg, kf))
    first = kfp_launcher.run_job(job, 'run-1', run_hooks=False)
    unchanged = kfp_launcher.run_job(job, 'run-2', run_hooks=False)
    versions_after_unchanged = sorted(os.listdir(cfg.serving_dir))
    copy_digits(str(data / 'span-2'), per_class=35)  # the next day's data arrives
    third = kfp_launcher.run_job(job, 'run-3', run_hooks=False)
    return cfg, first, unchanged, versions_after_unchanged, third


def _metadata(outputs, task, key):
    artifacts = outputs[task].artifacts[key].artifacts
    assert len(artifacts) == 1
    return json_format.MessageToDict(artifacts[0].metadata)


def test_without_the_hook_ingestion_resolves_the_latest_span_and_fingerprints_it(runs):
    _, first, _, _, third = runs
    examples = _metadata(first, 'ImageExampleGen', 'examples')
    # `custom:` because Examples also has a `span` property; TFX's driver sets the custom one.
    assert examples['custom:span'] == 1 and examples['num_found'] == 90
    assert examples['input_fingerprint'].startswith('split:images,num_files:90,')
    newer = _metadata(third, 'ImageExampleGen', 'examples')
    assert newer['custom:span'] == 2 and newer['num_found'] == 105  # the new span, not the old
    assert newer['input_fingerprint'] != examples['input_fingerprint']


def test_the_first_run_trains_and_pushes_version_one(runs):
    _, first, _, _, _ = runs
    model = _metadata(first, 'ImageTrainer', 'model')
    assert 'training_skipped' not in model and model['steps_run'] == 30
    # TFX's Pusher records the version as a string.
    assert _metadata(first, 'Pusher', 'pushed_model')['pushed_version'] == '1'


def test_unchanged_data_trains_nothing_and_makes_no_new_version(runs):
    _, first, unchanged, versions_after, _ = runs
    model = _metadata(unchanged, 'ImageTrainer', 'model')
    assert model['training_skipped'] == 1 and model['steps_run'] == 0
    assert model['stop_reason'].startswith('no new data: serving version 1 unchanged')
    assert model['eval_accuracy'] == _metadata(first, 'ImageTrainer', 'model')['eval_accuracy']
    pushed = _metadata(unchanged, 'Pusher', 'pushed_model')
    assert pushed['pushed_version'] == '1' and pushed['pushed_version_reused'] == 1
    assert versions_after == ['1']


def test_a_new_span_retrains_and_pushes_a_new_version(runs):
    cfg, _, _, _, third = runs
    model = _metadata(third, 'ImageTrainer', 'model')
    assert 'training_skipped' not in model and model['steps_run'] == 30
    assert _metadata(third, 'Pusher', 'pushed_model')['pushed_version'] == '2'
    assert sorted(os.listdir(cfg.serving_dir)) == ['1', '2']
