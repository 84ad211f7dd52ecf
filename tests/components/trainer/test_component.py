"""Unit tests of ImageTrainer's construction: every TrainParams field is an execution property,
and bad parameters fail when the pipeline is built."""
import dataclasses
import json

import pytest
from tfx.types import Channel, standard_artifacts

from components.trainer.component import ImageTrainer, ImageTrainerSpec
from launch import launchers
from training.params import TrainParams


def _trainer(pipeline_root='/root', serving_dir='', launcher=launchers.Choice(), **params):
    base = dict(model_builder='models.resnet.build_model', image_size=(8, 8), channels=1,
                global_batch_size=32, learning_rate=1e-3, train_steps=100)
    return ImageTrainer(examples=Channel(type=standard_artifacts.Examples),
                        params=TrainParams(**dict(base, **params)),
                        pipeline_root=pipeline_root, serving_dir=serving_dir, launcher=launcher)


def test_the_spec_has_a_parameter_per_training_parameter_and_the_locations():
    assert set(ImageTrainerSpec.PARAMETERS) == set(TrainParams.property_types()) | {
        'serving_dir', 'launcher', 'pipeline_root'}


def test_parameters_become_execution_properties():
    trainer = _trainer(accumulation_steps=4, mixed_precision='mixed_bfloat16',
                       optimizer='sgd', checkpoint_interval=25, devices=('/cpu:0',),
                       augment='standard', flip=True)
    props = trainer.exec_properties
    assert (props['augment'], props['flip']) == ('standard', 'on')
    assert (_trainer().exec_properties['augment'], _trainer().exec_properties['flip']) == (
        TrainParams.augment, 'off')
    assert (props['accumulation_steps'], props['mixed_precision'], props['optimizer']) == (
        4, 'mixed_bfloat16', 'sgd')
    assert props['checkpoint_interval'] == 25 and json.loads(props['devices']) == ['/cpu:0']
    assert props['train_steps'] == 100 and props['train_epochs'] == 0.0
    assert props['model_weights'] == ''
    assert props['pipeline_root'] == '/root'  # where the executor keeps its checkpoints
    epochs = _trainer(train_steps=0, train_epochs=20.0, patience=3, validation_percent=10,
                      time_budget_minutes=15).exec_properties
    assert (epochs['train_steps'], epochs['train_epochs'], epochs['patience'],
            epochs['validation_percent'], epochs['time_budget_minutes']) == (0, 20.0, 3, 10, 15.0)
    assert _trainer(model_weights='/w/b.weights.h5').exec_properties['model_weights'] == (
        '/w/b.weights.h5')
    # The executor reads back exactly what was given (no served model: no skipping).
    given = TrainParams(model_builder='models.resnet.build_model', image_size=(8, 8),
                        channels=1, global_batch_size=32, learning_rate=1e-3, train_steps=100,
                        accumulation_steps=4, mixed_precision='mixed_bfloat16', optimizer='sgd',
                        checkpoint_interval=25, devices=('/cpu:0',), augment='standard',
                        flip=True)
    assert TrainParams.from_properties(props) == dataclasses.replace(given, skip_unchanged=False)
    # A fixed length: epochs do not apply (and are not recorded).
    assert _trainer(train_epochs=2.0).exec_properties['train_epochs'] == 0.0


def test_skip_unchanged_and_warm_start_need_the_serving_folder():
    assert _trainer().exec_properties['skip_unchanged'] == 0  # nothing served to compare with
    served = _trainer(serving_dir='/runs/serving', warm_start=True).exec_properties
    assert (served['skip_unchanged'], served['warm_start'], served['serving_dir']) == (
        1, 1, '/runs/serving')


@pytest.mark.parametrize('overrides, message', [
    (dict(train_steps=0, train_epochs=3.0, freeze_epochs=3), 'freeze_epochs must be fewer'),
    (dict(mixed_precision='float16'), 'mixed_precision must be one of'),
    (dict(patience=-1), 'patience must be >= 0'),
    (dict(validation_percent=51), 'validation_percent must be in 0..50'),
    (dict(time_budget_minutes=-1.0), 'time_budget_minutes must be >= 0'),
    (dict(accumulation_steps=0), 'accumulation_steps must be >= 1'),
    (dict(optimizer='lamb'), 'optimizer must be one of'),
    (dict(augment='heavy'), 'augment must be one of'),
    (dict(global_batch_size=-1), 'global_batch_size must be >= 0'),
    (dict(image_size=(28, 0)), r'image_size must be \(height, width\) >= 1'),
    (dict(channels=2), 'channels must be 1 or 3'),
    (dict(pipeline_root=''), 'pipeline_root is required'),
    (dict(model_builder=None), 'model_builder is required'),
])
def test_bad_parameters_fail_when_the_pipeline_is_built(overrides, message):
    with pytest.raises(ValueError, match=message):
        _trainer(**overrides)


def test_the_input_shape_defaults_to_zero_meaning_from_the_data():
    props = _trainer(image_size=None, channels=None).exec_properties
    assert (props['image_height'], props['image_width'], props['channels']) == (0, 0, 0)
    props = _trainer(image_size=None, channels=3).exec_properties
    assert (props['image_height'], props['image_width'], props['channels']) == (0, 0, 3)


def test_the_launcher_is_recorded_and_checked_when_the_component_is_made():
    from pipeline.kubeflow.jobs import tfjob

    def pods(workers):
        return launchers.Choice('kubernetes', tfjob.TFJobSpec(workers=workers, image='i').to_json())
    assert _trainer().exec_properties.get('launcher') is None  # 'local': trains in its process
    trainer = _trainer(launcher=pods(4))
    assert launchers.Choice.from_json(trainer.exec_properties['launcher']) == pods(4)
    with pytest.raises(ValueError, match=r'split global_batch_size \(32\) evenly, got 3'):
        _trainer(launcher=pods(3))
    with pytest.raises(ValueError, match='>= 2'):
        _trainer(launcher=pods(1))
    with pytest.raises(ValueError, match='not both'):
        _trainer(workers=2, launcher=pods(4))
    with pytest.raises(ValueError, match="launcher must be one of .*'local'.*got 'ray'"):
        launchers.Choice('ray')
