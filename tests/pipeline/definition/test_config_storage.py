"""Where a local run writes (pipeline/definition/config.py pipeline_root_uri, serving_uri):
--pipeline-root and --serving-dir, or their TOML keys, put TFX's artifacts and the pushed versions
in a folder or a bucket; ML Metadata stays under --output; --kubeflow refuses both (its run root
decides)."""
import pytest

from helpers import runner_configs


def test_local_roots_from_flags(tmp_path):
    cfg, _ = runner_configs('--local', '--output', str(tmp_path / 'out'), '--pipeline-root',
                            'minio://ml/flowers/root', '--serving-dir', 's3://ml/flowers/serving')
    assert cfg.pipeline_root == 's3://ml/flowers/root'   # minio:// is the same objects
    assert cfg.serving_dir == 's3://ml/flowers/serving'
    assert cfg.metadata_path == str(tmp_path / 'out' / 'metadata.sqlite')
    default, _ = runner_configs('--local', '--output', str(tmp_path / 'out'))
    assert default.pipeline_root == str(tmp_path / 'out' / 'pipeline_root')
    assert default.serving_dir == str(tmp_path / 'out' / 'serving')
    folder, _ = runner_configs('--local', '--serving-dir', str(tmp_path / 'served'))
    assert folder.serving_dir == str(tmp_path / 'served')


def test_local_roots_from_the_config_file(tmp_path):
    (tmp_path / 'run.toml').write_text('pipeline_root_uri = "gs://ml/root"\n'
                                       'serving_uri = "serving-here"\n')
    cfg, _ = runner_configs('--local', '--config-file', str(tmp_path / 'run.toml'))
    assert cfg.pipeline_root == 'gs://ml/root'
    assert cfg.serving_dir == str(tmp_path / 'serving-here')   # relative to the file


@pytest.mark.parametrize('flags, message', [
    (['--local', '--pipeline-root', 'http://ml/root'],
     '--pipeline-root must be a folder or a gs://, s3://, minio:// URI'),
    (['--local', '--serving-dir', 'hdfs://ml/serving'], '--serving-dir must be a folder or a'),
    (['--kubeflow', '--image', 'i', '--pipeline-root', 's3://ml/run', '--serving-dir',
      's3://ml/other'], '--serving-dir (serving_uri) and pipeline_root_uri are for --local'),
])
def test_bad_roots_are_clear_errors(flags, message):
    with pytest.raises(ValueError, match=message.replace('(', r'\(').replace(')', r'\)')):
        runner_configs(*flags)


def test_on_kubeflow_pipeline_root_is_the_run_root():
    cfg, kubeflow = runner_configs('--kubeflow', '--image', 'i', '--pipeline-root', 's3://ml/run')
    assert (cfg.pipeline_root, cfg.serving_dir) == ('s3://ml/run/pipeline_root',
                                                    's3://ml/run/serving')
    assert (cfg.pipeline_root_uri, cfg.serving_uri) == ('', '')
