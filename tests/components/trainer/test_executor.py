"""Executor tests: ImageTrainer's Do on a small Examples artifact, and its stable checkpoints.
The window of spans and the skip of unchanged input: test_executor_window.py."""
import json
import os

import pytest
import tensorflow as tf
from tfx.types import standard_artifacts

from components.trainer import executor
from training import plan
import photo_folders
from helpers import IN_PROCESS_BEAM
import trainer_inputs as inputs


def test_do_trains_exports_and_records_how(tmp_path):
    examples = inputs.examples(tmp_path)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / '7')
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / '7')
    props = inputs.properties(augment='standard', flip=1, validation_percent=20, patience=1,
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
        executor.Executor().Do({'examples': [inputs.examples(tmp_path)]},
                               {'model': [model], 'model_run': [model_run]},
                               inputs.properties(model_builder='models.applications.mobilenet_v3_small',
                                           model_weights=missing,
                                           pipeline_root=str(tmp_path / 'root')))


def test_checkpoint_folder_is_stable_per_training_and_differs_otherwise(tmp_path):
    examples = inputs.examples(tmp_path)
    first = executor.checkpoint_dir([examples], inputs.properties())
    assert os.path.dirname(first) == '/root/_checkpoints/ImageTrainer'
    assert executor.checkpoint_dir([examples], inputs.properties()) == first  # any retry finds them
    other_data = standard_artifacts.Examples()
    other_data.uri = str(tmp_path / 'other')
    assert executor.checkpoint_dir([examples], inputs.properties(learning_rate=1e-3)) != first
    assert executor.checkpoint_dir([other_data], inputs.properties()) != first
    # Another pipeline root: another folder, the same key (the root is not a parameter).
    moved = executor.checkpoint_dir([examples], inputs.properties(pipeline_root='/moved'))
    assert moved == first.replace('/root/', '/moved/', 1)


@pytest.mark.parametrize('steps, epochs, examples, expected', [
    (100, 0.0, 1000, 100), (100, 3.0, 1000, 100), (0, 1.0, 1000, 31), (0, 0.5, 10, 1)])
def test_train_steps_come_from_steps_or_epochs(steps, epochs, examples, expected):
    props = inputs.properties(train_steps=steps, train_epochs=epochs)  # 32 examples per update
    assert plan.resolve_train_steps(props, examples) == expected


def test_do_stops_early_on_the_held_out_slice_and_records_why(tmp_path, monkeypatch):
    monkeypatch.setattr(plan, 'MIN_HELD_OUT', 20)  # 30 held out of 60 may then rank epochs
    examples = inputs.examples(tmp_path)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / '4')
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / '4')
    # Half of the train split held out, and a model training cannot change: epoch 1 stays the
    # best, and patience 2, counted from epoch 9 (the schedule's last quarter: 9 of 12
    # one-update epochs, no warm-up), stops training after epoch 11.
    props = inputs.properties(train_epochs=12.0, validation_percent=50, patience=2,
                        warmup_steps=0,
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
    assert (got['best_epoch'], got['epochs_run']) == (1, 11)  # stopped before 12
    assert model.get_string_custom_property('stop_reason') == (
        'early stopping: neither held-out accuracy nor loss improved for 2 epochs after epoch 9, '
        'where the schedule entered its last quarter '
        f'(best {got["held_out_accuracy"]:.4f} at epoch 1); '
        'restored epoch 1\'s weights')


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
        beam_pipeline_args=IN_PROCESS_BEAM)).Do(
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
    # The helpers' one-Dense model: the shape it is built at and serves is the point here, not
    # the architecture (the default ResNet at 28x28x3 was about a quarter of this test).
    props = inputs.properties(image_height=0, image_width=0, channels=0, train_epochs=0.0,
                        train_steps=2, accumulation_steps=1, pipeline_root=str(tmp_path / 'root'),
                        model_builder='helpers.unlearnable_model')
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
    assert 'augment none' in caplog.text  # no augment property recorded: none
    assert model.get_string_custom_property('augment') == 'none'
    # The exported model takes that shape, and serves an image of any size and mode.
    loaded = tf.saved_model.load(os.path.join(model.uri, 'Format-Serving'))
    path = next(p for p, w in sorted(written.items()) if w['size'] == (40, 40))
    with open(tmp_path / 'photos' / path, 'rb') as handle:
        out = loaded.signatures['predict_images'](images=tf.constant([handle.read()]))
    assert out['probabilities'].shape == (1, 3)
