"""Tests of a whole training job on real digit examples: train, export, reload, predict."""
import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from core import features, inputs
from training import data, job as job_lib, length, plan
from training import loop

from helpers import DIGITS, write_digit_examples


def test_import_builder_resolves_both_spellings_and_explains_errors():
    from models import resnet
    assert job_lib.import_builder('models.resnet.build_model') is resnet.build_model
    assert job_lib.import_builder('models.resnet:build_model') is resnet.build_model
    with pytest.raises(ValueError, match='Cannot import'):
        job_lib.import_builder('no_such_package.build')
    with pytest.raises(ValueError, match='no callable'):
        job_lib.import_builder('models.resnet.missing')
    with pytest.raises(ValueError, match='must look like'):
        job_lib.import_builder('build_model')


def _split(overrides):
    """(TrainJob fields, TrainParams fields) of keyword arguments."""
    names = {field.name for field in dataclasses.fields(job_lib.TrainJob)}
    return ({k: v for k, v in overrides.items() if k in names},
            {k: v for k, v in overrides.items() if k not in names})


def _digits_job(tmp_path, **overrides):
    """A 60-update job on 3 classes of real digits (40 train, 10 eval each); (job, eval)."""
    classes = ('0', '1', '2')
    write_digit_examples(str(tmp_path / 'train' / 'part.gz'), classes, per_class=40)
    eval_examples = write_digit_examples(str(tmp_path / 'eval' / 'part.gz'), classes, per_class=10,
                                    offset=40)
    fields, params = _split(overrides)
    job = job_lib.TrainJob(
        train_pattern=str(tmp_path / 'train' / '*'), eval_pattern=str(tmp_path / 'eval' / '*'),
        class_names=classes, image_shape=(8, 8, 1),
        options=loop.LoopOptions.of(**{**dict(
            train_steps=60, global_batch_size=32, learning_rate=3e-3, log_every=20,
            model_builder='models.resnet.build_model', seed=1), **params}), **fields)
    return job, eval_examples


def test_train_export_and_serve_on_real_digits(tmp_path):
    job, eval_examples = _digits_job(tmp_path)
    serving_dir = str(tmp_path / 'model' / 'Format-Serving')
    metrics = job_lib.train_and_export(job, serving_dir, str(tmp_path / 'logs'))

    assert metrics.eval_accuracy >= 0.8  # 3 easy classes: a broken loop stays near 0.33
    with open(tmp_path / 'logs' / 'metrics.json') as handle:
        assert json.load(handle) == pytest.approx(metrics.to_metrics())
    assert not os.path.exists(serving_dir + '.tmp')  # written aside, then renamed into place

    serve = tf.saved_model.load(serving_dir).signatures['serving_default']
    batch = tf.constant([e.SerializeToString() for e in eval_examples])
    out = serve(examples=batch)
    labels = np.array([e.features.feature[features.LABEL_KEY].int64_list.value[0]
                       for e in eval_examples])
    assert out['probabilities'].shape == (30, 3)
    np.testing.assert_allclose(out['probabilities'].numpy().sum(axis=1), 1.0, rtol=1e-5)
    assert out['probabilities'].dtype == tf.float32
    assert list(out['class_ids'].numpy()) == list(out['probabilities'].numpy().argmax(axis=1))
    names = [n.decode() for n in out['class_names'].numpy()[:, 0]]
    assert names == [job.class_names[i] for i in out['class_ids'].numpy()]
    # The exported accuracy is the evaluated accuracy: same preprocessing in both graphs.
    assert np.mean(out['class_ids'].numpy() == labels) == pytest.approx(metrics.eval_accuracy)
    # TF Serving's warm-up requests: the first eval examples, for each of the three signatures.
    warmup_file = os.path.join(serving_dir, 'assets.extra', 'tf_serving_warmup_requests')
    assert sum(1 for _ in tf.data.TFRecordDataset(warmup_file)) == 3 * 8


def test_cached_and_uncached_streams_are_the_same_examples_in_the_same_order(tmp_path):
    from training import data
    write_digit_examples(str(tmp_path / 'train' / 'part.gz'), ('0', '1', '2'), per_class=10)
    pattern = str(tmp_path / 'train' / '*')
    for skip in (0, 7):
        plain, cached = (list(data.train_dataset(pattern, 4, (8, 8, 1), seed=5, skip_examples=skip,
                                                 cache_decoded=c).take(12)) for c in (False, True))
        for (a_images, a_labels), (b_images, b_labels) in zip(plain, cached):
            np.testing.assert_array_equal(a_labels, b_labels)
            np.testing.assert_array_equal(a_images, b_images)


def test_a_batch_from_the_data_is_planned_and_a_configured_one_kept(tmp_path):
    def batch(epochs, **params):
        job, _ = _digits_job(tmp_path, epochs=epochs, **params)
        return plan.plan_epochs(job)[0].params.global_batch_size
    assert batch(plan.AUTO_EPOCHS, global_batch_size=0) == 64     # 120 digits: the smaller
    assert batch(0.0, global_batch_size=0, train_steps=5) == 64   # a fixed length: uncounted
    assert batch(plan.AUTO_EPOCHS, global_batch_size=32) == 32


@pytest.mark.parametrize('mirrored_too', [False, True])
def test_flip_auto_measures_whether_mirroring_keeps_the_labels(tmp_path, mirrored_too):
    # The ten digits: a mirrored 3 is no 3. Half as many digits, each also mirrored under its
    # own label: mirroring keeps every label (tested after the first epoch or, when the model
    # is still near chance, the second).
    classes = tuple(str(d) for d in range(10))
    write_digit_examples(str(tmp_path / 'train' / 'part.gz'), classes,
                         per_class=75 if mirrored_too else 150, mirrored_too=mirrored_too)
    write_digit_examples(str(tmp_path / 'eval' / 'part.gz'), classes, per_class=5, offset=150)
    job = job_lib.TrainJob(
        train_pattern=str(tmp_path / 'train' / '*'), eval_pattern=str(tmp_path / 'eval' / '*'),
        class_names=classes, image_shape=(8, 8, 1), epochs=3.0, held_out_percent=40,
        options=loop.LoopOptions.of(
            train_steps=1, global_batch_size=32, learning_rate=3e-3, warmup_steps=5,
            validation_percent=40, model_builder='models.resnet.build_model', seed=1,
            flip='auto'))
    metrics = job_lib.train_and_export(job, str(tmp_path / 'model'), str(tmp_path / 'logs'))
    reason = metrics.flip_reason
    assert ('keeps the labels' if mirrored_too else 'changes the labels') in reason
    share = float(reason.split('as they are, ')[1].split('%')[0]) / 100
    assert (share >= 0.5) is mirrored_too and metrics.epochs_run == 3
    # On only where the labels keep and the model came to need it, as the reason says.
    assert metrics.flip == int('flips were on' in reason), reason
    assert mirrored_too or not metrics.flip


def test_the_cut_applies_to_a_length_from_the_data_or_under_a_budget(tmp_path):
    def planned(epochs, **params):
        job, _ = _digits_job(tmp_path, epochs=epochs, **params)
        return plan.plan_epochs(job)[0].options.time_target_seconds
    assert planned(plan.AUTO_EPOCHS) == 60 * length.AUTO_TRAIN_MINUTES
    assert planned(5.0) == 0.0                              # the user's length
    assert planned(5.0, time_budget_minutes=2.0) == 120.0   # fits the budget


def test_cache_rule_keeps_small_splits_only():
    assert plan.fits_in_cache(1797, (8, 8, 1))
    assert not plan.fits_in_cache(10_000_000, (224, 224, 3))
    assert not plan.fits_in_cache(0, (8, 8, 1))  # unknown size: do not cache
    # A table has no image shape; its rows are cached as records.
    table = inputs.InputSpec(kind='tabular', numeric=(('a', 0.0, 1.0),), categorical=('b',))
    assert plan.fits_in_cache(100_000, (0, 0, 0), table)
    assert not plan.fits_in_cache(100_000_000, (0, 0, 0), table)


def test_augmented_training_exports_a_serving_graph_without_randomness(tmp_path):
    job, eval_examples = _digits_job(tmp_path, augment='standard', flip=True,
                                     cache_decoded=True)
    serving_dir = str(tmp_path / 'model' / 'Format-Serving')
    metrics = job_lib.train_and_export(job, serving_dir, str(tmp_path / 'logs'))
    assert metrics.eval_accuracy >= 0.6  # it learns through the transformations

    loaded = tf.saved_model.load(serving_dir)
    batch = tf.constant([e.SerializeToString() for e in eval_examples])
    first, second = (loaded.signatures['serving_default'](examples=batch)['probabilities']
                     for _ in range(2))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    # Exported accuracy is the evaluated accuracy: eval and serving saw the plain images.
    labels = [e.features.feature[features.LABEL_KEY].int64_list.value[0] for e in eval_examples]
    assert np.mean(first.numpy().argmax(axis=1) == labels) == pytest.approx(
        metrics.eval_accuracy)
    from tensorflow.core.protobuf import saved_model_pb2
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(serving_dir, 'saved_model.pb'), 'rb') as handle:
        saved.ParseFromString(handle.read())
    graph = saved.meta_graphs[0].graph_def
    ops = {node.op for function in graph.library.function for node in function.node_def}
    ops |= {node.op for node in graph.node}
    assert 'ParseExample' in ops or 'ParseExampleV2' in ops  # the serving graph was read
    assert not [op for op in ops if 'Random' in op or 'DistortedBoundingBox' in op], ops


def _mobilenet_job(tmp_path, **overrides):
    classes = ('0', '1', '2')
    write_digit_examples(str(tmp_path / 'train' / 'part.gz'), classes, per_class=8)
    fields, params = _split(overrides)
    params = dict(dict(global_batch_size=8, learning_rate=1e-3, warmup_steps=0, eval_steps=1,
                       model_builder='models.applications.mobilenet_v3_small', seed=1), **params)
    return job_lib.TrainJob(
        train_pattern=str(tmp_path / 'train' / '*'), eval_pattern=str(tmp_path / 'train' / '*'),
        class_names=classes, image_shape=(8, 8, 1),
        options=loop.LoopOptions.of(train_steps=2, **params), **fields)


@pytest.mark.slow   # a MobileNetV3 training: about 30 s, so its file goes first (conftest.py)
def test_a_named_architecture_loads_local_weights_warms_up_frozen_and_exports(tmp_path,
                                                                               caplog):
    # One MobileNetV3 training for what two trainings showed before (each is most of its time).
    import keras
    from models import applications
    # A backbone weights file as a user would bring it: saved from the same application.
    weights = str(tmp_path / 'backbone.weights.h5')
    applications.mobilenet_v3_small((32, 32, 3), 10).get_layer(
        applications.BACKBONE).save_weights(weights)
    # 24 examples, 8 per update: 3 updates per epoch; epoch 1 trains the head alone.
    job = _mobilenet_job(tmp_path, model_weights=weights, epochs=2.0, freeze_epochs=1)
    serving_dir = str(tmp_path / 'model' / 'Format-Serving')
    with caplog.at_level('INFO', logger='absl'):
        metrics = job_lib.train_and_export(job, serving_dir, str(tmp_path / 'logs'))
    messages = [r.getMessage() for r in caplog.records]
    assert 'step 1: backbone frozen: training only the head for 1 epochs' in messages
    assert 'step 4: backbone unfrozen: training every layer' in messages
    assert metrics.steps_run == 6 and np.isfinite(metrics.train_loss)
    assert 0.0 <= metrics.eval_accuracy <= 1.0

    serve = tf.saved_model.load(serving_dir).signatures['predict_images']
    with open(os.path.join(DIGITS, '1', sorted(os.listdir(os.path.join(DIGITS, '1')))[0]),
              'rb') as handle:
        out = serve(images=tf.constant([handle.read()]))
    assert out['probabilities'].shape == (1, 3) and out['probabilities'].dtype == tf.float32
    np.testing.assert_allclose(out['probabilities'].numpy().sum(), 1.0, rtol=1e-5)
    assert keras.mixed_precision.global_policy().name == 'float32'
    with pytest.raises(ValueError, match=r'freeze_epochs \(2\) must be fewer than the 2 epochs'):
        job_lib.train_and_export(_mobilenet_job(tmp_path, epochs=2.0, freeze_epochs=2),
                                 str(tmp_path / 'm2'), str(tmp_path / 'l2'))


def test_weights_reach_the_builder_and_a_builder_without_them_is_named(tmp_path):
    missing = str(tmp_path / 'missing.weights.h5')
    with pytest.raises(ValueError, match='weights file not found: .*missing.weights.h5'):
        job_lib.train_and_export(_mobilenet_job(tmp_path, model_weights=missing),
                                 str(tmp_path / 'm'), str(tmp_path / 'l'))
    with pytest.raises(ValueError, match='models.resnet.build_model takes no `weights`'):
        job_lib.train_and_export(
            _mobilenet_job(tmp_path, model_builder='models.resnet.build_model',
                           model_weights=missing), str(tmp_path / 'm'), str(tmp_path / 'l'))


def test_every_named_model_resolves_to_a_builder():
    from training.params import NAMED_MODELS
    for name, path in NAMED_MODELS.items():
        assert job_lib.import_builder(path).__name__ == name


@pytest.mark.parametrize('builder, shape, expected', [
    ('models.resnet.build_model', (8, 8, 1), 'float32'),              # 2.1M multiply-adds
    ('models.applications.resnet50', (128, 128, 3), 'mixed_bfloat16'),  # 1,259M
    ('models.applications.mobilenet_v3_small', (224, 224, 3), 'float32')])  # 14% depthwise
def test_auto_precision_on_a_bf16_cpu_measures_the_real_model(builder, shape, expected):
    import keras
    job = job_lib.TrainJob(train_pattern='', eval_pattern='', class_names=('a', 'b'),
                           image_shape=shape,
                           options=loop.LoopOptions.of(train_steps=1, global_batch_size=8,
                                                       learning_rate=1e-3, model_builder=builder,
                                                       mixed_precision='auto'))
    policy, why = job_lib.decide_precision(job, num_gpus=0, bf16_cpu=True)
    assert policy == expected and 'multiply-adds per example' in why
    assert keras.mixed_precision.global_policy().name == 'float32'
    # Without bfloat16 instructions no model is built: float32 whatever its size.
    assert job_lib.decide_precision(job, num_gpus=0, bf16_cpu=False) == (
        'float32', 'auto on a CPU without bfloat16 instructions')


def test_a_held_out_slice_over_the_most_is_cut_and_says_why(tmp_path, monkeypatch):
    # 120 digits at 40% hold out about 48; with at most 20 the share is cut to hundredths of a
    # percent, and the examples it holds out are counted again (the epoch's updates follow).
    monkeypatch.setattr(plan, 'MIN_HELD_OUT', 5)
    monkeypatch.setattr(length, 'MAX_HELD_OUT', 20)
    job, _ = _digits_job(tmp_path, epochs=2.0, held_out_percent=40, validation_percent=40)
    asked = data.count_split(job.train_pattern, 40)[1]
    planned = plan.plan_epochs(job)
    share = planned.job.held_out_percent
    assert share == length.held_out_share(40, asked) and 0 < share < 40
    assert 0 < planned.held_out <= 25 < asked   # about 20: a hash is no exact count
    assert data.count_split(job.train_pattern, share) == (120 - planned.held_out,
                                                          planned.held_out)
    assert planned.held_out_note == (f'{share:g}%, not 40%: 20 rank epochs as well, '
                                     'and the rest are trained on')
    assert planned.note == ''
    # Under the most, the share is the one asked, and nothing is said.
    monkeypatch.setattr(length, 'MAX_HELD_OUT', 1000)
    planned = plan.plan_epochs(job)
    assert (planned.job.held_out_percent, planned.held_out, planned.held_out_note) == (
        40, asked, '')
