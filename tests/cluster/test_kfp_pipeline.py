"""The pipeline as Kubeflow Pipelines runs it, on the real cluster: the upload `runner.py
--kubeflow` writes, compiled to the Workflow KFP's API server creates for a run, run by the real
Argo workflow-controller with Argo's own executor, each task's driver and launcher in pods, each
task in a pod of the project's image (tests/support/real_kfp.py says what stays a
transcription). Three scheduled runs on SeaweedFS with an s3:// root, with KFP's cache as it is
(the schema imported once, a cache hit after): span 1 has landed before the first, which pushes
version 1; span 2 lands and the second trains on spans 1-2 and pushes version 2; nothing lands
before the third, which trains nothing and pushes nothing. Each task's pod gets only what the
compiled spec gives it: the endpoint and region in its env, the keys from the namespace's
Secret `mlpipeline-minio-artifact`."""
import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf
from ml_metadata.metadata_store import metadata_store
from ml_metadata.proto import metadata_store_pb2

from helpers import copy_digits
from pipeline.definition import config as config_lib

import real_cluster
import real_kfp
import seaweedfs as seaweedfs_lib

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SECRET = 'mlpipeline-minio-artifact'
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _upload_span(server, bucket, base, span, per_class):
    folder = copy_digits(str(base / 'landing' / f'span-{span}'), per_class=per_class)
    server.upload_folder(folder, bucket, f'landing/span-{span}')


def _compile(server, endpoint, bucket, base, image):
    """runner.py --kubeflow as a user runs it, for the project's image, with the store's
    endpoint as the pods reach it (and this process: it lists the landing bucket)."""
    output = base / 'pipeline.json'
    done = subprocess.run(
        [sys.executable, 'runner.py', '--kubeflow', '--config', 'smoke', '--image', image,
         '--trainer-cpu', '1', '--trainer-memory', '2',   # the node has 2 cores
         '--pipeline-root', f's3://{bucket}/kfp', '--data', f's3://{bucket}/landing',
         '--s3-endpoint', f'http://{endpoint}', '--schema', config_lib.DIGITS_SCHEMA,
         # KFP's cache as it is (retention compiles every task uncached).
         '--keep-runs', '0', '--output', str(output)],
        cwd=REPO, env={**os.environ, **server.env(),
                                   'AWS_ENDPOINT_URL': f'http://{endpoint}'},
        capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return str(base / 'pipeline.spec.yaml')


def _versions(server, bucket):
    return sorted({key.split('/')[2] for key in server.keys(bucket, 'kfp/serving/')
                   if key.split('/')[2].isdigit()})


@pytest.fixture(scope='module')
def runs(kube, image, seaweedfs, pod_s3, tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_cluster')
    bucket = seaweedfs.new_bucket()
    _upload_span(seaweedfs, bucket, base, 1, 30)
    upload = _compile(seaweedfs, pod_s3.endpoint, bucket, base, image)
    root = f's3://{bucket}/kfp/pipeline_root'
    namespace = real_cluster.Namespace('kfp')
    secrets = {SECRET: {'accesskey': seaweedfs_lib.ACCESS_KEY,
                        'secretkey': seaweedfs_lib.SECRET_KEY}}
    try:
        with real_kfp.Install(str(base / 'kfp'), namespace, image, secrets=secrets) as kfp:
            kfp.run(kfp.compile(upload, root, 'run-1'))
            versions = [_versions(seaweedfs, bucket)]
            _upload_span(seaweedfs, bucket, base, 2, 35)   # the next day's data lands
            kfp.run(kfp.compile(upload, root, 'run-2'))
            versions.append(_versions(seaweedfs, bucket))
            kfp.run(kfp.compile(upload, root, 'run-3'))    # nothing new
            versions.append(_versions(seaweedfs, bucket))
            store = metadata_store.MetadataStore(metadata_store_pb2.MetadataStoreClientConfig(
                host='127.0.0.1', port=kfp.mlmd.port))
            yield {'kfp': kfp, 'artifacts': store.get_artifacts(), 'versions': versions,
                   'bucket': bucket, 'server': seaweedfs, 'image': image,
                   'endpoint': f'http://{pod_s3.endpoint}',
                   'pods': {r['run_id']: kfp.pods(r['name']) for r in kfp.runs}}
    finally:
        namespace.delete()


def _properties(runs, run_id, task, key):
    """The custom properties ML Metadata holds for a run's output artifact (the launcher's)."""
    [artifact] = [a for a in runs['artifacts']
                  if f'/{run_id}/{task}/' in a.uri and a.uri.endswith('/' + key)]
    return {k: v.string_value or v.int_value or v.double_value
            for k, v in artifact.custom_properties.items()}


def _object(runs, key) -> str:
    return runs['server'].client().get_object(
        Bucket=runs['bucket'], Key=key)['Body'].read().decode(errors='replace')


def test_every_task_of_the_three_runs_ran_in_a_pod_and_its_log_is_in_the_bucket(runs):
    kfp = runs['kfp']
    keys = runs['server'].keys(runs['bucket'])
    assert [r['run_id'] for r in kfp.runs] == ['run-1', 'run-2', 'run-3']
    for record in kfp.runs:
        assert record['phase'] == 'Succeeded', kfp.failures(record['name'])
        outcomes = record['outcomes']
        assert len(outcomes) >= 8 and set(outcomes.values()) <= {'ran', 'cached'}, outcomes
        for task in ('ImageExampleGen', 'ImageTrainer', 'Pusher'):
            assert outcomes[task] == 'ran', outcomes
        # The schema is imported once; the later runs take it from KFP's cache (Argo skips
        # the executor the driver found cached).
        cached = sorted(t for t, outcome in outcomes.items() if outcome == 'cached')
        assert cached == ([] if record['run_id'] == 'run-1' else ['ImportSchemaGen']), outcomes
        ran = [t for t, outcome in outcomes.items() if outcome == 'ran']
        logs = [k for k in keys if f'/{record["run_id"]}/' in k and k.endswith('executor-logs-0')]
        assert len(logs) == len(ran), (sorted(ran), logs)
        for key in logs:
            # The task's own process got the compiled endpoint and the Secret's keys, and
            # never logged a key.
            text = _object(runs, key)
            assert f'S3 endpoint {runs["endpoint"]}, region us-east-1, keys: ' \
                   'AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY' in text, (key, text[-2000:])
            assert seaweedfs_lib.SECRET_KEY not in text
        # Each task that ran did so in a pod of the project's image, under the launcher the
        # init container copied from the launcher image, under Argo's executor.
        executors = [p for p in runs['pods'][record['run_id']]
                     if 'system-container-impl' in p['metadata']['name']]
        assert len(executors) == len(ran)
        for pod in executors:
            [main] = [c for c in pod['spec']['containers'] if c['name'] == 'main']
            assert main['image'] == runs['image']
            assert '/kfp-launcher/launch' in main['args'] or \
                '/kfp-launcher/launch' in main['command'], main
            [launcher] = [c for c in pod['spec']['initContainers'] if c['name'] == 'kfp-launcher']
            assert launcher['image'].startswith('ghcr.io/kubeflow/kfp-launcher:')
            assert any(c['name'] == 'wait' for c in pod['spec']['containers'])


def test_artifacts_are_in_the_bucket_without_folder_objects_and_name_the_runs_session(runs):
    keys = runs['server'].keys(runs['bucket'])
    assert not [k for k in keys if k.endswith('/')], 'zero-byte folder objects (KFP #13476)'
    prefix = 'kfp/pipeline_root/smoke/run-1/'
    assert [k for k in keys if k.startswith(prefix + 'ImageExampleGen/')
            and '/Split-train/' in k]
    assert [k for k in keys if k.startswith(prefix + 'ImageTrainer/')
            and k.endswith('/Format-Serving/saved_model.pb')]
    # Each output's store session as the launcher records it: the bucket opened from the env.
    outputs = [a for a in runs['artifacts'] if '/run-1/' in a.uri]
    assert outputs
    for artifact in outputs:
        assert artifact.custom_properties['store_session_info'].string_value == \
            '{"Provider":"s3","Params":{"fromEnv":"true"}}', artifact.uri
    # The cached schema is run 1's, under another run's prefix, read by the later runs' tasks.
    schemas = [a.uri for a in runs['artifacts']
               if '/ImportSchemaGen/' in a.uri and 'executor-logs' not in a.uri]
    assert len(schemas) == 1 and '/smoke/run-1/' in schemas[0], \
        (schemas, sorted(a.uri for a in runs['artifacts']))


def test_the_second_run_trains_on_the_window_and_pushes_version_two(runs):
    assert runs['versions'] == [['1'], ['1', '2'], ['1', '2']]
    assert _properties(runs, 'run-1', 'Pusher', 'pushed_model')['pushed_version'] == '1'
    assert _properties(runs, 'run-1', 'ImageTrainer', 'model')['spans'] == '1'
    model = _properties(runs, 'run-2', 'ImageTrainer', 'model')
    assert model['spans'] == '1,2' and model['steps_run'] > 0
    window = json.loads(_properties(runs, 'run-2', 'ImageExampleGen', 'examples')['window'])
    assert [entry['span'] for entry in window] == [1, 2]
    assert _properties(runs, 'run-2', 'ServedModelBaseline', 'baseline')['served_version'] == 1
    pushed = _properties(runs, 'run-2', 'Pusher', 'pushed_model')
    serving = f"s3://{runs['bucket']}/kfp/serving"
    assert pushed['pushed_version'] == '2' and pushed['pushed_destination'] == f'{serving}/2'


def test_the_pushed_versions_load_from_the_bucket(runs, monkeypatch):
    """TF Serving reads s3:// itself; so does TensorFlow in this process, configured as a
    user's would be for the same store."""
    from core import storage
    for key, value in runs['server'].env().items():
        monkeypatch.setenv(key, value)
    for key, value in storage.tensorflow_variables(os.environ).items():
        monkeypatch.setenv(key, value)
    storage.enable()
    for version in ('1', '2'):
        loaded = tf.saved_model.load(f"s3://{runs['bucket']}/kfp/serving/{version}")
        assert 'serving_default' in loaded.signatures


def test_the_third_run_trains_nothing_and_pushes_nothing(runs):
    model = _properties(runs, 'run-3', 'ImageTrainer', 'model')
    assert model['training_skipped'] == 1 and model['steps_run'] == 0
    assert model['stop_reason'].startswith('no new data: serving version 2 unchanged')
    pushed = _properties(runs, 'run-3', 'Pusher', 'pushed_model')
    assert pushed['pushed_version'] == '2' and pushed['pushed_version_reused'] == 1
    fingerprints = [_properties(runs, run, 'ImageExampleGen', 'examples')['input_fingerprint']
                    for run in ('run-2', 'run-3')]
    assert fingerprints[0] == fingerprints[1]
