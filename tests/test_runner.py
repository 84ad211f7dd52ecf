"""Unit tests of the command line: help, flag validation and clear errors without tracebacks."""
import os
import subprocess
import sys

import pytest

import runner
from pipeline import config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cli(*args):
    return subprocess.run([sys.executable, 'runner.py', *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


def test_help_documents_every_flag():
    result = _cli('--help')
    assert result.returncode == 0
    for flag in ('--local', '--source', '--data', '--output', '--config', '--steps', '--batch-size',
                 '--accumulation-steps', '--mixed-precision', '--schema', '--beam-args',
                 '--no-cache', '--verbose'):
        assert flag in result.stdout


def test_missing_data_folder_is_a_clear_error_without_traceback(tmp_path):
    result = _cli('--local', '--data', str(tmp_path / 'nope'), '--output', str(tmp_path / 'o'))
    assert result.returncode == 2
    assert 'error: --data folder does not exist' in result.stderr
    assert 'Traceback' not in result.stderr


def test_bad_steps_value_is_rejected_before_anything_runs(tmp_path):
    result = _cli('--local', '--steps', '0', '--output', str(tmp_path / 'o'))
    assert result.returncode == 2 and 'train_steps must be >= 1' in result.stderr
    assert not os.path.exists(tmp_path / 'o')


def test_default_data_uses_the_curated_schema_and_other_data_infers(tmp_path):
    args = runner.parse_args(['--local', '--output', str(tmp_path)])
    assert runner.build_config(args).schema_path == config.DIGITS_SCHEMA
    args = runner.parse_args(['--local', '--data', str(tmp_path), '--output', str(tmp_path)])
    assert runner.build_config(args).schema_path is None
    args = runner.parse_args(['--local', '--schema', 'infer'])
    assert runner.build_config(args).schema_path is None


def test_csv_source_defaults_to_the_wine_table_its_schema_and_the_mlp(tmp_path):
    cfg = runner.build_config(runner.parse_args(['--local', '--source', 'csv']))
    assert cfg.ingest.source == 'csv' and cfg.ingest.data_dir == config.DEFAULT_CSV_DATA
    assert cfg.schema_path == config.WINE_SCHEMA
    assert cfg.model_builder == 'models.mlp.build_model'
    args = runner.parse_args(['--local', '--source', 'csv', '--data', str(tmp_path)])
    assert runner.build_config(args).schema_path is None


def test_flags_reach_the_config(tmp_path):
    args = runner.parse_args(['--local', '--steps', '7', '--output', str(tmp_path),
                              '--beam-args', '--direct_num_workers=1 --foo=bar', '--no-cache'])
    cfg = runner.build_config(args)
    assert cfg.train.train_steps == 7 and cfg.train.warmup_steps < 7
    assert cfg.beam_args == ('--direct_num_workers=1', '--foo=bar')
    assert cfg.enable_cache is False and cfg.output_dir == str(tmp_path)


def test_config_and_batch_size_flags_reach_the_config(tmp_path):
    args = runner.parse_args(['--local', '--config', 'smoke', '--batch-size', '24',
                              '--data', str(tmp_path), '--output', str(tmp_path / 'o')])
    cfg = runner.build_config(args)
    smoke = config.smoke_config(str(tmp_path), str(tmp_path / 'o'))
    assert cfg.train.global_batch_size == 24
    assert cfg.train.train_steps == smoke.train.train_steps and cfg.beam_args == smoke.beam_args
    assert cfg.ingest.data_dir == str(tmp_path)
    default = runner.build_config(runner.parse_args(['--local', '--output', str(tmp_path)]))
    assert default.train == config.TrainConfig() and default.eval == config.EvalConfig()


@pytest.mark.parametrize('flags, message', [
    (['--config', 'large'], "argument --config: invalid choice: 'large'"),
    (['--batch-size', 'many'], "argument --batch-size: invalid int value: 'many'"),
    (['--batch-size', '0'], 'global_batch_size must be >= 1'),
])
def test_bad_config_or_batch_size_is_a_clear_error_without_traceback(tmp_path, flags, message):
    result = _cli('--local', *flags, '--output', str(tmp_path / 'o'))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert 'Traceback' not in result.stderr and not os.path.exists(tmp_path / 'o')


def test_local_is_required():
    with pytest.raises(SystemExit):
        runner.parse_args([])


def test_trainer_flags_reach_the_config(tmp_path):
    args = runner.parse_args(['--local', '--output', str(tmp_path), '--accumulation-steps', '4',
                              '--mixed-precision', 'mixed_float16'])
    cfg = runner.build_config(args)
    assert cfg.train.accumulation_steps == 4 and cfg.train.mixed_precision == 'mixed_float16'
    assert runner.build_config(runner.parse_args(['--local'])).train.mixed_precision == 'auto'


def test_bad_trainer_flags_are_clear_errors(tmp_path):
    result = _cli('--local', '--accumulation-steps', '0', '--output', str(tmp_path / 'o'))
    assert result.returncode == 2 and 'accumulation_steps must be >= 1' in result.stderr
    result = _cli('--local', '--mixed-precision', 'float16')
    assert result.returncode == 2 and 'invalid choice' in result.stderr
    assert 'Traceback' not in result.stderr
