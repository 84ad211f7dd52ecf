"""Scheduling: `runner.py --kubeflow --endpoint URL --schedule CRON` against a local KFP API.

The server (fake_kfp_server.py) transcribes KFP's API server, in single-user mode and in the
multi-user mode of a full Kubeflow install, and records the requests; the assertions are on what
reached it. runner.main runs in this process: only the first call pays TFX's imports.
"""
import pytest
from kfp import client as kfp_client

import fake_kfp_server
import runner
from pipeline.runs import logs

CRON = '0 0 3 * * *'
ROOT = 'gs://acme-ml/image-pipeline'
USER, NAMESPACE, TOKEN = 'alice@acme.com', 'team-ml', 'token-of-alice'


@pytest.fixture(autouse=True)
def quiet_and_contextless(monkeypatch, tmp_path):
    monkeypatch.setattr(logs, 'configure', lambda verbose: None)  # pytest keeps its logging
    # No kfp context of the user's (~/.config/kfp/context.json holds a namespace).
    monkeypatch.setattr(kfp_client.Client, '_LOCAL_KFP_CONTEXT', str(tmp_path / 'context.json'))


def _api(**settings):
    server, state = fake_kfp_server.start(**settings)
    return server, f'http://127.0.0.1:{server.server_port}', state


@pytest.fixture
def kfp_api():
    server, endpoint, state = _api()
    yield endpoint, state
    server.shutdown()


@pytest.fixture
def multi_user_api():
    """A full Kubeflow install: alice may use team-ml; her token passes the TokenReview."""
    server, endpoint, state = _api(multi_user=True, tokens={TOKEN: USER},
                                   allowed={(USER, NAMESPACE)})
    yield endpoint, state
    server.shutdown()


def _schedule(endpoint, output, *extra, code=0, capsys=None):
    status = runner.main(['--kubeflow', '--image', 'registry/image-pipeline:1',
                          '--pipeline-root', ROOT, '--output', output, '--endpoint', endpoint,
                          '--schedule', CRON, '--experiment', 'nightly', *extra])
    assert status == code, capsys and capsys.readouterr().err
    return status


def _posts(state, path):
    return [r for r in state.requests if r['method'] == 'POST' and r['path'] == path]


def test_first_call_uploads_and_creates_one_recurring_run(kfp_api, tmp_path):
    endpoint, state = kfp_api
    _schedule(endpoint, str(tmp_path / 'pipeline.json'))
    assert [p['display_name'] for p in state.pipelines] == ['image-pipeline']
    # The upload is the bare PipelineSpec (what the API server parses), rooted at our root.
    spec = state.versions[0]['pipeline_spec']
    assert spec['pipelineInfo']['name'] == 'image-pipeline' and spec['schemaVersion'] == '2.1.0'
    assert spec['defaultPipelineRoot'] == ROOT + '/pipeline_root'
    assert 'ImageTrainer' in spec['root']['dag']['tasks']
    [run] = state.recurring_runs
    assert run['trigger']['cron_schedule']['cron'] == CRON
    assert run['max_concurrency'] == 1
    assert run['mode'] == 'ENABLE' and run['no_catchup'] is True
    assert run['pipeline_version_reference'] == {
        'pipeline_id': state.pipelines[0]['pipeline_id'],
        'pipeline_version_id': state.versions[0]['pipeline_version_id']}
    assert run['runtime_config']['pipeline_root'] == ROOT + '/pipeline_root'
    assert run['experiment_id'] == state.experiments[0]['experiment_id']
    assert [e['display_name'] for e in state.experiments] == ['nightly']


def test_second_call_with_a_changed_pipeline_replaces_the_schedule(kfp_api, tmp_path):
    endpoint, state = kfp_api
    _schedule(endpoint, str(tmp_path / 'pipeline.json'))
    first_run = state.recurring_runs[0]['recurring_run_id']
    _schedule(endpoint, str(tmp_path / 'pipeline.json'), '--steps', '800')
    assert len(state.pipelines) == 1 and len(state.experiments) == 1
    assert len(state.versions) == 2            # a new version of the same pipeline
    new_version = state.versions[1]
    assert new_version['pipeline_id'] == state.pipelines[0]['pipeline_id']
    trainer = new_version['pipeline_spec']['root']['dag']['tasks']['ImageTrainer']
    assert trainer['inputs']['parameters']['train_steps'] == {'runtimeValue': {'constant': 800}}
    [run] = state.recurring_runs                # updated, not duplicated
    assert run['recurring_run_id'] != first_run
    assert run['pipeline_version_reference']['pipeline_version_id'] == \
        new_version['pipeline_version_id']
    assert run['trigger']['cron_schedule']['cron'] == CRON
    deletes = [r['path'] for r in state.requests if r['method'] == 'DELETE']
    assert deletes == [f'/recurringruns/{first_run}']
    assert len(_posts(state, '/recurringruns')) == 2


def test_unchanged_pipeline_reuses_its_version(kfp_api, tmp_path):
    endpoint, state = kfp_api
    for _ in range(3):
        _schedule(endpoint, str(tmp_path / 'pipeline.json'))
    # First call: the upload's own version; second: one named by the spec's hash; third reuses it.
    assert len(state.versions) == 2
    assert len(state.recurring_runs) == 1
    assert state.recurring_runs[0]['pipeline_version_reference']['pipeline_version_id'] == \
        state.versions[1]['pipeline_version_id']


@pytest.mark.parametrize('credentials', ['token-env', 'token-file', 'service-account-token'])
def test_multi_user_with_a_namespace_and_a_token(multi_user_api, tmp_path, monkeypatch,
                                                 capsys, credentials):
    endpoint, state = multi_user_api
    token_file = tmp_path / 'token'
    token_file.write_text(TOKEN + '\n')
    monkeypatch.setenv('KFP_TOKEN', TOKEN)
    # kfp's default path for a pod's projected token, moved here as kfp.client allows.
    monkeypatch.setenv(kfp_client.KF_PIPELINES_SA_TOKEN_ENV, str(token_file))
    flags = {'token-env': ['--token-env', 'KFP_TOKEN'],
             'token-file': ['--token-file', str(token_file)],
             'service-account-token': ['--service-account-token']}[credentials]
    for _ in range(2):  # the second call finds the namespace's own pipeline again
        _schedule(endpoint, str(tmp_path / 'pipeline.json'), '--namespace', NAMESPACE, *flags,
                  capsys=capsys)
    assert [(p['name'], p['namespace']) for p in state.pipelines] == [
        ('image-pipeline', NAMESPACE)]
    assert [e['namespace'] for e in state.experiments] == [NAMESPACE]
    [run] = state.recurring_runs
    assert run['namespace'] == NAMESPACE
    calls = [r for r in state.requests if r['path'] != '/healthz']
    assert calls and all(r['headers'].get('authorization') == f'Bearer {TOKEN}' for r in calls)


def test_multi_user_without_a_token_fails_with_kfps_message(multi_user_api, tmp_path, capsys):
    endpoint, state = multi_user_api
    _schedule(endpoint, str(tmp_path / 'pipeline.json'), '--namespace', NAMESPACE, code=1)
    error = capsys.readouterr().err
    assert 'answered 401 Unauthorized: Failed to check authorization. User identity is empty ' \
           'in the request header' in error
    assert not state.pipelines and not state.recurring_runs


def test_multi_user_without_a_namespace_uploads_nothing(multi_user_api, tmp_path, capsys,
                                                        monkeypatch):
    endpoint, state = multi_user_api
    monkeypatch.setenv('KFP_TOKEN', TOKEN)
    _schedule(endpoint, str(tmp_path / 'pipeline.json'), '--token-env', 'KFP_TOKEN', code=1)
    assert 'runs in multi-user mode' in capsys.readouterr().err
    assert not state.pipelines  # not even as a shared pipeline


def test_multi_user_refuses_a_namespace_the_user_may_not_use(multi_user_api, tmp_path,
                                                             monkeypatch, capsys):
    endpoint, state = multi_user_api
    monkeypatch.setenv('KFP_TOKEN', TOKEN)
    _schedule(endpoint, str(tmp_path / 'pipeline.json'), '--namespace', 'team-other',
              '--token-env', 'KFP_TOKEN', code=1)
    assert f"403 Forbidden: User '{USER}' is not authorized" in capsys.readouterr().err


def test_a_missing_token_stops_before_the_compile(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv('KFP_TOKEN', raising=False)
    _schedule('http://127.0.0.1:9', str(tmp_path / 'pipeline.json'), '--namespace', NAMESPACE,
              '--token-env', 'KFP_TOKEN', code=2)
    assert 'KFP_TOKEN holds no token' in capsys.readouterr().err
    assert not (tmp_path / 'pipeline.json').exists()


def test_an_unreachable_server_is_a_one_line_error(tmp_path, capsys):
    _schedule('http://127.0.0.1:9', str(tmp_path / 'pipeline.json'), code=1)
    assert 'cannot reach the KFP API at http://127.0.0.1:9' in capsys.readouterr().err
