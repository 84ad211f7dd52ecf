"""Unit tests of the command line's Kubeflow side: --kubeflow's required settings, the pipeline
root the image can write, the compile and scheduling flags reaching KubeflowConfig, and
Kubeflow-only flags refused without --kubeflow."""
import os

import pytest

import runner

from helpers import runner_cli as _cli, runner_configs as _configs


@pytest.mark.parametrize('flags', [[], ['--local', '--kubeflow']])
def test_exactly_one_of_local_and_kubeflow(flags):
    with pytest.raises(SystemExit):
        runner.build_parser().parse_args(flags)


def test_kubeflow_needs_an_image_and_a_pipeline_root(tmp_path):
    result = _cli('--kubeflow', '--pipeline-root', 'gs://b/r', '--output', str(tmp_path / 'p.json'))
    assert result.returncode == 2 and 'needs --image and --pipeline-root' in result.stderr
    result = _cli('--kubeflow', '--image', 'img:1')
    assert result.returncode == 2 and 'needs --image and --pipeline-root' in result.stderr
    assert not os.path.exists(tmp_path / 'p.json')


def test_kubeflow_refuses_a_pipeline_root_the_image_cannot_write(tmp_path):
    # One line, exit 2, before anything is compiled: what works (gs://) and why the rest fails.
    result = _cli('--kubeflow', '--image', 'img:1', '--pipeline-root', str(tmp_path / 'root'),
                  '--output', str(tmp_path / 'p.json'))
    assert result.returncode == 2 and result.stderr.count('\n') == 1, result.stderr
    assert "--pipeline-root must be gs://BUCKET[/PATH], got '" in result.stderr
    assert 'gs://, s3://, minio:// or mem://' in result.stderr and 'no S3 file' in result.stderr
    assert not os.path.exists(tmp_path / 'p.json')
    # What open-source KFP would accept but the image cannot write is refused as well.
    for root in ('s3://b/r', 'minio://mlpipeline/v2/artifacts', 'mem://b', 'gs://', 'gs:///r'):
        with pytest.raises(ValueError, match='must be gs://BUCKET'):
            _configs('--kubeflow', '--image', 'i', '--pipeline-root', root)
    assert _configs('--kubeflow', '--image', 'i', '--pipeline-root', 'gs://b')[0].output_dir == \
        'gs://b'


def test_kubeflow_flags_reach_the_configs():
    cfg, kubeflow = _configs('--kubeflow', '--image', 'img:1', '--pipeline-root', 'gs://b/r',
                             '--data', 'gs://b/images', '--trainer-gpus', '1',
                             '--trainer-workers', '4', '--trainer-service-account',
                             'trainer-gcs', '--endpoint',
                             'http://kfp', '--schedule', '0 0 3 * * *', '--experiment', 'nightly')
    assert cfg.output_dir == 'gs://b/r' and cfg.serving_dir == 'gs://b/r/serving'
    assert cfg.ingest.data_dir == 'gs://b/images' and cfg.schema_path is None
    assert (kubeflow.image, kubeflow.output_file, kubeflow.trainer_gpus) == (
        'img:1', 'pipeline.json', 1)
    assert kubeflow.trainer_workers == 4 and cfg.train.workers == 1  # pods, not processes
    assert kubeflow.trainer_service_account == 'trainer-gcs'
    assert (kubeflow.schedule, kubeflow.experiment) == ('0 0 3 * * *', 'nightly')
    assert kubeflow.namespace is None and kubeflow.token_env is None  # single-user KFP


def test_namespace_and_credential_flags_reach_the_kubeflow_config():
    _, kubeflow = _configs('--kubeflow', '--image', 'img:1', '--pipeline-root', 'gs://b/r',
                           '--endpoint', 'http://kfp', '--schedule', '@daily',
                           '--namespace', 'team-ml', '--token-env', 'KFP_TOKEN')
    assert (kubeflow.namespace, kubeflow.token_env) == ('team-ml', 'KFP_TOKEN')
    _, kubeflow = _configs('--kubeflow', '--image', 'img:1', '--pipeline-root', 'gs://b/r',
                           '--endpoint', 'http://kfp', '--schedule', '@daily',
                           '--service-account-token')
    assert kubeflow.service_account_token is True and kubeflow.token_file is None
    with pytest.raises(ValueError, match='--token-file, --token-env and service_account_token '
                       'are alternatives'):  # named as the user wrote them
        _configs('--kubeflow', '--image', 'i', '--pipeline-root', 'gs://b/r', '--endpoint',
                 'http://kfp', '--schedule', '@daily', '--token-env', 'T', '--token-file', 'f')


def test_a_service_account_must_be_a_kubernetes_name():
    with pytest.raises(ValueError, match='--trainer-service-account must be a Kubernetes name'):
        _configs('--kubeflow', '--image', 'img:1', '--pipeline-root', 'gs://b/r',
                 '--trainer-service-account', 'Trainer_SA')


def test_five_field_cron_is_rejected():
    with pytest.raises(ValueError, match='six-field cron'):
        _configs('--kubeflow', '--image', 'i', '--pipeline-root', 'gs://b/r',
                 '--endpoint', 'http://kfp', '--schedule', '0 3 * * *')


@pytest.mark.parametrize('mode', [['--local'], ['--rollback', '2'], ['--score', 'new']])
@pytest.mark.parametrize('flag', [['--trainer-gpus', '1'], ['--schedule', '@daily'],
                                  ['--service-account-token']])
def test_a_kubeflow_flag_without_kubeflow_is_an_error_naming_it(tmp_path, mode, flag):
    result = _cli(*mode, *flag, '--output', str(tmp_path / 'o'))
    assert result.returncode == 2 and 'Traceback' not in result.stderr
    assert result.stderr.startswith(f'error: {flag[0]} is a Kubeflow setting'), result.stderr
    assert f'it does nothing with {mode[0]}' in result.stderr
    assert not os.path.exists(tmp_path / 'o')


def test_a_weights_file_of_the_checkout_is_read_from_the_image(tmp_path):
    import dataclasses
    from pipeline import config, kubeflow
    inside = os.path.join(config.REPO_ROOT, 'models', 'applications.py')  # of the checkout
    cfg = config.default_config(output_dir=str(tmp_path))
    cfg = dataclasses.replace(cfg, train=config.TrainConfig(model_weights=inside))
    assert kubeflow.for_image(cfg, '/pipeline').train.model_weights == (
        '/pipeline/models/applications.py')
    assert kubeflow.for_image(dataclasses.replace(cfg, train=config.TrainConfig()),
                              '/pipeline').train.model_weights is None
