"""Unit tests of the command line's Kubeflow side: --kubeflow's required settings, the pipeline
roots the tasks can write and the object store's settings, the compile and scheduling flags
reaching KubeflowConfig, and Kubeflow-only flags refused without --kubeflow."""
import os
import re

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


def test_kubeflow_refuses_a_pipeline_root_the_tasks_cannot_write(tmp_path):
    # One line, exit 2, before anything is compiled: what works and why the rest fails.
    result = _cli('--kubeflow', '--image', 'img:1', '--pipeline-root', str(tmp_path / 'root'),
                  '--output', str(tmp_path / 'p.json'))
    assert result.returncode == 2 and result.stderr.count('\n') == 1, result.stderr
    assert ('--pipeline-root must be gs://BUCKET[/PATH], s3://BUCKET[/PATH] or '
            "minio://BUCKET[/PATH], got '") in result.stderr
    assert 'a local path is not on the cluster' in result.stderr
    assert not os.path.exists(tmp_path / 'p.json')
    # KFP's own mem://, other schemes, no bucket, and KFP's old query form are refused too.
    for root in ('mem://b', 'http://store/b', 'gs://', 'gs:///r', 's3://', 'minio:///x',
                 's3://b/r?endpoint=minio:9000&region=us-east-1'):
        with pytest.raises(ValueError, match='must be gs://BUCKET'):
            _configs('--kubeflow', '--image', 'i', '--pipeline-root', root)
    for root in ('gs://b', 's3://b/r', 'minio://mlpipeline/v2/artifacts'):
        assert _configs('--kubeflow', '--image', 'i', '--pipeline-root', root)[0].output_dir == \
            root


def test_object_store_flags_and_keys_reach_the_kubeflow_config(tmp_path):
    _, kubeflow = _configs('--kubeflow', '--image', 'i', '--pipeline-root', 's3://b/r')
    assert (kubeflow.s3_secret, kubeflow.s3_endpoint, kubeflow.s3_region) == (
        'mlpipeline-minio-artifact', 'http://seaweedfs.kubeflow:9000', 'us-east-1')
    toml = tmp_path / 'cluster.toml'
    toml.write_text('[kubeflow]\nimage = "i"\npipeline_root = "minio://m/a"\n'
                    's3_secret = "team-store"\ns3_endpoint = "https://minio.example.com"\n'
                    's3_region = "eu-west-1"\n')
    _, kubeflow = _configs('--kubeflow', '--config-file', str(toml), '--s3-region', 'eu-north-1')
    assert (kubeflow.s3_secret, kubeflow.s3_endpoint, kubeflow.s3_region) == (
        'team-store', 'https://minio.example.com', 'eu-north-1')  # the flag wins
    _, kubeflow = _configs('--kubeflow', '--image', 'i', '--pipeline-root', 's3://b/r',
                           '--s3-secret', '', '--s3-endpoint', '')  # AWS S3 with IRSA
    assert (kubeflow.s3_secret, kubeflow.s3_endpoint) == ('', '')


@pytest.mark.parametrize('flag, value, message', [
    ('--s3-secret', 'Team_Store', '--s3-secret must name a Kubernetes Secret'),
    ('--s3-endpoint', 'seaweedfs.kubeflow:9000', '--s3-endpoint must be http://HOST[:PORT]'),
    ('--s3-region', 'EU West', '--s3-region must be a region name'),
])
def test_bad_object_store_settings_are_refused_naming_the_flag(flag, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _configs('--kubeflow', '--image', 'i', '--pipeline-root', 's3://b/r', flag, value)


def test_an_endpoint_with_credentials_is_refused_without_repeating_them():
    with pytest.raises(ValueError) as raised:
        _configs('--kubeflow', '--image', 'i', '--pipeline-root', 's3://b/r',
                 '--s3-endpoint', 'http://admin:hunter2@minio:9000')
    assert 'user info' in str(raised.value) and 'hunter2' not in str(raised.value)


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
    from pipeline.definition import config
    from pipeline.kubeflow import compiler
    from training.params import TrainParams
    inside = os.path.join(config.REPO_ROOT, 'models', 'applications.py')  # of the checkout
    cfg = config.default_config(output_dir=str(tmp_path))
    cfg = dataclasses.replace(cfg, train=TrainParams(model_weights=inside))
    assert compiler.for_image(cfg, '/pipeline').train.model_weights == (
        '/pipeline/models/applications.py')
    assert compiler.for_image(dataclasses.replace(cfg, train=TrainParams()),
                              '/pipeline').train.model_weights is None
