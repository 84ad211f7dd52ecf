"""A training parameter is one TrainParams field: its flag, its config-file key, the trainer
component and the executor all see it, with nothing else to write (training/params.py)."""
import dataclasses
import json
import typing

import pytest

import runner
from pipeline import config, pipeline
from training.params import TrainParams

# Values other than the default for the fields a generic one does not suit: (flag text, value).
SAMPLES = {'model_builder': ('my.models.build', 'my.models.build'),
           'image_size': ('28x32', (28, 32)), 'time_budget_minutes': ('90s', 1.5),
           'train_steps': ('100', 100), 'workers': ('2', 2), 'channels': ('3', 3)}


def _sample(field):
    """(flag arguments, value) setting the field to something not its default."""
    hint = typing.get_type_hints(TrainParams)[field.name]
    flag = field.metadata['flag']
    if field.name in SAMPLES:
        text, value = SAMPLES[field.name]
        return [flag, text], value
    if hint is bool:
        return [flag], not field.default
    if 'choices' in field.metadata:
        value = [c for c in field.metadata['choices'] if c != field.default][-1]
        return [flag, str(value)], value
    value = hint(field.default * 2 + 1)
    return [flag, str(value)], value


def _toml(value):
    return json.dumps(list(value) if isinstance(value, tuple) else value)


FLAGGED = [f for f in dataclasses.fields(TrainParams) if f.metadata['flag']]


@pytest.mark.parametrize('field', FLAGGED, ids=[f.name for f in FLAGGED])
def test_a_parameter_reaches_flag_key_component_and_executor(tmp_path, field):
    if field.name == 'model_weights':  # a file that exists (the config checks)
        (tmp_path / 'w.weights.h5').write_bytes(b'')
        SAMPLES['model_weights'] = (str(tmp_path / 'w.weights.h5'),) * 2
    args, value = _sample(field)
    by_flag, _ = runner.build_configs(runner.build_parser().parse_args(
        ['--local', '--output', str(tmp_path / 'run'), *args]))
    assert getattr(by_flag.train, field.name) == value
    settings = tmp_path / 'settings.toml'
    settings.write_text(f'[train]\n{field.name} = {_toml(value)}\n')
    by_key, _ = runner.build_configs(runner.build_parser().parse_args(
        ['--local', '--output', str(tmp_path / 'run'), '--config-file', str(settings)]))
    assert getattr(by_key.train, field.name) == value
    trainer, = [c for c in pipeline.create_components(by_flag) if c.id == 'ImageTrainer']
    recorded = TrainParams.from_properties(trainer.exec_properties)  # what the executor reads
    assert recorded == dataclasses.replace(by_flag.train, model_builder=by_flag.model_builder)
    assert getattr(recorded, field.name) == value


def test_every_parameter_without_a_flag_is_a_config_file_key_and_recorded(tmp_path):
    for field in dataclasses.fields(TrainParams):
        assert field.name in typing.get_type_hints(config.TrainConfig)
    cfg = config.smoke_config(config.DEFAULT_DATA, str(tmp_path), train=TrainParams(
        optimizer='sgd', seed=7, eval_steps=3, checkpoint_interval=9, devices=('/cpu:0',)))
    trainer, = [c for c in pipeline.create_components(cfg) if c.id == 'ImageTrainer']
    recorded = TrainParams.from_properties(trainer.exec_properties)
    assert (recorded.optimizer, recorded.seed, recorded.eval_steps, recorded.checkpoint_interval,
            recorded.devices) == ('sgd', 7, 3, 9, ('/cpu:0',))
