"""End-to-end: `--trainer-workers 2` compiled, and the spec run task by task as open-source KFP
would (kfp_launcher.py), with the trainer's task talking to a local fake Kubernetes API server
(fake_k8s_server.py) whose fake operator runs the TFJob's two Worker pods as local processes.

What this adds to tests/launch/test_tfjob.py: the `tfjob` property as the compiled
spec carries it (a JSON string parameter through the KFP executor input), the task's own
process creating the job, and the chief's export flowing on to evaluation and the push.
"""
import json
import os

import pytest
from google.protobuf import json_format

from pipeline.definition import config as config_lib
from pipeline.definition.config_kubeflow import KubeflowConfig
from pipeline.kubeflow import compiler

import fake_k8s_server
from helpers import smoke_sample_config
import kfp_launcher

pytestmark = pytest.mark.e2e


def test_the_compiled_trainer_task_trains_in_a_two_pod_tfjob(tmp_path, monkeypatch):
    server, cluster = fake_k8s_server.start(str(tmp_path))
    monkeypatch.setenv('KUBECONFIG', fake_k8s_server.write_kubeconfig(
        str(tmp_path / 'kubeconfig'), server, 'pipelines'))
    try:
        cfg = smoke_sample_config(str(tmp_path))
        kf = KubeflowConfig(image='local', output_file=str(tmp_path / 'p.json'),
                                       image_workdir=config_lib.REPO_ROOT, trainer_workers=2)
        outputs = kfp_launcher.Launcher(workdir=str(tmp_path / 'pods')).run_job(
            kfp_launcher.load_job(compiler.compile_pipeline(cfg, kf)), 'run-1')
    finally:
        server.shutdown()
        cluster.shutdown()
    [created] = cluster.created
    worker = created['spec']['tfReplicaSpecs']['Worker']
    assert worker['replicas'] == 2
    assert worker['template']['spec']['containers'][0]['image'] == 'local'
    [model] = outputs['ImageTrainer'].artifacts['model'].artifacts
    recorded = json_format.MessageToDict(model.metadata)
    assert (recorded['num_workers'], recorded['num_replicas']) == (2, 2)
    assert recorded['input_sharding'] == 'FILE'  # smoke ingestion writes 2 train shards
    assert os.path.exists(os.path.join(model.uri, 'Format-Serving', 'saved_model.pb'))
    [metrics_run] = outputs['ImageTrainer'].artifacts['model_run'].artifacts
    with open(os.path.join(metrics_run.uri, 'tfjob', 'job.json')) as handle:
        assert json.load(handle)['options']['train_steps'] == cfg.train.train_steps
    # The chief's export was evaluated and pushed like any model.
    [pushed] = outputs['Pusher'].artifacts['pushed_model'].artifacts
    assert json_format.MessageToDict(pushed.metadata)['pushed'] == 1
    calls = [(r['method'], r['path'].rsplit('/', 1)[-1]) for r in cluster.requests]
    name = created['metadata']['name']
    assert calls.count(('POST', 'tfjobs')) == 1 and calls.count(('DELETE', name)) == 1
    assert calls.index(('POST', 'tfjobs')) < calls.index(('DELETE', name))
    assert cluster.jobs == {} and cluster.pods == {}  # deleted, and waited for
    assert cluster.errors == []
