"""Unit tests: the TOML config file mirrors the typed config, and flags override it."""
import dataclasses
import os
import re
import tomllib

import pytest

from components.evaluate.params import EvalParams
from components.ingest.graph.params import IngestParams
from pipeline.definition import config, config_file, presets
from pipeline.definition.config_kubeflow import KubeflowConfig
from training.params import TrainParams

from helpers import REPO_ROOT


def _write(tmp_path, text, name='settings.toml'):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _build(config_path=None, **flags):
    given = {dest: value for dest, value in flags.items()}
    return presets.from_flags('default', config_path, given)


def test_the_committed_example_is_valid_and_keeps_the_defaults(tmp_path):
    cfg = _build(os.path.join(REPO_ROOT, 'config.example.toml'), output=str(tmp_path))
    assert cfg.train == TrainParams() and cfg.eval == EvalParams()
    assert cfg.ingest.source == 'images' and cfg.ingest.data_dir == config.DEFAULT_DATA


def test_every_table_reaches_the_config_with_types_and_relative_paths(tmp_path):
    (tmp_path / 'rows').mkdir()
    path = _write(tmp_path, '''
output_dir = "out"
schema_path = "infer"
beam_args = ["--direct_num_workers=1"]
[ingest]
source = "csv"
data_dir = "rows"
label_column = "species"
drop_columns = ["id"]
feature_types = { zip = "categorical" }
[train]
image_size = [28, 32]
channels = 3
train_epochs = 2
learning_rate = 1e-3
[eval]
min_accuracy = 1
min_class_accuracy = 0.5
[push]
keep_versions = 2
''')
    cfg = _build(path)
    assert cfg.output_dir == str(tmp_path / 'out') and cfg.schema_path is None
    assert cfg.ingest.data_dir == str(tmp_path / 'rows') and cfg.ingest.source == 'csv'
    assert cfg.ingest.drop_columns == ('id',) and cfg.ingest.label_column == 'species'
    assert cfg.ingest.feature_types == (('zip', 'categorical'),)
    assert cfg.train.image_size == (28, 32) and cfg.train.channels == 3
    assert cfg.train.train_epochs == 2.0 and isinstance(cfg.train.train_epochs, float)
    assert cfg.eval.min_accuracy == 1.0 and cfg.eval.min_class_accuracy == 0.5
    assert cfg.push.keep_versions == 2 and cfg.beam_args == ('--direct_num_workers=1',)
    assert cfg.model_builder == 'models.mlp.build_model'


def test_a_named_model_and_weights_in_a_file_resolve_and_are_relative_to_it(tmp_path):
    (tmp_path / 'backbone.weights.h5').write_bytes(b'not read here')
    cfg = _build(_write(tmp_path, '[train]\nmodel_builder = "mobilenet_v3_small"\n'
                                  'model_weights = "backbone.weights.h5"\n'))
    assert cfg.model_builder == 'models.applications.mobilenet_v3_small'
    assert cfg.train.model_weights == str(tmp_path / 'backbone.weights.h5')


def test_flags_override_the_file_and_steps_on_the_command_line_beat_epochs_in_it(tmp_path):
    path = _write(tmp_path, '[train]\ntrain_epochs = 4\nlearning_rate = 0.1\n'
                            'global_batch_size = 32\n')
    cfg = _build(path, output=str(tmp_path), steps=50, learning_rate=0.2)
    assert cfg.train.learning_rate == 0.2 and cfg.train.global_batch_size == 32
    assert cfg.train.train_steps == 50 and cfg.train.train_epochs == 0.0
    assert cfg.train.warmup_steps < 50


def test_epochs_on_the_command_line_beat_steps_in_the_file_and_the_preset(tmp_path):
    path = _write(tmp_path, '[train]\ntrain_steps = 80\npatience = 0\n'
                            'validation_percent = 20\ntime_budget_minutes = 1.5\n')
    cfg = _build(path, output=str(tmp_path), epochs=3.0)
    assert cfg.train.train_steps == 0 and cfg.train.train_epochs == 3.0
    assert (cfg.train.patience, cfg.train.validation_percent) == (0, 20)
    assert cfg.train.time_budget_minutes == 1.5
    assert _build(path, output=str(tmp_path)).train.train_steps == 80  # the file's steps
    smoke = presets.from_flags('smoke', _write(tmp_path, '[train]\ntrain_epochs = 2\n', 'e.toml'),
                               {'output': str(tmp_path)})
    assert smoke.train.train_steps == 0 and smoke.train.train_epochs == 2.0
    flags = presets.from_flags('smoke', None, {'output': str(tmp_path), 'patience': 1,
                                               'validation_percent': 5, 'time_budget': 0.5})
    assert flags.train.train_steps == 30  # the preset's fixed length is kept
    assert (flags.train.patience, flags.train.validation_percent,
            flags.train.time_budget_minutes) == (1, 5, 0.5)


@pytest.mark.parametrize('text, message', [
    ('[train]\nstepz = 3\n', 'unknown key [train] stepz'),
    ('[training]\ntrain_steps = 3\n', 'unknown table [training]'),
    ('train_steps = 3\n', 'unknown key train_steps'),
    ('[train]\ntrain_steps = "many"\n', '[train] train_steps must be an integer'),
    ('[train]\ntrain_steps = 2.5\n', '[train] train_steps must be an integer'),
    ('[train]\nwarm_start = 1\n', '[train] warm_start must be true or false'),
    ('[train]\nimage_size = [28]\n', '[train] image_size must be a list of 2'),
    ('[train]\ntrain_steps = -1\n', '[train] train_steps must be >= 0'),
    ('[train]\ntrain_epochs = -1\n', '[train] train_epochs must be >= 0'),
    ('[train]\npatience = 1.5\n', '[train] patience must be an integer'),
    ('[train]\nvalidation_percent = 70\n', '[train] validation_percent must be in 0..50'),
    ('[eval]\nmin_accuracy = 2.0\n', '[eval] min_accuracy must be in [0, 1]'),
    ('[ingest\n', 'not valid TOML'),
])
def test_a_bad_file_is_an_error_naming_the_file_and_key(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(ValueError) as error:
        _build(path, output=str(tmp_path))
    assert message in str(error.value) and path in str(error.value)


def test_a_flag_error_names_the_flag_not_the_field(tmp_path):
    with pytest.raises(ValueError, match=r'^--steps must be >= 0 \(0 = by epochs\), '
                       'got -1$'):
        _build(output=str(tmp_path), steps=-1)
    with pytest.raises(ValueError, match='^--time-budget must be >= 0'):
        _build(output=str(tmp_path), time_budget=-2.0)
    with pytest.raises(ValueError, match=r'^--batch-size must be >= 0 \(0 = from the data\)'):
        _build(output=str(tmp_path), batch_size=-1)


@pytest.mark.parametrize('text, size', [('28x28', (28, 28)), ('32×40', (32, 40)),
                                        (' 8,16 ', (8, 16))])
def test_image_size_is_height_by_width(text, size):
    assert presets.parse_size(text) == size


@pytest.mark.parametrize('text', ['28', '0x28', 'axb', '28x28x3'])
def test_bad_image_sizes_are_refused(text):
    with pytest.raises(Exception, match='expected HEIGHTxWIDTH'):
        presets.parse_size(text)


def test_coerce_follows_the_field_types():
    assert config_file.coerce([['a', 'numeric']], IngestParams.__annotations__[
        'feature_types'], 'k') == (('a', 'numeric'),)
    with pytest.raises(ValueError, match='k must be a number'):
        config_file.coerce('x', float, 'k')


def test_the_kubeflow_table_under_the_flags(tmp_path):
    path = _write(tmp_path, '''
[train]
train_steps = 30
[kubeflow]
image = "registry/image-pipeline:1"
pipeline_root = "gs://acme/run"
trainer_cpu = 8
endpoint = "https://kfp"
schedule = "@daily"
namespace = "team-ml"
token_file = "kfp-token"
''')
    root, kubeflow = presets.kubeflow_from_flags(path, {'namespace': 'team-b', 'trainer_gpus': 1},
                                                 None)
    assert root == 'gs://acme/run' and kubeflow.image == 'registry/image-pipeline:1'
    assert kubeflow.trainer_cpu == 8.0 and kubeflow.trainer_gpus == 1  # file, then flags
    assert (kubeflow.endpoint, kubeflow.schedule) == ('https://kfp', '@daily')
    assert kubeflow.namespace == 'team-b' and kubeflow.output_file == 'pipeline.json'
    assert kubeflow.token_file == str(tmp_path / 'kfp-token')  # relative to the file
    assert kubeflow.experiment == KubeflowConfig.experiment  # the default
    assert _build(path, output=str(tmp_path)).train.train_steps == 30  # a local run ignores it


@pytest.mark.parametrize('text, message', [
    ('[kubeflow]\nimage = "i"\n', 'needs --image and --pipeline-root'),
    ('[kubeflow]\nimage = "i"\npipeline_root = "gs://b"\ntrainer_cpu = 0\n',
     r'\[kubeflow\] trainer_cpu must be > 0'),
    ('[kubeflow]\nimage = "i"\npipeline_root = "gs://b"\nnamespace = "team-ml"\n',
     'they need an endpoint'),
    ('[kubeflow]\nimage = 1\n', r'\[kubeflow\] image must be a string'),
    ('[kubeflow]\nimage = "i"\npipeline_root = "runs/kfp"\n',
     r"\[kubeflow\] pipeline_root must be gs://BUCKET\[/PATH\], s3://BUCKET\[/PATH\] or "
     r"minio://BUCKET\[/PATH\], got 'runs/kfp'"),
    ('[kubeflow]\ntoken = "secret"\n', r'unknown key \[kubeflow\] token'),
])
def test_kubeflow_table_errors_name_the_key(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        presets.kubeflow_from_flags(_write(tmp_path, text), {}, None)


def test_every_commented_kubeflow_key_of_the_example_is_known_and_typed():
    with open(os.path.join(REPO_ROOT, 'config.example.toml')) as handle:
        table = handle.read().split('[kubeflow]')[1]
    lines = [line[2:] for line in table.splitlines() if re.match(r'# \w+ = ', line)]
    assert len(lines) >= 10
    for line in lines:
        key, value = next(iter(tomllib.loads(line.split('  #')[0]).items()))
        config_file.typed({f'kubeflow.{key}': value}, {})  # ValueError on a wrong key or type


def test_every_commented_notify_key_of_the_example_is_known_and_typed():
    with open(os.path.join(REPO_ROOT, 'config.example.toml')) as handle:
        table = handle.read().split('[notify]')[1].split('\n[')[0]
    lines = [line[2:] for line in table.splitlines() if re.match(r'# \w+ = ', line)]
    assert [line.split(' = ')[0] for line in lines] == ['url', 'on_finish', 'timeout_seconds']
    for line in lines:
        key, value = next(iter(tomllib.loads(line.split('  #')[0]).items()))
        config_file.typed({f'notify.{key}': value}, {})  # ValueError on a wrong key or type


def test_the_example_holds_every_kubeflow_setting_and_documents_the_pipeline_name():
    with open(os.path.join(REPO_ROOT, 'config.example.toml')) as handle:
        text = handle.read()
    table = text.split('[kubeflow]')[1]
    keys = set(re.findall(r'^# (\w+) = ', table, re.M))
    expected = {f.name for f in dataclasses.fields(KubeflowConfig)} - {'output_file'}
    assert expected | {'pipeline_root'} == keys
    assert re.search(r'^# name = "image-pipeline"', text, re.M)
    assert 'replaces' in text.split('# name =')[0].rsplit('\n\n', 1)[1]  # what a name decides


def test_every_commented_key_of_the_example_is_known_and_typed():
    table = ''
    with open(os.path.join(REPO_ROOT, 'config.example.toml')) as handle:
        lines = handle.read().splitlines()
    checked = 0
    for line in lines:
        table = line[1:-1] if re.fullmatch(r'\[\w+\]', line) else table
        if re.match(r'#? ?\w+ = ', line):
            key, value = next(iter(tomllib.loads(line.lstrip('# ').split('  #')[0]).items()))
            path = f'{table}.{key}' if table else key
            config_file.typed({path: value}, {})  # KeyError or ValueError on a wrong key/type
            checked += 1
    assert checked >= 60
