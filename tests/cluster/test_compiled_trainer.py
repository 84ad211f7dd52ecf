"""End-to-end: `runner.py --kubeflow --trainer-workers 2` compiled as a user compiles it, its
tasks run as open-source KFP's driver and launcher run them (our transcription,
tests/support/kfp_launcher.py), and the trainer's task creates its TrainJob on the real cluster:
Trainer v2 and JobSet start two pods of the project's image, which train on the run's bucket,
and the chief's export flows on to the evaluation and the push.

What this adds to test_trainjob.py: the `launcher` property as the compiled spec carries it (a JSON
string parameter through the KFP executor input), the store's endpoint and Secret as the compile
hands them to the pods, the task's own process creating the job."""
import os
import subprocess
import sys

import pytest
from google.protobuf import json_format

from helpers import copy_digits
import kfp_launcher
import real_cluster
import seaweedfs as seaweedfs_lib

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
SECRET = 'mlpipeline-minio-artifact'   # the compile's default store Secret


def test_the_compiled_trainer_task_trains_in_a_two_pod_trainjob(namespace, pod_bucket, image,
                                                                tmp_path):
    namespace.secret(SECRET, {'accesskey': pod_bucket.access, 'secretkey': pod_bucket.secret})
    folder = copy_digits(str(tmp_path / 'landing' / 'span-1'), per_class=30)
    pod_bucket.server.upload_folder(folder, pod_bucket.name, 'landing/span-1')
    output = tmp_path / 'pipeline.json'
    done = subprocess.run(
        [sys.executable, 'runner.py', '--kubeflow', '--config', 'smoke', '--image', image,
         '--pipeline-root', pod_bucket.uri('kfp'), '--data', pod_bucket.uri('landing'),
         '--s3-endpoint', f'http://{pod_bucket.endpoint}', '--trainer-workers', '2',
         '--trainer-cpu', '0.5', '--trainer-memory', '2',   # the node has 2 cores
         '--output', str(output)],
        cwd=real_cluster.WHERE.root, env=dict(os.environ), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    job, platform = kfp_launcher.load_upload(str(tmp_path / 'pipeline.spec.yaml'),
                                             pod_bucket.uri('kfp/pipeline_root'))
    secrets = {SECRET: {'accesskey': seaweedfs_lib.ACCESS_KEY,
                        'secretkey': seaweedfs_lib.SECRET_KEY}}
    launcher = kfp_launcher.Launcher(workdir=str(tmp_path / 'pods'), secrets=secrets,
                                     namespace=namespace.name)
    outputs = launcher.run_job(job, 'run-1', platform)
    [model] = outputs['ImageTrainer'].artifacts['model'].artifacts
    recorded = json_format.MessageToDict(model.metadata)
    assert recorded['training_api'] == 'TrainJob'
    assert (recorded['num_workers'], recorded['num_replicas']) == (2, 2)
    assert recorded['input_sharding'] == 'FILE'  # smoke ingestion writes 2 train shards
    assert pod_bucket.exists(os.path.join(model.uri, 'Format-Serving', 'saved_model.pb'))
    # The chief's export was evaluated and pushed like any model.
    [pushed] = outputs['Pusher'].artifacts['pushed_model'].artifacts
    assert json_format.MessageToDict(pushed.metadata)['pushed'] == 1
    # The TrainJob and its pods are gone: the task deletes what it made.
    assert real_cluster.get('trainjobs,jobsets,pods', '-n', namespace.name)['items'] == []
