"""Unit tests of ImageTrainer's construction: parameters validated when the pipeline is built."""
import json

import pytest
from tfx.types import Channel, standard_artifacts

from components.trainer.component import ImageTrainer


def _trainer(**overrides):
    args = dict(examples=Channel(type=standard_artifacts.Examples),
                model_builder='models.resnet.build_model', image_shape=(8, 8, 1),
                global_batch_size=32, learning_rate=1e-3, train_steps=100, pipeline_root='/root')
    args.update(overrides)
    return ImageTrainer(**args)


def test_parameters_become_execution_properties():
    trainer = _trainer(accumulation_steps=4, mixed_precision='mixed_bfloat16',
                       optimizer='sgd', checkpoint_interval=25, devices=['/cpu:0'],
                       augment='standard', flip=True)
    props = trainer.exec_properties
    assert (props['augment'], props['flip']) == ('standard', 1)
    assert (_trainer().exec_properties['augment'], _trainer().exec_properties['flip']) == (
        'none', 0)
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


@pytest.mark.parametrize('overrides, message', [
    (dict(train_epochs=2.0), 'at most one of train_steps and train_epochs'),
    (dict(train_steps=0, train_epochs=3.0, freeze_epochs=3), 'freeze_epochs must be fewer'),
    (dict(mixed_precision='float16'), 'mixed_precision must be one of'),
    (dict(patience=-1), 'patience must be >= 0'),
    (dict(validation_percent=51), 'validation_percent must be in 0..50'),
    (dict(time_budget_minutes=-1.0), 'time_budget_seconds must be >= 0'),
    (dict(accumulation_steps=0), 'accumulation_steps must be >= 1'),
    (dict(optimizer='lamb'), 'optimizer must be one of'),
    (dict(augment='heavy'), 'augment must be one of'),
    (dict(global_batch_size=0), 'global_batch_size must be >= 1'),
    (dict(image_shape=(28, 0, 3)), 'both set or both 0'),
    (dict(image_shape=(8, 8, 2)), 'channels 1 or 3'),
    (dict(pipeline_root=''), 'pipeline_root is required'),
])
def test_bad_parameters_fail_when_the_pipeline_is_built(overrides, message):
    with pytest.raises(ValueError, match=message):
        _trainer(**overrides)


def test_the_input_shape_defaults_to_zero_meaning_from_the_data():
    args = dict(examples=Channel(type=standard_artifacts.Examples),
                model_builder='models.resnet.build_model', global_batch_size=32,
                learning_rate=1e-3, train_steps=100, pipeline_root='/root')
    props = ImageTrainer(**args).exec_properties
    assert (props['image_height'], props['image_width'], props['channels']) == (0, 0, 0)
    props = ImageTrainer(image_shape=(0, 0, 3), **args).exec_properties
    assert (props['image_height'], props['image_width'], props['channels']) == (0, 0, 3)


def test_with_tfjob_sets_the_property_and_checks_the_workers():
    from launch import tfjob
    spec = tfjob.TFJobSpec(workers=4, image='img:1', gpus=1)
    assert _trainer().exec_properties.get('tfjob') is None  # trains in its own process
    trainer = _trainer().with_tfjob(spec)
    assert tfjob.TFJobSpec.from_json(trainer.exec_properties['tfjob']) == spec
    with pytest.raises(ValueError, match=r'split global_batch_size \(32\) evenly, got 3'):
        _trainer().with_tfjob(tfjob.TFJobSpec(workers=3, image='i'))
    with pytest.raises(ValueError, match='>= 2'):
        _trainer().with_tfjob(tfjob.TFJobSpec(workers=1, image='i'))
    with pytest.raises(ValueError, match='not both'):
        _trainer(num_workers=2).with_tfjob(spec)
