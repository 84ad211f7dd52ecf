"""Unit tests of TrainParams: one validation, and the execution properties ML Metadata records."""
import dataclasses

import pytest

from training.params import NAMED_MODELS, TrainParams

# The ImageTrainer execution properties the parameters were recorded as when TrainParams came:
# the skip-unchanged digest of every served model and the compiled Kubeflow specs use these
# names, so they stay; a new parameter adds its own.
RECORDED = {
    'model_builder', 'model_weights', 'image_height', 'image_width', 'channels', 'train_epochs',
    'train_steps', 'patience', 'validation_percent', 'time_budget_minutes', 'freeze_epochs',
    'global_batch_size', 'num_workers', 'accumulation_steps', 'learning_rate', 'mixed_precision',
    'warm_start', 'augment', 'flip', 'optimizer', 'warmup_steps', 'checkpoint_interval',
    'eval_steps', 'seed', 'devices', 'skip_unchanged'}


def test_every_parameter_is_an_execution_property_of_a_plain_type():
    types = TrainParams.property_types()
    assert RECORDED <= set(types)
    assert set(types.values()) <= {int, float, str}
    assert types['image_height'] is int and types['flip'] is str and types['devices'] is str


@pytest.mark.parametrize('params', [
    TrainParams(),
    TrainParams(model_builder='resnet50', model_weights='/w/backbone.weights.h5',
                image_size=(28, 32), channels=3, train_epochs=5.0, freeze_epochs=2,
                workers=2, warm_start=True, flip=True, devices=('/cpu:0', '/cpu:1'),
                time_budget_minutes=1.5, skip_unchanged=False, augment='standard'),
    TrainParams(train_steps=40, global_batch_size=24, accumulation_steps=3, optimizer='sgd'),
])
def test_the_properties_give_back_the_same_parameters(params):
    properties = params.to_properties()
    assert all(type(value) is TrainParams.property_types()[name]
               for name, value in properties.items())
    assert TrainParams.from_properties(properties) == params


def test_none_is_recorded_as_zero_or_empty_and_read_back_as_none():
    properties = TrainParams().to_properties()
    assert (properties['image_height'], properties['image_width'], properties['channels']) == (
        0, 0, 0)
    assert properties['model_weights'] == '' and properties['devices'] == '[]'
    assert properties['num_workers'] == 1 and properties['flip'] == 'off'


def test_a_property_an_older_execution_lacks_keeps_its_default():
    properties = TrainParams(learning_rate=0.01).to_properties()
    del properties['freeze_epochs'], properties['num_workers']
    params = TrainParams.from_properties(properties)
    assert (params.freeze_epochs, params.workers, params.learning_rate) == (0, 1, 0.01)


def test_a_fixed_length_drops_the_epochs_and_named_models_become_import_paths():
    assert TrainParams(train_steps=30, train_epochs=4.0).train_epochs == 0.0
    for name, path in NAMED_MODELS.items():
        assert TrainParams(model_builder=name).model_builder == path


@pytest.mark.parametrize('changes, message', [
    (dict(global_batch_size=10, workers=3), 'workers must be >= 1 and split global_batch_size'),
    (dict(workers=0), 'workers must be >= 1'),
    (dict(validation_percent=51), 'validation_percent must be in 0..50'),
    (dict(freeze_epochs=2, train_epochs=2.0), 'freeze_epochs must be fewer than train_epochs'),
    (dict(freeze_epochs=1, train_steps=30), 'training must be by epochs'),
    (dict(freeze_epochs=-1), 'freeze_epochs'),
    (dict(augment='heavy'), 'augment must be one of'),
    (dict(mixed_precision='float16'), 'mixed_precision must be one of'),
    (dict(optimizer='lamb'), 'optimizer must be one of'),
    (dict(checkpoint_interval=0), 'checkpoint_interval must be >= 1'),
    (dict(eval_steps=-1), 'eval_steps must be >= 0'),
    (dict(model_weights='gs://b/w.h5'), 'model_weights must be a local file path'),
    (dict(devices=('',)), 'devices must be device names'),
])
def test_each_check_is_made_once_here(changes, message):
    with pytest.raises(ValueError, match=message):
        TrainParams(**changes)


def test_every_field_has_help_and_a_flag_or_none():
    for field in dataclasses.fields(TrainParams):
        assert field.metadata['help'], field.name
        flag = field.metadata['flag']
        assert flag is None or flag.startswith('--'), field.name


def test_bare_is_plain_training():
    bare = TrainParams.bare(global_batch_size=8)
    assert (bare.warmup_steps, bare.augment, bare.validation_percent, bare.patience,
            bare.mixed_precision, bare.seed, bare.global_batch_size) == (
        0, 'none', 0, 0, 'float32', 0, 8)
