"""End-to-end: the real pipeline under LocalDagRunner on 3 classes x 30 digits (marked e2e).

Runs the same create_pipeline() as `runner.py --local`, with the smoke config: real Beam,
TFDV, TFMA and ML Metadata, a few training steps.
"""
import dataclasses
import glob
import os

import numpy as np
import pytest
from PIL import Image
import tensorflow as tf

from components.gate.executor import DataAnomaliesError
from pipeline.definition import config as config_lib
from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text

from helpers import copy_digits, run_pipeline, version_folders

pytestmark = pytest.mark.e2e


@pytest.fixture(scope='module')
def first_and_second_run(served_digits):
    """The shared smoke run on 3 classes x 30 digits (conftest.py, served_digits: runner.py
    --config smoke, the curated digits schema) and the same pipeline run again."""
    return served_digits.cfg, served_digits.first, served_digits.second


def _only(summary, type_name):
    if type_name == 'Model':  # the trained candidate, not the baseline model
        return summary.trained_model()
    artifacts = summary.outputs[type_name]
    assert len(artifacts) == 1, (type_name, artifacts)
    return artifacts[0]


def test_first_run_executes_every_component(first_and_second_run):
    _, first, _ = first_and_second_run
    assert set(first.states) == {'ImageExampleGen', 'ImportSchemaGen', 'StatisticsGen',
                                 'ExampleValidator', 'AnomalyGate', 'ImageTrainer',
                                 'ServedModelBaseline', 'DriftCheck', 'Evaluator', 'Pusher'}
    assert set(first.states.values()) == {'COMPLETE'}
    # Nothing served yet: no drift measured, and the summary says why.
    assert '  drift: not measured (nothing served yet)' in summary_text.format_summary(first)


def test_examples_have_both_splits_with_the_configured_shards(first_and_second_run):
    cfg, first, _ = first_and_second_run
    examples = _only(first, 'Examples')
    for split in ('train', 'eval'):
        shards = glob.glob(os.path.join(examples.uri, f'Split-{split}', '*.gz'))
        assert len(shards) == cfg.ingest.num_shards
    found = examples.custom_properties['num_found'].int_value
    written = sum(examples.custom_properties[f'num_written_{s}'].int_value
                  for s in ('train', 'eval'))
    assert found == written == 90


def test_statistics_and_schema_exist(first_and_second_run):
    _, first, _ = first_and_second_run
    stats = _only(first, 'ExampleStatistics')
    for split in ('train', 'eval'):
        assert os.path.getsize(os.path.join(stats.uri, f'Split-{split}', 'FeatureStats.pb')) > 0
    assert os.path.getsize(os.path.join(_only(first, 'Schema').uri, 'schema.pbtxt')) > 0


def test_trained_model_loads_and_predicts(first_and_second_run):
    _, first, _ = first_and_second_run
    model = tf.saved_model.load(os.path.join(_only(first, 'Model').uri, 'Format-Serving'))
    examples = _only(first, 'Examples')
    records = tf.data.TFRecordDataset(
        glob.glob(os.path.join(examples.uri, 'Split-eval', '*.gz')), compression_type='GZIP')
    batch = tf.stack([r for r in records.take(5)])
    out = model.signatures['serving_default'](examples=batch)
    assert out['probabilities'].shape == (5, 3)
    np.testing.assert_allclose(out['probabilities'].numpy().sum(axis=1), 1.0, rtol=1e-5)


def test_digits_train_at_8x8x1_with_nothing_configured(first_and_second_run):
    cfg, first, _ = first_and_second_run
    assert cfg.train.image_size is None and cfg.train.channels is None
    model = _only(first, 'Model')
    assert [model.custom_properties[f'input_{n}'].int_value
            for n in ('height', 'width', 'channels')] == [8, 8, 1]
    train = _only(first, 'Examples').custom_properties['num_written_train'].int_value
    assert (f'  input: trained at 8×8×1; all {train} images 8×8; 1 channel from the data: all '
            'images grayscale') in summary_text.format_summary(first)


def test_blessing_written_and_model_pushed_to_serving(first_and_second_run):
    cfg, first, _ = first_and_second_run
    blessing = _only(first, 'ModelBlessing')
    assert os.path.exists(os.path.join(blessing.uri, 'BLESSED'))
    versions = version_folders(cfg.serving_dir)
    assert len(versions) == 1 and versions[0].isdigit()
    assert os.path.exists(os.path.join(cfg.serving_dir, versions[0], 'saved_model.pb'))
    pushed = _only(first, 'PushedModel')
    assert pushed.custom_properties['pushed'].int_value == 1
    # Nothing was served before the first run: the Evaluator ran without a baseline.
    assert first.baseline_model().custom_properties['served_version'].int_value == -1
    assert 'baseline: none' in summary_text.format_summary(first)


def test_second_run_with_nothing_changed_is_served_from_the_cache(first_and_second_run):
    cfg, first, second = first_and_second_run
    assert second.run_id != first.run_id
    assert set(second.states.values()) == {'CACHED'}, second.states
    assert len(second.states) == 10
    assert len(version_folders(cfg.serving_dir)) == 1  # no second copy of the same model


def test_new_class_with_other_image_size_stops_the_run_before_training(tmp_path):
    data = copy_digits(str(tmp_path / 'data'), classes=('0', '1', '2'), per_class=30)
    os.makedirs(os.path.join(data, 'x'))
    for i in range(10):
        Image.fromarray(np.full((16, 16), 40 * (i % 6), np.uint8)).save(
            os.path.join(data, 'x', f'{i}.png'))
    cfg = config_lib.smoke_config(data, str(tmp_path / 'out'), schema_path=config_lib.DIGITS_SCHEMA)
    with pytest.raises(DataAnomaliesError) as raised:
        run_pipeline(cfg)
    message = str(raised.value)
    assert 'label_name' in message and 'image/height' in message
    states = summary_lib.read_latest_run(cfg.metadata_path, cfg.name).states
    assert states['AnomalyGate'] == 'FAILED'
    assert 'ImageTrainer' not in states
    assert not os.path.exists(cfg.serving_dir)


def _served_baseline(summary):
    return summary.baseline_model().custom_properties['served_version'].int_value


def test_retraining_new_data_is_compared_with_production_and_pushed_only_if_not_worse(
        first_and_second_run):
    # Runs after the tests above (file order): it adds data to the same input and run folder.
    cfg, first, _ = first_and_second_run
    [production] = version_folders(cfg.serving_dir)
    copy_digits(cfg.ingest.data_dir, classes=('0', '1', '2'), per_class=40)  # 10 new per class

    # New data: new ingestion and training (warm-started from production), evaluated against it.
    third = run_pipeline(dataclasses.replace(
        cfg, train=dataclasses.replace(cfg.train, warm_start=True)))
    assert third.states['ImageExampleGen'] == third.states['ImageTrainer'] == 'COMPLETE'
    trained = third.trained_model()
    assert trained.custom_properties['warm_start_version'].double_value == int(production)
    assert _only(third, 'Examples').custom_properties['num_found'].int_value == 120
    assert _served_baseline(third) == int(production)
    blessing = _only(third, 'ModelBlessing')
    assert blessing.custom_properties['baseline_model'].string_value  # compared with it
    assert blessing.custom_properties['blessed'].int_value == 1  # smoke bar: any drop allowed
    assert len(version_folders(cfg.serving_dir)) == 2
    newest = max(version_folders(cfg.serving_dir), key=int)
    # Compared with production on the same examples: the change and its interval are stated.
    assert blessing.custom_properties['regression_check'].string_value.startswith(
        f'sparse_categorical_accuracy change vs served version {production} ')
    assert '  drift: ' in summary_text.format_summary(third)

    # A worse model (one training step) with no regression allowed: evaluated, not pushed.
    worse = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, train_steps=1),
                                eval=dataclasses.replace(cfg.eval, max_regression=0.0))
    fourth = run_pipeline(worse)
    assert fourth.states['ImageExampleGen'] == 'CACHED'  # same data: no new ingestion
    assert fourth.states['ImageTrainer'] == 'COMPLETE'   # changed config: trained again
    assert _served_baseline(fourth) == int(newest)
    assert _only(fourth, 'ModelBlessing').custom_properties['blessed'].int_value == 0
    assert 'worse beyond noise' in _only(fourth, 'ModelBlessing').custom_properties[
        'blessing_reasons'].string_value
    assert _only(fourth, 'PushedModel').custom_properties['pushed'].int_value == 0
    assert sorted(version_folders(cfg.serving_dir), key=int)[-1] == newest  # production unchanged
