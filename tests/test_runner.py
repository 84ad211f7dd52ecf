"""Unit tests of the command line: help, flag validation and clear errors without tracebacks."""
import os

import pytest

import runner
from components.evaluate.params import EvalParams
from pipeline.definition import config, presets
from training.params import TrainParams

from helpers import runner_cli as _cli, runner_configs as _configs


def test_help_documents_every_flag():
    result = _cli('--help')
    assert result.returncode == 0
    flags = [option for action in runner.build_parser()._actions
             for option in action.option_strings if option.startswith('--')]
    assert len(flags) >= 20
    for flag in flags:
        assert flag in result.stdout
    for action in runner.build_parser()._actions:
        assert action.help, f'{action.option_strings} has no help text'


def test_missing_data_folder_is_a_clear_error_without_traceback(tmp_path):
    result = _cli('--local', '--data', str(tmp_path / 'nope'), '--output', str(tmp_path / 'o'))
    assert result.returncode == 2
    assert 'error: --data folder does not exist' in result.stderr
    assert 'Traceback' not in result.stderr


@pytest.mark.parametrize('flags, message', [
    (['--steps', '-1'], '--steps must be >= 0'),
    (['--validation-percent', '80'], '--validation-percent must be in 0..50'),
    (['--patience', '-1'], '--patience must be >= 0'),
    (['--config', 'large'], "argument --config: invalid choice: 'large'"),
    (['--batch-size', 'many'], "argument --batch-size: invalid int value: 'many'"),
    (['--batch-size', '-1'], '--batch-size must be >= 0'),
    (['--accumulation-steps', '0'], '--accumulation-steps must be >= 1'),
    (['--learning-rate', '0'], '--learning-rate must be > 0'),
    (['--min-accuracy', '1.5'], '--min-accuracy must be in [0, 1]'),
    (['--max-rejected-fraction', '1'], '--max-rejected-fraction must be in [0, 1)'),
    (['--model', 'build'], '--model must be one of resnet50, efficientnet_b0, '
     'mobilenet_v3_small or an import path'),
    (['--weights', '/no/such.weights.h5'], 'model weights file not found: /no/such.weights.h5'),
    (['--image-size', '28'], 'argument --image-size: expected HEIGHTxWIDTH'),
    (['--channels', '2'], 'argument --channels: invalid choice'),
    (['--config-file', '/no/such.toml'], '--config-file /no/such.toml: No such file'),
    (['--mixed-precision', 'float16'], "argument --mixed-precision: invalid choice"),
    (['--augment', 'heavy'], "argument --augment: invalid choice: 'heavy'"),
    (['--window', '0'], '--window must be >= 1'),
])
def test_bad_values_are_clear_errors_before_anything_runs(tmp_path, flags, message):
    result = _cli('--local', *flags, '--output', str(tmp_path / 'o'))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert 'Traceback' not in result.stderr and not os.path.exists(tmp_path / 'o')


def test_output_naming_a_file_is_a_one_line_error(tmp_path):
    (tmp_path / 'taken').write_text('x')
    result = _cli('--local', '--output', str(tmp_path / 'taken'))
    assert result.returncode == 2 and 'Traceback' not in result.stderr
    assert result.stderr.strip() == f'error: --output names a file, not a folder: {tmp_path}/taken'


def test_what_users_change_has_a_flag(tmp_path):
    cfg, _ = _configs('--local', '--output', str(tmp_path), '--source', 'csv', '--epochs', '3',
                      '--learning-rate', '0.01', '--image-size', '28x32', '--channels', '3',
                      '--model', 'my.models.build', '--label-column', 'species',
                      '--min-accuracy', '0.8', '--max-rejected-fraction', '0.1',
                      '--window', '5')
    assert cfg.train.train_epochs == 3.0 and cfg.train.learning_rate == 0.01
    assert cfg.train.image_size == (28, 32) and cfg.train.channels == 3
    assert cfg.model_builder == 'my.models.build' and cfg.ingest.label_column == 'species'
    assert cfg.eval.min_accuracy == 0.8 and cfg.ingest.max_rejected_fraction == 0.1
    assert cfg.ingest.window == 5


def test_training_length_flags_reach_the_config(tmp_path):
    cfg, _ = _configs('--local', '--output', str(tmp_path), '--patience', '5',
                      '--validation-percent', '15', '--time-budget', '1.5h')
    assert (cfg.train.patience, cfg.train.validation_percent) == (5, 15)
    assert cfg.train.time_budget_minutes == 90.0 and cfg.train.train_steps == 0
    for text, minutes in (('10', 10.0), ('10m', 10.0), ('90s', 1.5), (' 2 min ', 2.0)):
        assert _configs('--local', '--output', str(tmp_path), '--time-budget',
                        text)[0].train.time_budget_minutes == minutes
    fixed, _ = _configs('--local', '--output', str(tmp_path), '--steps', '200')
    assert fixed.train.train_steps == 200  # a fixed length: epochs no longer apply
    result = _cli('--local', '--time-budget', 'soon')
    assert result.returncode == 2 and 'expected minutes' in result.stderr


def test_a_named_architecture_and_its_weights_reach_the_config_as_path_and_file(tmp_path,
                                                                              monkeypatch):
    (tmp_path / 'backbone.weights.h5').write_bytes(b'not read here')
    monkeypatch.chdir(tmp_path)  # --weights relative to the current folder, recorded absolute
    cfg, _ = _configs('--local', '--output', str(tmp_path / 'o'), '--model', 'resnet50',
                      '--weights', 'backbone.weights.h5')
    assert cfg.model_builder == 'models.applications.resnet50'
    assert cfg.train.model_weights == str(tmp_path / 'backbone.weights.h5')


def test_default_data_uses_the_curated_schema_and_other_data_infers(tmp_path):
    assert _configs('--local', '--output', str(tmp_path))[0].schema_path == config.DIGITS_SCHEMA
    cfg, _ = _configs('--local', '--data', str(tmp_path), '--output', str(tmp_path))
    assert cfg.schema_path is None
    assert _configs('--local', '--schema', 'infer')[0].schema_path is None


def test_flags_reach_the_config(tmp_path):
    cfg, kubeflow = _configs('--local', '--steps', '7', '--output', str(tmp_path),
                             '--beam-args=--direct_num_workers=1 --foo=bar', '--no-cache',
                             '--accumulation-steps', '4', '--mixed-precision', 'mixed_float16',
                             '--warm-start', '--augment', 'standard', '--flip')
    assert kubeflow is None and cfg.train.warm_start is True
    assert cfg.train.augment == 'standard' and cfg.train.flip == 'on'  # --flip alone: on
    for given, flip in (('auto', 'auto'), ('off', 'off'), ('on', 'on')):
        assert _configs('--local', '--output', str(tmp_path), '--flip', given)[0].train.flip == flip
    assert cfg.train.train_steps == 7 and cfg.train.warmup_steps < 7
    assert cfg.train.accumulation_steps == 4 and cfg.train.mixed_precision == 'mixed_float16'
    assert cfg.beam_args == ('--direct_num_workers=1', '--foo=bar')
    assert cfg.enable_cache is False and cfg.output_dir == str(tmp_path)


def test_defaults_are_the_default_config(tmp_path):
    cfg, _ = _configs('--local', '--output', str(tmp_path))
    assert cfg.train == TrainParams() and cfg.eval == EvalParams()
    assert cfg.train.mixed_precision == 'auto'


def test_config_and_batch_size_flags_reach_the_config(tmp_path):
    cfg, _ = _configs('--local', '--config', 'smoke', '--batch-size', '24',
                      '--data', str(tmp_path), '--output', str(tmp_path / 'o'))
    smoke = config.smoke_config(str(tmp_path), str(tmp_path / 'o'))
    assert cfg.train.global_batch_size == 24
    assert cfg.train.train_steps == smoke.train.train_steps and cfg.beam_args == smoke.beam_args
    assert cfg.ingest.data_dir == str(tmp_path)



def test_csv_source_defaults_to_the_wine_table_its_schema_and_the_mlp(tmp_path):
    cfg, _ = _configs('--local', '--source', 'csv')
    assert cfg.ingest.source == 'csv' and cfg.ingest.data_dir == config.DEFAULT_CSV_DATA
    assert cfg.schema_path == config.WINE_SCHEMA
    assert cfg.model_builder == 'models.mlp.build_model'
    assert _configs('--local', '--source', 'csv', '--data', str(tmp_path))[0].schema_path is None


def test_parquet_needs_data_infers_its_schema_and_trains_the_mlp(tmp_path):
    with pytest.raises(ValueError, match='--source parquet has no embedded sample data: name '
                       'the input folder with --data'):
        _configs('--local', '--source', 'parquet')
    cfg, _ = _configs('--local', '--source', 'parquet', '--data', str(tmp_path),
                      '--label-column', 'segment')
    assert (cfg.ingest.source, cfg.ingest.data_dir, cfg.ingest.label_column) == (
        'parquet', str(tmp_path), 'segment')
    assert cfg.schema_path is None and cfg.model_builder == 'models.mlp.build_model'
    # Scoring reads no training data: the scored folder stands in for --data.
    scored, _ = _configs('--score', str(tmp_path), '--source', 'parquet')
    assert scored.ingest.data_dir == str(tmp_path)


def test_an_output_that_is_a_file_is_a_one_line_error(tmp_path):
    (tmp_path / 'file').write_text('not a folder')
    result = _cli('--local', '--output', str(tmp_path / 'file'))
    assert result.returncode == 2 and result.stdout == ''
    assert result.stderr == f'error: --output names a file, not a folder: {tmp_path / "file"}\n'


def test_notify_flags_and_the_notify_table_reach_the_config(tmp_path):
    settings = tmp_path / 'settings.toml'
    settings.write_text('[notify]\nurl = "https://hooks.example.com/a"\non_finish = "hook.sh"\n'
                        'timeout_seconds = 3\n')
    cfg, _ = _configs('--local', '--output', str(tmp_path), '--config-file', str(settings))
    assert (cfg.notify.url, cfg.notify.on_finish, cfg.notify.timeout_seconds) == (
        'https://hooks.example.com/a', 'hook.sh', 3.0)
    cfg, _ = _configs('--local', '--output', str(tmp_path), '--config-file', str(settings),
                      '--notify', 'http://localhost:9/b', '--on-finish', 'other --x')
    assert (cfg.notify.url, cfg.notify.on_finish) == ('http://localhost:9/b', 'other --x')
    assert _configs('--local', '--output', str(tmp_path))[0].notify.url is None
    result = _cli('--local', '--output', str(tmp_path), '--notify', 'hooks.example.com')
    assert result.returncode == 2 and result.stderr.startswith(
        "error: --notify must be an http:// or https:// URL, got 'hooks.example.com'")


def test_rollback_is_a_mode_of_its_own():
    assert runner.build_parser().parse_args(['--rollback', '2']).rollback == 2
    with pytest.raises(SystemExit):
        runner.build_parser().parse_args(['--rollback', '2', '--local'])


@pytest.mark.parametrize('flags, message', [
    (['--score', 'x', '--local'], '--score runs on its own'),
    (['--score', 'x', '--rollback', '2'], '--score runs on its own'),
    (['--local', '--version', '2'], '--version goes with --score'),
])
def test_score_is_a_mode_of_its_own(flags, message, capsys):
    with pytest.raises(SystemExit):
        runner.build_parser().parse_args(flags)
    assert message in capsys.readouterr().err


def test_score_flags_make_a_score_config(tmp_path):
    args = runner.build_parser().parse_args(['--score', 'new', '--version', '3', '--top-k', '2'])
    score = presets.score_config(args.score, args.version, args.top_k)
    assert score == config.ScoreConfig(os.path.abspath('new'), 3, 2)
    args = runner.build_parser().parse_args(['--kubeflow', '--score', 'gs://b/new'])
    assert presets.score_config(args.score, None, None).input_dir == 'gs://b/new'


def test_score_without_a_serving_folder_is_one_line(tmp_path):
    (tmp_path / 'new').mkdir()
    result = _cli('--score', str(tmp_path / 'new'), '--output', str(tmp_path / 'out'))
    assert result.returncode == 2
    assert result.stderr.strip() == (f'error: no model to score with: no serving folder under '
                                     f'{tmp_path / "out"} (a run that pushes a model creates '
                                     'it; --output names the run folder)')


def test_help_groups_flags_and_ends_with_examples():
    result = _cli('--help')
    titles = [line[:-1] for line in result.stdout.splitlines()
              if line.endswith(':') and not line.startswith(' ')]
    assert titles[1:8] == ['data', 'training', 'evaluation and push', 'execution', 'Kubeflow',
                           'scheduling', 'scoring']
    assert result.stdout.count('  python runner.py --') == 3  # the epilog's examples
    # Defaults come from the dataclasses; auto precision and XLA say they are timed.
    assert f'(default: {TrainParams.global_batch_size})' in result.stdout
    words = ' '.join(result.stdout.split())
    assert 'trains faster in a timed trial of the train step' in words
    assert '--xla {auto,on,off}' in words



def test_the_pipeline_name_has_a_flag_and_a_key(tmp_path):
    assert _configs('--local', '--output', str(tmp_path))[0].name == 'image-pipeline'
    cfg, kubeflow = _configs('--kubeflow', '--image', 'i', '--pipeline-root', 'gs://b/r',
                             '--name', 'flowers-nightly')
    assert cfg.name == 'flowers-nightly' and kubeflow is not None
    settings = tmp_path / 'settings.toml'
    settings.write_text('name = "from-file"\n')
    assert _configs('--local', '--output', str(tmp_path), '--config-file',
                    str(settings))[0].name == 'from-file'
    with pytest.raises(ValueError, match='--name must be 1-128 lowercase'):
        _configs('--local', '--output', str(tmp_path), '--name', 'Flowers')
