"""Kubeflow on an S3-compatible store: `runner.py --kubeflow` with an s3:// or minio:// root gives
every task the store's endpoint and region (container env) and its Secret (the Kubernetes platform
spec's secretAsEnv, in the uploaded file, where KFP's API server reads it); a gs:// root gets
neither. No credential value reaches a written file. pipeline/kubeflow/compiler.py names the KFP
source of each rule; the fake API server and the launcher stand-in apply what they transcribe.

runner.main runs in this process (as in test_schedule.py): only the first compile pays
TFX's imports.
"""
import json
import os

import pytest
import yaml
from google.protobuf import json_format
from kfp import client as kfp_client
from kfp.kubernetes import kubernetes_executor_config_pb2 as k8s_pb
from kfp.pipeline_spec import pipeline_spec_pb2

import fake_kfp_rules
import fake_kfp_server
import runner
from pipeline.runs import logs

IMAGE = 'registry/image-pipeline:1'
# Made-up credentials in the compiling process's environment: none may reach a file.
SENTINELS = {'AWS_ACCESS_KEY_ID': 'SENTINEL-ACCESS-7f3a', 'AWS_SECRET_ACCESS_KEY':
             'SENTINEL-SECRET-9c1e', 'AWS_SESSION_TOKEN': 'SENTINEL-SESSION-2b4d'}


@pytest.fixture(autouse=True)
def quiet_and_contextless(monkeypatch, tmp_path):
    monkeypatch.setattr(logs, 'configure', lambda verbose: None)  # pytest keeps its logging
    monkeypatch.setattr(kfp_client.Client, '_LOCAL_KFP_CONTEXT', str(tmp_path / 'context.json'))
    for name, value in SENTINELS.items():
        monkeypatch.setenv(name, value)


def _compile(folder, root, *flags):
    """runner.py --kubeflow into folder; returns {file name: text} of everything written."""
    output = os.path.join(folder, 'pipeline.json')
    assert runner.main(['--kubeflow', '--image', IMAGE, '--pipeline-root', root,
                        '--output', output, *flags]) == 0
    files = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as handle:
            files[name] = handle.read()
    return files


@pytest.fixture(scope='module')
def compiled(tmp_path_factory):
    """The three roots: KFP 2.17's default store with the defaults, a MinIO with its own
    settings, and GCS."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(logs, 'configure', lambda verbose: None)
        for name, value in SENTINELS.items():
            patch.setenv(name, value)
        return {
            's3': _compile(str(tmp_path_factory.mktemp('s3')), 's3://mlpipeline/runs'),
            'minio': _compile(str(tmp_path_factory.mktemp('minio')),
                              'minio://mlpipeline/v2/artifacts', '--s3-secret', 'team-store',
                              '--s3-endpoint', 'https://minio.example.com:9000',
                              '--s3-region', 'eu-west-1'),
            'gs': _compile(str(tmp_path_factory.mktemp('gs')), 'gs://acme-ml/runs'),
        }


def _job(files):
    """The job file, strictly a PipelineJob: the platform spec is not in it (no such field)."""
    return json_format.Parse(files['pipeline.json'], pipeline_spec_pb2.PipelineJob(),
                             ignore_unknown_fields=False)


def _executors(spec: dict):
    return {label: e['container'] for label, e in spec['deploymentSpec']['executors'].items()
            if 'container' in e}


def _uploaded(files):
    """The upload file parsed as KFP's API server parses it: (spec, platform spec)."""
    return fake_kfp_rules.parse_template(files['pipeline.spec.yaml'].encode())


@pytest.mark.parametrize('root, secret, endpoint, region', [
    ('s3', 'mlpipeline-minio-artifact', 'http://seaweedfs.kubeflow:9000', 'us-east-1'),
    ('minio', 'team-store', 'https://minio.example.com:9000', 'eu-west-1'),
])
def test_every_task_gets_the_secret_and_the_endpoint(compiled, root, secret, endpoint, region):
    files = compiled[root]
    assert set(files) == {'pipeline.json', 'pipeline.spec.yaml', 'pipeline.log'}
    spec, platform = _uploaded(files)
    assert platform is not None, 'the API server would not see the platform spec'
    executors = _executors(spec)
    assert len(executors) == 10  # every task of the pipeline
    configs = platform['platforms']['kubernetes']['deploymentSpec']['executors']
    assert set(configs) == set(executors)
    for label, config in configs.items():
        parsed = json_format.ParseDict(config, k8s_pb.KubernetesExecutorConfig(),
                                       ignore_unknown_fields=False)
        [secret_env] = parsed.secret_as_env
        assert secret_env.secret_name_parameter.runtime_value.constant.string_value == secret
        assert secret_env.secret_name == secret  # the deprecated field, for older drivers
        assert [(k.secret_key, k.env_var) for k in secret_env.key_to_env] == [
            ('accesskey', 'AWS_ACCESS_KEY_ID'), ('secretkey', 'AWS_SECRET_ACCESS_KEY')]
    expected_env = [{'name': 'AWS_ENDPOINT_URL', 'value': endpoint},
                    {'name': 'AWS_REGION', 'value': region}]
    job = json.loads(files['pipeline.json'])
    _job(files)
    for executors_of in (executors, _executors(job['pipelineSpec'])):
        for label, container in executors_of.items():
            assert container['env'] == expected_env, label
    # The uploaded spec is the job's spec, with the root as its default.
    assert spec == dict(job['pipelineSpec'], defaultPipelineRoot=job['runtimeConfig'][
        'gcsOutputDirectory'])


def test_a_gs_root_gets_no_secret_and_no_endpoint(compiled):
    files = compiled['gs']
    assert set(files) == {'pipeline.json', 'pipeline.spec.json', 'pipeline.log'}
    spec, platform = fake_kfp_rules.parse_template(files['pipeline.spec.json'].encode())
    assert platform is None and 'AWS_' not in files['pipeline.json']
    assert all('env' not in c for c in _executors(spec).values())
    assert json.loads(files['pipeline.spec.json']) == spec  # one JSON document, as before


def test_no_credential_value_is_written(compiled):
    for root, files in compiled.items():
        for name, text in files.items():
            for value in SENTINELS.values():
                assert value not in text, (root, name)


def test_recompiling_to_another_root_leaves_one_upload_file(tmp_path):
    folder = str(tmp_path)
    assert 'pipeline.spec.json' not in _compile(folder, 's3://b/r')
    files = _compile(folder, 'gs://b/r')
    assert 'pipeline.spec.yaml' not in files and 'pipeline.spec.json' in files


def test_aws_s3_without_a_secret_or_an_endpoint(tmp_path):
    # IAM roles for service accounts on EKS: no Secret, AWS's own endpoint for the region.
    files = _compile(str(tmp_path), 's3://acme-ml/runs', '--s3-secret', '', '--s3-endpoint', '',
                     '--s3-region', 'eu-central-1')
    assert 'pipeline.spec.yaml' not in files
    spec, platform = fake_kfp_rules.parse_template(files['pipeline.spec.json'].encode())
    assert platform is None
    assert {json.dumps(c['env']) for c in _executors(spec).values()} == {
        json.dumps([{'name': 'AWS_REGION', 'value': 'eu-central-1'}])}


def test_scheduling_uploads_the_platform_spec_and_the_server_keeps_it(compiled, tmp_path):
    server, state = fake_kfp_server.start()
    try:
        output = str(tmp_path / 'pipeline.json')
        assert runner.main(['--kubeflow', '--image', IMAGE, '--pipeline-root',
                            's3://mlpipeline/runs', '--output', output, '--endpoint',
                            f'http://127.0.0.1:{server.server_port}', '--schedule', '@daily']) == 0
    finally:
        server.shutdown()
    [version] = state.versions
    # As the API shows a version with a platform spec (api_util.go
    # YamlStringToPipelineSpecStruct): both, side by side.
    stored = version['pipeline_spec']
    assert set(stored) == {'pipeline_spec', 'platform_spec'}
    assert stored['platform_spec'] == _uploaded(compiled['s3'])[1]
    assert len(state.recurring_runs) == 1


def _upload_text(spec, *platforms):
    return yaml.safe_dump_all([spec, *platforms]).encode()


def test_the_api_server_skips_a_platform_document_it_cannot_parse(compiled):
    spec, platform = _uploaded(compiled['s3'])
    # A typo in the document's top key: not a PlatformSpec, so KFP drops it without a word.
    assert fake_kfp_rules.parse_template(_upload_text(spec, {'platform': platform['platforms']}))[
        1] is None
    with pytest.raises(fake_kfp_rules.KfpError, match='multiple platform specs provided'):
        fake_kfp_rules.parse_template(_upload_text(spec, platform, platform))


def test_a_malformed_executor_config_is_refused_when_the_run_is_compiled(compiled):
    spec, platform = _uploaded(compiled['s3'])
    bad = json.loads(json.dumps(platform))
    config = bad['platforms']['kubernetes']['deploymentSpec']['executors']['Pusher_executor']
    config['secretAsEnv'][0]['keyToEnvs'] = config['secretAsEnv'][0].pop('keyToEnv')
    stored = fake_kfp_rules.stored_spec(*fake_kfp_rules.parse_template(_upload_text(spec, bad)))
    with pytest.raises(fake_kfp_rules.KfpError, match='compiling task "Pusher": error creating '
                       'executor for "Pusher": failed to unmarshal kubernetes config: proto: '
                       'unknown field "keyToEnvs"'):
        fake_kfp_rules.check_kubernetes_configs(stored)
    fake_kfp_rules.check_kubernetes_configs(fake_kfp_rules.stored_spec(spec, platform))


def test_tfjob_workers_get_the_store_env_and_secret_references(tmp_path):
    """A TFJob's pods are not KFP's: the platform spec never reaches them, so the TFJob spec the
    trainer task creates carries the same variables and Secret references
    (pipeline/kubeflow/jobs/tfjob.py)."""
    from launch import launchers
    from pipeline.kubeflow.jobs import tfjob

    def compiled(parameters):
        return tfjob.TFJobSpec.from_json(launchers.Choice.from_json(
            parameters['launcher']['runtimeValue']['constant']).spec)
    files = _compile(str(tmp_path), 's3://mlpipeline/runs', '--trainer-workers', '2')
    parameters = json.loads(files['pipeline.json'])['pipelineSpec']['root']['dag']['tasks'][
        'ImageTrainer']['inputs']['parameters']
    spec = compiled(parameters)
    assert spec.env == (('AWS_ENDPOINT_URL', 'http://seaweedfs.kubeflow:9000'),
                        ('AWS_REGION', 'us-east-1'))
    assert spec.secret_env == (
        ('AWS_ACCESS_KEY_ID', 'mlpipeline-minio-artifact', 'accesskey'),
        ('AWS_SECRET_ACCESS_KEY', 'mlpipeline-minio-artifact', 'secretkey'))
    [container] = tfjob.manifest('x', spec, [])['spec']['tfReplicaSpecs']['Worker'][
        'template']['spec']['containers']
    assert container['env'][2] == {'name': 'AWS_ACCESS_KEY_ID', 'valueFrom': {'secretKeyRef': {
        'name': 'mlpipeline-minio-artifact', 'key': 'accesskey'}}}
    assert not any(value in text for value in SENTINELS.values() for text in files.values())
    gcs = _compile(str(tmp_path / 'gcs'), 'gs://bucket/runs', '--trainer-workers', '2')
    parameters = json.loads(gcs['pipeline.json'])['pipelineSpec']['root']['dag']['tasks'][
        'ImageTrainer']['inputs']['parameters']
    spec = compiled(parameters)
    assert (spec.env, spec.secret_env) == ((), ())
    assert 'env' not in tfjob.manifest('x', spec, [])['spec']['tfReplicaSpecs']['Worker'][
        'template']['spec']['containers'][0]


def test_data_in_a_bucket_is_listed_at_compile_time_or_refused(s3, tmp_path, capsys):
    """The compile reads --data for span-<N>/ folders (the compiled input pattern): in a bucket
    it reaches (SeaweedFS, tests/support/seaweedfs.py) as on a disk, and a bucket it cannot reach
    is an error at once instead of a wrong pattern after minutes of retries."""
    from helpers import copy_digits
    copy_digits(str(tmp_path / 'span-1'), per_class=2)
    s3.server.upload_folder(str(tmp_path / 'span-1'), s3.name, 'landing/span-1')
    files = _compile(str(tmp_path / 'out'), s3.uri('runs'), '--data',
                     'minio://' + s3.uri('landing')[len('s3://'):])
    assert 'span-{SPAN}/*/*' in files['pipeline.json']
    output = str(tmp_path / 'refused' / 'pipeline.json')
    assert runner.main(['--kubeflow', '--image', IMAGE, '--pipeline-root', s3.uri('runs'),
                        '--output', output, '--data', 's3://no-such-bucket-here/x']) == 2
    assert ('--data s3://no-such-bucket-here/x: the compile lists it for span-<N>/ folders, but '
            'bucket no-such-bucket-here does not exist at') in capsys.readouterr().err
