"""The fake KFP API server refuses what KFP's API server refuses, as a user of kfp.Client meets it:
the status and the server's own message (fake_kfp_rules.py names the source of each rule).
The cron cases are robfig/cron v1.2.0's own (parser_test.go), plus what KFP users write."""
import json
import urllib.error
import urllib.request

import kfp
import kfp_server_api
import pytest
import yaml

import fake_kfp_rules
import fake_kfp_server

SPEC = {'pipelineInfo': {'name': 'hello'}, 'root': {'dag': {'tasks': {}}},
        'schemaVersion': '2.1.0', 'sdkVersion': 'kfp-2.13.0'}


@pytest.fixture(scope='module')
def api():
    server, state = fake_kfp_server.start()
    yield kfp.Client(host=f'http://127.0.0.1:{server.server_port}'), state
    server.shutdown()


def _file(tmp_path, document, name='spec.json'):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document) if name.endswith('.yaml') else json.dumps(document))
    return str(path)


def _refused(call, status):
    with pytest.raises(kfp_server_api.ApiException) as raised:
        call()
    assert raised.value.status == status
    body = json.loads(raised.value.body)
    # The upload handler's body, or the grpc-gateway's google.rpc.Status.
    return body.get('error_message') or body['details'][0]['message']


@pytest.mark.parametrize('document, message', [
    (dict(SPEC, schemaVersion='2.0.0'),
     'KFP only supports schema version 2.1.0, but the pipeline spec has version 2.0.0'),
    (dict(SPEC, pipelineInfo={'name': 'Image_Pipeline'}), "pipeline's name must contain only "
     "lowercase alphanumeric characters or '-' and must start with alphanumeric characters"),
    (dict(SPEC, pipelineInfo={'name': '__'}), "invalid v2 pipeline spec: name should consist "
     "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
     'alphanumeric character'),
    # The PipelineJob wrapper and unknown fields fail the strict parse: not a PipelineSpec.
    ({'displayName': 'hello', 'pipelineSpec': SPEC, 'runtimeConfig': {}},
     'unknown template format'),
    (dict(SPEC, extra=1), 'unknown template format'),
])
def test_an_upload_is_parsed_and_checked_as_kfp_does(api, tmp_path, document, message):
    client, _ = api
    assert _refused(lambda: client.upload_pipeline(_file(tmp_path, document), 'refused'),
                    400) == message


def test_yaml_and_json_uploads_are_accepted_and_duplicates_answer_409(api, tmp_path):
    client, state = api
    pipeline = client.upload_pipeline(_file(tmp_path, SPEC, 'p.yaml'), 'twice')
    assert pipeline.display_name == 'twice' and state.versions[-1]['pipeline_spec'] == SPEC
    assert _refused(lambda: client.upload_pipeline(_file(tmp_path, SPEC), 'twice'),
                    409) == 'Failed to create a pipeline and a pipeline version'
    client.upload_pipeline_version(_file(tmp_path, SPEC), 'v2', pipeline_id=pipeline.pipeline_id)
    assert _refused(lambda: client.upload_pipeline_version(
        _file(tmp_path, SPEC), 'v2', pipeline_id=pipeline.pipeline_id),
        409) == 'Failed to create a pipeline version'
    experiment = kfp_server_api.V2beta1Experiment(display_name='twice')
    client._experiment_api.experiment_service_create_experiment(body=experiment)
    assert _refused(lambda: client._experiment_api.experiment_service_create_experiment(
        body=experiment), 409) == ('Failed to create a new experiment. The name twice already '
                                   'exists. Please specify a new name')


@pytest.mark.parametrize('cron, concurrency, message', [
    ('0 0 3', 1, 'Schedule cron is not a supported format(https://godoc.org/github.com/robfig/'
     'cron). Error: Expected 5 to 6 fields, found 3: 0 0 3'),
    ('0 0 25 * * *', 1, 'Schedule cron is not a supported format(https://godoc.org/github.com/'
     'robfig/cron). Error: End of range (25) above maximum (23): 25'),
    ('0 0 3 * * *', 0, 'Max concurrency of a recurring run must be at least 1 and at most 10. '
     'Received 0'),
    ('0 0 3 * * *', 11, 'Max concurrency of a recurring run must be at least 1 and at most 10. '
     'Received 11'),
])
def test_a_recurring_run_is_checked_as_kfp_does(api, tmp_path, cron, concurrency, message):
    client, state = api
    pipeline = client.upload_pipeline(_file(tmp_path, SPEC), f'cron-{len(state.pipelines)}')
    experiment = client.create_experiment('cron')
    assert _refused(lambda: client.create_recurring_run(
        experiment.experiment_id, 'nightly', cron_expression=cron, max_concurrency=concurrency,
        pipeline_id=pipeline.pipeline_id, version_id=state.versions[-1]['pipeline_version_id']),
        400) == message


def test_unknown_ids_answer_404(api):
    client, _ = api
    assert _refused(lambda: client.delete_recurring_run('nope'), 404) == 'Job nope not found'
    assert _refused(lambda: client.get_recurring_run('nope'), 404) == 'Job nope not found'
    assert _refused(lambda: client.get_pipeline('nope'), 404) == 'Pipeline nope not found'
    assert _refused(lambda: client.get_experiment(experiment_id='nope'),
                    404) == 'Experiment nope not found'


def test_multi_user_mode_wants_an_identity_and_a_namespace():
    server, _ = fake_kfp_server.start(multi_user=True, allowed={('alice', 'team-ml')}, tokens={
        'for-kfp': 'alice', 'for-kubernetes': ('alice', ['https://kubernetes.default.svc'])})
    url = f'http://127.0.0.1:{server.server_port}/apis/v2beta1'

    def get(path, **headers):
        try:
            with urllib.request.urlopen(urllib.request.Request(url + path, headers=headers)) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)['details'][0]['message']
    try:
        assert get('/healthz')[1]['multi_user'] is True  # kfp.Client reads this
        assert get('/experiments?namespace=team-ml') == (401, 'Failed to check authorization. '
                                                         'User identity is empty in the request '
                                                         'header')
        assert get('/experiments?namespace=team-ml', **{'kubeflow-userid': 'alice'}) == (200, {})
        assert get('/experiments?namespace=team-ml', Authorization='Bearer for-kfp')[0] == 200
        # A TokenReview for another audience authenticates no one (ensureAudience).
        assert get('/experiments?namespace=team-ml', Authorization='Bearer for-kubernetes')[0] \
            == 401
        assert get('/experiments', **{'kubeflow-userid': 'alice'}) == (
            400, 'An experiment cannot have an empty namespace in multi-user mode')
        status, message = get('/experiments?namespace=other', **{'kubeflow-userid': 'alice'})
        assert status == 403 and message.startswith("User 'alice' is not authorized")
    finally:
        server.shutdown()


@pytest.mark.parametrize('spec', ['* 5 * * * *', '@every 5m', '@yearly', '@annually',
                                  '0 0 3 * *', '0 0 3 ? * mon-fri', '0 */15 * * * *',
                                  '@every 1h30m', '0 0 3 1,15 jan-jun *'])
def test_robfig_cron_v1_accepts(spec):
    fake_kfp_rules.parse_cron(spec)


@pytest.mark.parametrize('spec, message', [
    ('* 5 j * * *', 'Failed to parse int from'), ('@every Xm', 'Failed to parse duration'),
    ('@unrecognized', 'Unrecognized descriptor'), ('* * * *', 'Expected 5 to 6 fields'),
    ('', 'Empty spec string'), ('5--5 * * * * *', 'Too many hyphens'),
    ('*/-12 * * * * *', 'Negative number'), ('*//2 * * * * *', 'Too many slashes'),
    ('* * * 0 * *', 'below minimum'), ('* * * * * 7', 'above maximum'),
    ('* * 5-3 * * *', 'beyond end of range'), ('*/0 * * * * *', 'should be a positive number'),
    ('0 0 3 * * * *', 'Expected 5 to 6 fields, found 7'),
    ('@every 5', 'time: missing unit in duration "5"'),
])
def test_robfig_cron_v1_refuses(spec, message):
    with pytest.raises(ValueError, match=message.replace('*', r'\*')):
        fake_kfp_rules.parse_cron(spec)
