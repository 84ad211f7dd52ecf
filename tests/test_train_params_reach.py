"""A setting is one field of its stage's settings class (core/settings.py): its
flag, its config-file key, its stage's component and what the executor reads back all see it,
with nothing else to write. Every field of every table is tried here, so a new one is covered
the day it is added (a value that the generic sample below does not suit goes in SAMPLES)."""
import dataclasses
import json

from google.protobuf import json_format
import pytest
import tensorflow_model_analysis as tfma

import runner
from core import settings
from core.features import LABEL_NAME_KEY
from components.drift.params import DriftParams
from components.evaluate.params import EvalParams
from components.ingest.graph.params import IngestParams
from components.push.params import PushParams
from pipeline.definition import config, config_file, factory, presets
from training.params import TrainParams

# Values other than the default for the fields a generic one does not suit, by key path:
# (flag text, value[, TOML text when that is not the value as JSON]). '{tmp}': the test's folder.
SAMPLES = {
    'ingest.data_dir': ('{tmp}/other', '{tmp}/other'),
    'ingest.label_column': ('species', 'species'), 'ingest.encoding': ('latin-1', 'latin-1'),
    'ingest.convert_formats': ('tiff,webp', ('TIFF', 'WEBP')),
    'ingest.train_percent': (None, 70), 'ingest.split_key': (None, 'content'),
    'ingest.image_size': (None, (8, 12)), 'ingest.image_storage': (None, 'raw'),
    'ingest.feature_types': (None, (('a', 'numeric'),)), 'ingest.drop_columns': (None, ('x',)),
    'train.model_builder': ('my.models.build', 'my.models.build'),
    'train.model_weights': ('{tmp}/w.weights.h5', '{tmp}/w.weights.h5'),
    'train.image_size': ('28x32', (28, 32)), 'train.time_budget_minutes': ('90s', 1.5),
    'train.train_steps': ('100', 100), 'train.workers': ('2', 2), 'train.channels': ('3', 3),
    'train.optimizer': (None, 'sgd'), 'train.devices': (None, ('/cpu:0',)),
    'notify.url': ('https://hooks.example.com/ml',) * 2, 'notify.on_finish': ('echo done',) * 2,
    'name': ('reach-test', 'reach-test'), 'output_dir': ('{tmp}/out2', '{tmp}/out2'),
    'schema_path': ('infer', None, '"infer"'),
    'beam_args': ('--direct_num_workers=1', ('--direct_num_workers=1',)),
    'pipeline_root_uri': ('{tmp}/root', '{tmp}/root'),
    'serving_uri': ('{tmp}/serving', '{tmp}/serving'),
    'kubeflow.image': ('registry/other:2', 'registry/other:2'),
    'kubeflow.image_workdir': (None, '/work'), 'kubeflow.gpu_type': (None, 'example.com/gpu'),
    'kubeflow.trainer_service_account': ('trainer', 'trainer'),
    'kubeflow.s3_secret': ('my-secret', 'my-secret'),
    'kubeflow.s3_endpoint': ('http://minio:9000', 'http://minio:9000'),
    'kubeflow.s3_region': ('eu-west-1', 'eu-west-1'),
    'kubeflow.endpoint': ('http://other:8888', 'http://other:8888'),
    'kubeflow.schedule': ('@hourly', '@hourly'), 'kubeflow.experiment': ('nightly', 'nightly'),
    'kubeflow.namespace': ('team-ml', 'team-ml'), 'kubeflow.token_env': ('KFP_TOKEN', 'KFP_TOKEN'),
    'kubeflow.token_file': ('{tmp}/token', '{tmp}/token'),
    'kubeflow.pipeline_root': ('gs://b/other', 'gs://b/other'),
}
# What every [kubeflow] try starts from, in its config file, but the key tried.
KUBEFLOW_BASE = {'image': '"registry/image:1"', 'pipeline_root': '"gs://b/run"',
                 'endpoint': '"http://kfp:8888"', 'schedule': '"@daily"'}


def _eval_read(component):
    """EvalParams as the Evaluator's executor gets them: max_regression as a property, the
    accuracy bars as the TFMA thresholds of its eval_config."""
    eval_config = json_format.Parse(component.exec_properties['eval_config'], tfma.EvalConfig())
    bars = {tuple(threshold.slicing_specs[0].feature_keys):
            threshold.threshold.value_threshold.lower_bound.value
            for threshold in eval_config.metrics_specs[0].metrics[0].per_slice_thresholds}
    return EvalParams.from_properties(component.exec_properties, min_accuracy=bars[()],
                                      min_class_accuracy=bars.get((LABEL_NAME_KEY,)))


# Per table with a component: (its node id, what its executor reads from it).
READ_BACK = {
    'ingest': ('ImageExampleGen', lambda c: IngestParams.from_properties(c.exec_properties)),
    'train': ('ImageTrainer', lambda c: TrainParams.from_properties(c.exec_properties)),
    'drift': ('DriftCheck', lambda c: DriftParams.from_properties(c.exec_properties)),
    'eval': ('Evaluator', _eval_read),
    'push': ('Pusher', lambda c: PushParams.from_properties(
        json.loads(c.exec_properties['custom_config']))),
}


def _fields():
    """(key path, class, field) of every config-file key."""
    found = [(name, config.PipelineConfig, field)
             for field in dataclasses.fields(config.PipelineConfig)
             for name in config.PipelineConfig.file_keys() if name == field.name]
    for table, cls in config_file.TABLES.items():
        found += [(f'{table}.{field.name}', cls, field) for field in dataclasses.fields(cls)
                  if field.name in cls.file_keys()]
    return found


FIELDS = _fields()


def _sample(path, cls, field, tmp):
    """(flag text, value, TOML text) of something not the field's default."""
    kind, toml = settings.hint(cls, field.name), None
    if path in SAMPLES:
        text, value, *toml = (item.replace('{tmp}', tmp) if isinstance(item, str) else item
                              for item in SAMPLES[path])
    elif kind is bool:
        text, value = None, not field.default
    elif 'choices' in field.metadata:
        value = [c for c in field.metadata['choices'] if c != field.default][-1]
        text = str(value)
    elif kind is float:
        value = field.default / 2 if field.default else 0.5
        text = str(value)
    else:
        value = kind(field.default * 2 + 1)
        text = str(value)
    toml = toml[0] if toml else json.dumps(list(value) if isinstance(value, tuple) else value)
    return text, value, toml


def _configs(tmp_path, path, args, toml=''):
    """runner.py's configs for these flags over a config file; the value at `path`."""
    table, _, key = path.rpartition('.')
    kubeflow = table == config_file.KUBEFLOW
    text = f'[{config_file.KUBEFLOW}]\n' + ''.join(
        f'{name} = {value}\n' for name, value in KUBEFLOW_BASE.items()
        if name != key) if kubeflow else ''
    if toml:
        text = (text + toml) if kubeflow else (f'[{table}]\n' if table else '') + toml
    (tmp_path / 'settings.toml').write_text(text)
    mode = ['--kubeflow'] if kubeflow else ['--local'] + [  # but the flag of the field tried
        arg for flag, value in (('--output', 'run'), ('--data', 'data')) if not path.endswith(
            {'--output': 'output_dir', '--data': 'data_dir'}[flag])
        for arg in (flag, str(tmp_path / value))]
    cfg, kubeflow_cfg = presets.from_args(runner.build_parser().parse_args(
        [*mode, '--config-file', str(tmp_path / 'settings.toml'), *args]))
    owner = kubeflow_cfg if kubeflow else (getattr(cfg, table) if table else cfg)
    return cfg, getattr(owner, key)


@pytest.mark.parametrize('path, cls, field', FIELDS, ids=[path for path, _, _ in FIELDS])
def test_a_setting_reaches_flag_key_component_and_executor(tmp_path, path, cls, field):
    (tmp_path / 'data').mkdir()
    (tmp_path / 'other').mkdir()
    (tmp_path / 'w.weights.h5').write_bytes(b'')
    text, value, toml = _sample(path, cls, field, str(tmp_path))
    assert value != field.default
    flag = field.metadata.get('flag')
    by_flag = None
    if flag:
        given = [flag] if settings.hint(cls, field.name) is bool else [f'{flag}={text}']
        by_flag, found = _configs(tmp_path, path, given)
        assert found == value, flag
    by_key, found = _configs(tmp_path, path, [], f'{field.name} = {toml}\n')
    assert found == value, f'[{path}]'
    table = path.rpartition('.')[0]
    if table in READ_BACK:  # the component records it, the executor reads it back
        node, read = READ_BACK[table]
        cfg = by_flag or by_key
        component, = [c for c in factory.create_components(cfg) if c.id == node]
        assert getattr(read(component), field.name) == (
            cfg.model_builder if path == 'train.model_builder' else value), node


def test_every_table_with_a_component_records_all_its_settings(tmp_path):
    """Every field of a stage's settings (the pipeline's own ones too, key=False) is a property
    of its component, with the values the factory gives it."""
    cfg = config.smoke_config(config.DEFAULT_DATA, str(tmp_path), train=TrainParams(
        optimizer='sgd', seed=7, eval_steps=3, checkpoint_interval=9, devices=('/cpu:0',),
        workers=2, channels=1))
    components = {c.id: c for c in factory.create_components(cfg)}
    for table, (node, read) in READ_BACK.items():
        recorded = read(components[node])
        expected = getattr(cfg, table)
        if table == 'ingest':  # what the factory sets: from the training settings
            expected = dataclasses.replace(expected, min_train_shards=2, channels=1)
        if table == 'train':
            expected = dataclasses.replace(expected, model_builder=cfg.model_builder)
        assert recorded == expected, table
