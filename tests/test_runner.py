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
    for flag in ('--local', '--data', '--output', '--steps', '--schema', '--beam-args',
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


def test_flags_reach_the_config(tmp_path):
    args = runner.parse_args(['--local', '--steps', '7', '--output', str(tmp_path),
                              '--beam-args', '--direct_num_workers=1 --foo=bar', '--no-cache'])
    cfg = runner.build_config(args)
    assert cfg.train.train_steps == 7 and cfg.train.warmup_steps < 7
    assert cfg.beam_args == ('--direct_num_workers=1', '--foo=bar')
    assert cfg.enable_cache is False and cfg.output_dir == str(tmp_path)


def test_local_is_required():
    with pytest.raises(SystemExit):
        runner.parse_args([])


def test_local_and_kubeflow_are_exclusive():
    with pytest.raises(SystemExit):
        runner.parse_args(['--local', '--kubeflow'])


def test_kubeflow_needs_an_image_and_a_pipeline_root(tmp_path):
    result = _cli('--kubeflow', '--pipeline-root', 'gs://b/r', '--output', str(tmp_path / 'p.json'))
    assert result.returncode == 2 and 'image must be set' in result.stderr
    result = _cli('--kubeflow', '--image', 'img:1')
    assert result.returncode == 2 and 'needs --image and --pipeline-root' in result.stderr
    assert not os.path.exists(tmp_path / 'p.json')


def test_kubeflow_flags_reach_the_configs():
    args = runner.parse_args(['--kubeflow', '--image', 'img:1', '--pipeline-root', 'gs://b/r',
                              '--data', 'gs://b/images', '--trainer-gpus', '1', '--endpoint',
                              'http://kfp', '--schedule', '0 0 3 * * *', '--experiment', 'nightly'])
    cfg, kubeflow = runner.build_config(args), runner.build_kubeflow_config(args)
    assert cfg.output_dir == 'gs://b/r' and cfg.serving_dir == 'gs://b/r/serving'
    assert cfg.ingest.data_dir == 'gs://b/images' and cfg.schema_path is None
    assert (kubeflow.image, kubeflow.output_file, kubeflow.trainer_gpus) == ('img:1', 'pipeline.json', 1)
    assert (kubeflow.schedule, kubeflow.experiment) == ('0 0 3 * * *', 'nightly')


def test_five_field_cron_is_rejected():
    args = runner.parse_args(['--kubeflow', '--image', 'i', '--pipeline-root', 'gs://b/r',
                              '--endpoint', 'http://kfp', '--schedule', '0 3 * * *'])
    with pytest.raises(ValueError, match='six-field cron'):
        runner.build_kubeflow_config(args)
