"""End-to-end: the compiled Kubeflow spec, task by task, as Vertex AI runs it
(tests/support/kfp_launcher.py, mode 'vertex'): the preCacheCheck hook before each task that has
one, typed inputs with their metadata as the producer wrote it, outputs and the executor output file
in the bucket.

One run (open-source KFP's three runs are test_kubeflow_open_source_retrain.py): the hook
fingerprints the input, and the same entry point that copes with KFP's untyped inputs trains,
evaluates without a baseline and pushes from typed ones.
"""
import os

import pytest
from google.protobuf import json_format

from pipeline.definition import config as config_lib
from pipeline.definition.config_kubeflow import KubeflowConfig
from pipeline.kubeflow import compiler

from helpers import smoke_sample_config
import kfp_launcher

pytestmark = pytest.mark.e2e


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_vertex')
    cfg = smoke_sample_config(str(base))
    kf = KubeflowConfig(image='local', output_file=str(base / 'pipeline.json'),
                                   image_workdir=config_lib.REPO_ROOT)
    job = kfp_launcher.load_job(compiler.compile_pipeline(cfg, kf))
    launcher = kfp_launcher.Launcher(mode='vertex', workdir=str(base / 'pods'))
    return cfg, launcher, launcher.run_job(job, 'job-1')


def test_the_hook_fingerprints_the_input_before_ingestion(run):
    _, launcher, outputs = run
    with open(launcher.tasks[('job-1', 'ImageExampleGen')].pod.log_file) as log:
        assert 'Calculated fingerprint' in log.read()  # the preCacheCheck hook ran
    [examples] = outputs['ImageExampleGen'].artifacts['examples'].artifacts
    assert json_format.MessageToDict(examples.metadata)['split_names'] == '["train", "eval"]'


def test_inputs_arrive_typed_and_the_first_run_pushes(run):
    cfg, launcher, outputs = run
    [model] = launcher.tasks[('job-1', 'Evaluator')].executor_input.inputs.artifacts[
        'model'].artifacts
    assert model.type.instance_schema.startswith('title: tfx.Model')
    [pushed] = outputs['Pusher'].artifacts['pushed_model'].artifacts
    pushed = json_format.MessageToDict(pushed.metadata)
    assert pushed['pushed'] == 1 and pushed['pushed_destination'].startswith(cfg.serving_dir)
    assert os.path.exists(os.path.join(pushed['pushed_destination'], 'saved_model.pb'))
