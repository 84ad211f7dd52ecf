"""The scoring pipeline compiled for Kubeflow (`runner.py --kubeflow --score URI`): run task by
task as open-source KFP 2.17 runs it (tests/kfp_launcher.py, mode 'oss'), and uploaded and
scheduled on the stand-in KFP API server (tests/fake_kfp_server.py) under a name of its own.

The served model is a small brightness classifier (tests/saved_models.py); the folder holds
three images and a truncated one.
"""
import json
import os

import pytest
from google.protobuf import json_format
from kfp import client as kfp_client

import fake_kfp_server
import kfp_launcher
import runner
import saved_models
from pipeline.definition import config as config_lib
from pipeline.definition.config_kubeflow import KubeflowConfig
from pipeline.kubeflow import score
from pipeline.runs import logs

pytestmark = pytest.mark.e2e

CLASSES = ('dark', 'bright')


@pytest.fixture(scope='module')
def scored(tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_score')
    cfg = config_lib.smoke_config(str(base / 'new'), str(base / 'out'))
    model = saved_models.exported_model(base / 'model', CLASSES, [0.1, 0.9])
    saved_models.serve(model, cfg.serving_dir, 4)
    folder = base / 'new'
    folder.mkdir()
    for name, value in (('night.png', 0.05), ('noon.png', 0.95), ('dawn.png', 0.3)):
        (folder / name).write_bytes(saved_models.png(value))
    (folder / 'cut.png').write_bytes(saved_models.png(0.5)[:50])
    # The "image" is this checkout: its paths stay as they are.
    kf = KubeflowConfig(image='local', output_file=str(base / 'score.json'),
                                   image_workdir=config_lib.REPO_ROOT)
    job_file = score.compile_pipeline(cfg, kf, config_lib.ScoreConfig(str(folder)))
    launcher = kfp_launcher.Launcher(workdir=str(base / 'pods'))
    outputs = launcher.run_job(kfp_launcher.load_job(job_file), 'score-1')
    return job_file, outputs


def _artifact(outputs, task, key):
    (artifact,) = outputs[task].artifacts[key].artifacts
    return artifact


def test_the_compiled_spec_has_the_four_tasks_and_no_cache(scored):
    job_file, _ = scored
    with open(job_file) as handle:
        spec = json.load(handle)['pipelineSpec']
    assert spec['pipelineInfo']['name'] == 'smoke-score'
    tasks = spec['root']['dag']['tasks']
    assert sorted(tasks) == ['BulkInferrer', 'ImageExampleGen', 'ScoreWriter', 'ScoringModel']
    assert all(not task.get('cachingOptions', {}).get('enableCache') for task in tasks.values())


def test_open_source_kfp_scores_with_the_served_version(scored):
    _, outputs = scored
    metadata = json_format.MessageToDict(_artifact(outputs, 'ScoreWriter', 'predictions').metadata)
    assert (metadata['num_inputs'], metadata['num_scored'], metadata['num_quarantined'],
            metadata['model_version']) == (4, 3, 1, 4)
    uri = _artifact(outputs, 'ScoreWriter', 'predictions').uri
    with open(os.path.join(uri, 'predictions.jsonl')) as handle:
        rows = [json.loads(line) for line in handle]
    assert sorted((r['source'], r['class'], r['model_version']) for r in rows) == [
        ('dawn.png', 'dark', 4), ('night.png', 'dark', 4), ('noon.png', 'bright', 4)]
    with open(os.path.join(uri, 'quarantine.jsonl')) as handle:
        assert [json.loads(line)['reason'] for line in handle] == ['corrupt_image']
    with open(os.path.join(uri, 'summary.json')) as handle:
        assert json.load(handle)['inputs'] == 4


def test_runner_uploads_and_schedules_it_beside_the_training_pipeline(tmp_path, monkeypatch):
    monkeypatch.setattr(logs, 'configure', lambda verbose: None)  # pytest keeps its logging
    monkeypatch.setattr(kfp_client.Client, '_LOCAL_KFP_CONTEXT', str(tmp_path / 'ctx.json'))
    server, state = fake_kfp_server.start()
    try:
        assert runner.main([
            '--kubeflow', '--score', 'gs://acme-ml/incoming', '--version', '3',
            '--image', 'registry/image-pipeline:1', '--pipeline-root', 'gs://acme-ml/root',
            '--output', str(tmp_path / 'score.json'),
            '--endpoint', f'http://127.0.0.1:{server.server_port}',
            '--schedule', '0 0 4 * * *']) == 0
    finally:
        server.shutdown()
    assert [p['display_name'] for p in state.pipelines] == ['image-pipeline-score']
    spec = state.versions[0]['pipeline_spec']
    assert 'ScoreWriter' in spec['root']['dag']['tasks']
    [run] = state.recurring_runs
    assert run['display_name'] == 'image-pipeline-score'
