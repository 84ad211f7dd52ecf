"""Executor tests: ImageTrainer's Do on a small Examples artifact, and its stable checkpoints."""
import json
import os

import pytest
import tensorflow as tf
from tfx.types import artifact_utils, standard_artifacts

from components.common import features
from components.trainer import executor
from training import plan
from training.params import TrainParams
from helpers import DIGITS
import photo_folders

CLASSES = ('0', '1', '2')


def _examples(tmp_path):
    artifact = standard_artifacts.Examples()
    artifact.uri = str(tmp_path / 'examples')
    artifact.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    counts = {}
    for split, (offset, per_class) in {'train': (0, 20), 'eval': (20, 5)}.items():
        os.makedirs(os.path.join(artifact.uri, f'Split-{split}'))
        path = os.path.join(artifact.uri, f'Split-{split}', 'data_tfrecord-00000-of-00001.gz')
        with tf.io.TFRecordWriter(path, options='GZIP') as writer:
            for label, name in enumerate(CLASSES):
                for file_name in sorted(os.listdir(os.path.join(DIGITS, name)))[
                        offset:offset + per_class]:
                    with open(os.path.join(DIGITS, name, file_name), 'rb') as handle:
                        writer.write(features.make_example(
                            handle.read(), label, name, 8, 8, file_name).SerializeToString())
        counts[split] = per_class * len(CLASSES)
    artifact.set_string_custom_property('class_names', json.dumps(CLASSES))
    artifact.set_int_custom_property('num_written_train', counts['train'])
    return artifact


def _properties(**overrides):
    """The execution properties ImageTrainer records (TrainParams), and overrides by name."""
    props = TrainParams.bare(
        model_builder='models.resnet.build_model', image_size=(8, 8), channels=1,
        train_epochs=2.0, global_batch_size=16, accumulation_steps=2, learning_rate=3e-3,
        checkpoint_interval=1, seed=1, skip_unchanged=False).to_properties()
    props['pipeline_root'] = '/root'
    props.update(overrides)
    return props


def test_do_trains_exports_and_records_how(tmp_path):
    examples = _examples(tmp_path)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / '7')
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / '7')
    props = _properties(augment='standard', flip=1, validation_percent=20, patience=1,
                        pipeline_root=str(tmp_path / 'root'))
    executor.Executor().Do({'examples': [examples]},
                           {'model': [model], 'model_run': [model_run]}, props)

    serving = os.path.join(model.uri, 'Format-Serving')
    assert 'serving_default' in tf.saved_model.load(serving).signatures
    with open(os.path.join(model_run.uri, 'metrics.json')) as handle:
        metrics = json.load(handle)
    assert metrics['mixed_precision'] == 'float32' and metrics['start_step'] == 0
    assert model.get_string_custom_property('mixed_precision') == 'float32'
    assert model.get_string_custom_property('precision_reason') == 'asked'
    assert model.get_string_custom_property('augment') == 'standard'
    assert model.get_int_custom_property('flip') == 1
    # Configured shape, on Examples that record no sizes (as before ingestion recorded them).
    assert [model.get_int_custom_property(f'input_{n}') for n in (
        'height', 'width', 'channels')] == [8, 8, 1]
    assert model.get_string_custom_property('input_statement') == (
        'trained at 8×8×1 (as configured)')
    assert 0.0 <= model.get_float_custom_property('eval_accuracy') <= 1.0
    assert any(name.startswith('events.out.tfevents') for name in os.listdir(model_run.uri))
    # 2 epochs of 60 examples at 16 x 2 per update: 1 update each (the remainder is dropped).
    assert metrics['steps_run'] == 2 and metrics['epochs_run'] == 2.0
    # 20% of 60 examples is too few to rank epochs (under plan.MIN_HELD_OUT): they are trained
    # on, and the reason says so.
    from training import data
    held_in, held_out = data.count_split(os.path.join(examples.uri, 'Split-train', '*'), 20)
    assert held_in + held_out == 60 and 0 < held_out < 500
    assert model.get_float_custom_property('held_out_examples') == 0  # none were held out
    assert metrics['best_epoch'] == 0 and 'held_out_accuracy' not in metrics
    assert model.get_string_custom_property('stop_reason') == (
        f'ran the maximum of 2 epochs; no early stopping: only {int(held_out)} held-out examples '
        '(fewer than 500), so they were trained on')
    # Checkpoints were written every update, then removed once the model was exported.
    assert not os.path.exists(executor.checkpoint_dir([examples], props))
    assert os.path.isdir(os.path.join(tmp_path, 'root', '_checkpoints', 'ImageTrainer'))


def test_do_passes_the_weights_file_to_the_builder(tmp_path):
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / '7')
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / '7')
    missing = str(tmp_path / 'missing.weights.h5')
    with pytest.raises(ValueError, match='mobilenet_v3_small: weights file not found'):
        executor.Executor().Do({'examples': [_examples(tmp_path)]},
                               {'model': [model], 'model_run': [model_run]},
                               _properties(model_builder='models.applications.mobilenet_v3_small',
                                           model_weights=missing,
                                           pipeline_root=str(tmp_path / 'root')))


def test_checkpoint_folder_is_stable_per_training_and_differs_otherwise(tmp_path):
    examples = _examples(tmp_path)
    first = executor.checkpoint_dir([examples], _properties())
    assert os.path.dirname(first) == '/root/_checkpoints/ImageTrainer'
    assert executor.checkpoint_dir([examples], _properties()) == first  # any retry finds them
    other_data = standard_artifacts.Examples()
    other_data.uri = str(tmp_path / 'other')
    assert executor.checkpoint_dir([examples], _properties(learning_rate=1e-3)) != first
    assert executor.checkpoint_dir([other_data], _properties()) != first
    # Another pipeline root: another folder, the same key (the root is not a parameter).
    moved = executor.checkpoint_dir([examples], _properties(pipeline_root='/moved'))
    assert moved == first.replace('/root/', '/moved/', 1)


@pytest.mark.parametrize('steps, epochs, examples, expected', [
    (100, 0.0, 1000, 100), (100, 3.0, 1000, 100), (0, 1.0, 1000, 31), (0, 0.5, 10, 1)])
def test_train_steps_come_from_steps_or_epochs(steps, epochs, examples, expected):
    props = _properties(train_steps=steps, train_epochs=epochs)  # 32 examples per update
    assert plan.resolve_train_steps(props, examples) == expected


def test_do_stops_early_on_the_held_out_slice_and_records_why(tmp_path, monkeypatch):
    monkeypatch.setattr(plan, 'MIN_HELD_OUT', 20)  # 30 held out of 60 may then rank epochs
    examples = _examples(tmp_path)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / '4')
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / '4')
    # Half of the train split held out, and a model training cannot change: epoch 1 stays the
    # best, and patience 2 stops training after epoch 3.
    props = _properties(train_epochs=12.0, validation_percent=50, patience=2,
                        model_builder='helpers.unlearnable_model', accumulation_steps=1,
                        pipeline_root=str(tmp_path / 'root'))
    executor.Executor().Do({'examples': [examples]},
                           {'model': [model], 'model_run': [model_run]}, props)
    from training import data
    held_in, held_out = data.count_split(os.path.join(examples.uri, 'Split-train', '*'), 50)
    assert held_in + held_out == 60 and held_out >= 20
    got = {name: model.get_float_custom_property(name) for name in (
        'held_out_examples', 'best_epoch', 'epochs_run', 'held_out_accuracy')}
    assert got['held_out_examples'] == held_out
    assert (got['best_epoch'], got['epochs_run']) == (1, 3)  # stopped long before 12
    assert model.get_string_custom_property('stop_reason') == (
        'early stopping: held-out accuracy did not improve for 2 epochs after epoch 1 (best '
        f'{got["held_out_accuracy"]:.4f}); restored epoch 1\'s weights')


def _ingested_photos(tmp_path):
    """Examples made by the real ingestion executor from mixed photo patches."""
    from tfx.dsl.components.base import base_beam_executor
    from tfx.proto import example_gen_pb2
    from tfx.utils import proto_utils
    from components.ingest import executor as ingest_executor
    written = photo_folders.make_folders(str(tmp_path / 'photos'), per_class=10)
    examples = standard_artifacts.Examples()
    examples.uri = str(tmp_path / 'examples')
    input_config = example_gen_pb2.Input(splits=[
        example_gen_pb2.Input.Split(name='images', pattern='*/*')])
    ingest_executor.Executor(base_beam_executor.BaseBeamExecutor.Context(
        beam_pipeline_args=['--direct_running_mode=in_memory'])).Do(
        {}, {'examples': [examples]}, {
            'input_base': str(tmp_path / 'photos'), 'train_percent': 70, 'num_shards': 1,
            'input_config': proto_utils.proto_to_json(input_config),
            'max_rejected_fraction': 0.0, 'channels': 0,
            'pipeline_root': str(tmp_path / 'root')})
    return written, examples


def test_do_with_zero_shape_trains_at_the_datas_shape_and_records_it(tmp_path, caplog):
    written, examples = _ingested_photos(tmp_path)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / '3')
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / '3')
    props = _properties(image_height=0, image_width=0, channels=0, train_epochs=0.0,
                        train_steps=2, accumulation_steps=1, pipeline_root=str(tmp_path / 'root'))
    with caplog.at_level('INFO', logger='absl'):
        executor.Executor().Do({'examples': [examples]},
                               {'model': [model], 'model_run': [model_run]}, props)

    sizes = json.loads(examples.get_string_custom_property('image_sizes'))
    assert max(sizes, key=sizes.get) == '28x28' and examples.get_int_custom_property(
        'color_images') > 0  # the sample is what the assertions below rely on
    recorded = [model.get_int_custom_property(f'input_{n}') for n in ('height', 'width',
                                                                       'channels')]
    assert recorded == [28, 28, 3]
    total = sum(sizes.values())
    statement = model.get_string_custom_property('input_statement')
    assert statement.startswith('trained at 28×28×3; ')
    assert f'{100 * sizes["28x28"] / total:.0f}% of images 28×28' in statement
    assert '3 channels from the data' in statement
    assert f'input {statement}' in caplog.text  # the training log line states it
    assert 'augment none' in caplog.text  # properties recorded before augmentation: none
    assert model.get_string_custom_property('augment') == 'none'
    # The exported model takes that shape, and serves an image of any size and mode.
    loaded = tf.saved_model.load(os.path.join(model.uri, 'Format-Serving'))
    path = next(p for p, w in sorted(written.items()) if w['size'] == (40, 40))
    with open(tmp_path / 'photos' / path, 'rb') as handle:
        out = loaded.signatures['predict_images'](images=tf.constant([handle.read()]))
    assert out['probabilities'].shape == (1, 3)


def _do(tmp_path, examples, run, **overrides):
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / run)
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / run)
    props = _properties(**dict(dict(
        train_steps=3, train_epochs=0.0, accumulation_steps=1,
        serving_dir=str(tmp_path / 'serving'), skip_unchanged=1,
        pipeline_root=str(tmp_path / 'root')), **overrides))
    executor.Executor().Do({'examples': [examples]},
                           {'model': [model], 'model_run': [model_run]}, props)
    return model, model_run


def test_unchanged_input_settings_and_code_hand_the_served_model_on_untrained(tmp_path):
    from components.common import versions
    examples = _examples(tmp_path)
    examples.set_string_custom_property('input_fingerprint', 'split:images,num_files:75,x')
    first, _ = _do(tmp_path, examples, '1')
    trained = os.path.join(first.uri, 'Format-Serving')
    record = json.load(open(os.path.join(trained, 'assets.extra', 'training_record.json')))
    assert record['trained_from']['input_fingerprint'] == 'split:images,num_files:75,x'
    assert record['metrics']['steps_run'] == 3
    served = versions.push(trained, str(tmp_path / 'serving'), keep=5)

    again, again_run = _do(tmp_path, examples, '2')
    assert again.get_float_custom_property('training_skipped') == 1.0
    assert again.get_string_custom_property('stop_reason').startswith(
        'no new data: serving version 1 unchanged')
    assert again.get_float_custom_property('eval_accuracy') == \
        first.get_float_custom_property('eval_accuracy')
    assert not os.path.exists(os.path.join(again_run.uri, 'metrics.json'))  # nothing trained
    handed_on = os.path.join(again.uri, 'Format-Serving')
    assert versions.model_digest(handed_on) == versions.model_digest(served.path)
    assert not versions.push(handed_on, str(tmp_path / 'serving'), keep=5).created

    examples.set_string_custom_property('input_fingerprint', 'split:images,num_files:76,y')
    changed, changed_run = _do(tmp_path, examples, '3')
    assert not changed.has_custom_property('training_skipped')
    assert os.path.exists(os.path.join(changed_run.uri, 'metrics.json'))
    other, _ = _do(tmp_path, examples, '4', learning_rate=1e-3)
    assert not other.has_custom_property('training_skipped')  # settings changed: trains


def _window_examples(tmp_path, spans):
    """An Examples artifact of the last span whose window holds `spans` ({span: folder}, each
    folder holding a span made by _examples, made when missing)."""
    from components.common import window
    entries = []
    for span, folder in spans.items():
        if not (tmp_path / folder).exists():
            _examples(tmp_path / folder)
        entries.append(window.SpanEntry(span=span, uri=str(tmp_path / folder / 'examples'),
                                        fingerprint=f'fp-{span}', num_train=60, num_eval=15))
    artifact = standard_artifacts.Examples()
    artifact.uri = entries[-1].uri
    artifact.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    artifact.set_string_custom_property('class_names', json.dumps(CLASSES))
    artifact.set_int_custom_property('num_written_train', 60)
    artifact.set_string_custom_property('window', window.to_json(entries))
    artifact.set_string_custom_property('ingest_parameters', '{"train_percent": 80}')
    return artifact


def test_do_trains_on_every_span_of_the_window_and_records_it(tmp_path, monkeypatch):
    from components.common import window
    from training import job as job_lib
    jobs = []
    train = job_lib.train_and_export
    monkeypatch.setattr(job_lib, 'train_and_export',
                        lambda job, **paths: jobs.append(job) or train(job, **paths))
    examples = _window_examples(tmp_path, {1: 's1', 2: 's2'})
    # One epoch: the whole window's 120 train examples at 16 x 2 per update, 3 updates (the
    # newest span alone would make 1).
    model, _ = _do(tmp_path, examples, '1', train_steps=0, train_epochs=1.0,
                   accumulation_steps=2)
    assert model.get_float_custom_property('steps_run') == 3
    (job,) = jobs
    files = tf.io.gfile.glob(job.train_pattern)
    assert sorted(os.path.relpath(f, str(tmp_path)).split(os.sep)[0] for f in files) == [
        's1', 's2']  # one train shard of each span
    assert len(tf.io.gfile.glob(job.eval_pattern)) == 2
    assert model.get_string_custom_property('spans') == '1,2'
    recorded = window.from_json(model.get_string_custom_property('window'))
    assert [e.span for e in recorded] == [1, 2]
    assert window.read_training_data(os.path.join(model.uri, 'Format-Serving')) == recorded


def test_the_window_keys_checkpoints_and_the_unchanged_skip(tmp_path):
    from components.common import window
    from components.common import versions
    examples = _window_examples(tmp_path, {1: 's1', 2: 's2'})
    first, _ = _do(tmp_path, examples, '1')
    versions.push(os.path.join(first.uri, 'Format-Serving'), str(tmp_path / 'serving'), keep=5)
    # The same spans, the newest copied to another folder (an uncached rerun on KFP).
    rerun = _window_examples(tmp_path, {1: 's1', 2: 's2b'})
    assert executor.checkpoint_dir([rerun], _properties()) == \
        executor.checkpoint_dir([examples], _properties())
    again, _ = _do(tmp_path, rerun, '2')
    assert again.get_float_custom_property('training_skipped') == 1.0
    assert again.get_string_custom_property('spans') == '1,2'
    # A new span moves the window: another checkpoint folder, and training.
    newer = _window_examples(tmp_path, {2: 's2', 3: 's3'})
    assert executor.checkpoint_dir([newer], _properties()) != \
        executor.checkpoint_dir([examples], _properties())
    trained, _ = _do(tmp_path, newer, '3')
    assert not trained.has_custom_property('training_skipped')
    assert trained.get_string_custom_property('spans') == '2,3'
    # Another split of the same files is other data: it retrains too.
    newer.set_string_custom_property('ingest_parameters', '{"train_percent": 50}')
    assert executor.checkpoint_dir([newer], _properties()) != \
        executor.checkpoint_dir([_window_examples(tmp_path, {2: 's2', 3: 's3'})],
                                _properties())
    assert window.fingerprint(window.read(newer)) == 'span 2: fp-2\nspan 3: fp-3'
