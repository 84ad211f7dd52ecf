"""Scheduling: `runner.py --kubeflow --endpoint URL --schedule CRON` against a local KFP API.

The server (fake_kfp_server.py) implements the v2beta1 REST endpoints kfp.Client calls and
records the requests; the assertions are on what reached it.
"""
import os
import subprocess
import sys

import pytest

import fake_kfp_server

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRON = '0 0 3 * * *'
ROOT = 'gs://acme-ml/image-pipeline'


@pytest.fixture
def kfp_api():
    server, state = fake_kfp_server.start()
    yield f'http://127.0.0.1:{server.server_port}', state
    server.shutdown()


def _schedule(endpoint, output, *extra):
    result = subprocess.run(
        [sys.executable, 'runner.py', '--kubeflow', '--image', 'registry/image-pipeline:1',
         '--pipeline-root', ROOT, '--output', output, '--endpoint', endpoint, '--schedule', CRON,
         '--experiment', 'nightly', *extra],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, HOME=os.path.dirname(output)))  # no kfp context of the user's
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _posts(state, path):
    return [r for r in state.requests if r['method'] == 'POST' and r['path'] == path]


def test_first_call_uploads_and_creates_one_recurring_run(kfp_api, tmp_path):
    endpoint, state = kfp_api
    _schedule(endpoint, str(tmp_path / 'pipeline.json'))
    assert [p['display_name'] for p in state.pipelines] == ['image-pipeline']
    # The upload is the bare PipelineSpec (what the API server parses), rooted at our root.
    spec = state.versions[0]['pipeline_spec']
    assert spec['pipelineInfo']['name'] == 'image-pipeline'
    assert spec['defaultPipelineRoot'] == ROOT + '/pipeline_root'
    assert 'ImageTrainer' in spec['root']['dag']['tasks']
    [run] = state.recurring_runs
    assert run['trigger']['cron_schedule']['cron'] == CRON
    assert run['max_concurrency'] == '1' or run['max_concurrency'] == 1
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
    assert trainer['inputs']['parameters']['train_steps']['runtimeValue']['constant'] == 800
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
