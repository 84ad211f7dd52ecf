"""End-to-end: two scheduled runs of the compiled Kubeflow pipeline through the KFP harness
(tests/support/kfp_harness.py): the Workflow KFP's API server would create for each run, executed
as Argo does, each pod a set of processes, with ML Metadata, the ml-pipeline cache service and a
Kubernetes API served as in a cluster, on SeaweedFS with an s3:// root.

With `KFP_BIN_DIR` naming KFP 2.17.0's `driver`, `launcher-v2` and `handcompile` (built by hand,
docs/kubeflow.md "Running KFP's own driver and launcher locally"), those run; without it (CI) our
transcriptions behind the same flags do (kfp_argo_compiler.py, kfp_driver_cli.py,
kfp_launcher_cli.py). Compiled as `runner.py --kubeflow --image x --pipeline-root s3://B/kfp
--data s3://B/landing --s3-endpoint <server>`; the image is this checkout. Span 1 has landed
before the first run, which pushes version 1; span 2 lands, and the second run trains on the
window of spans 1-2 and pushes version 2.
"""
import json
import os
import subprocess
import sys

import pytest
from ml_metadata.metadata_store import metadata_store
from ml_metadata.proto import metadata_store_pb2

from helpers import copy_digits
import kfp_harness
import seaweedfs as seaweedfs_lib

pytestmark = pytest.mark.e2e

SECRET = 'mlpipeline-minio-artifact'


def _upload_span(server, bucket, base, span, per_class):
    folder = copy_digits(str(base / 'landing' / f'span-{span}'), per_class=per_class)
    server.upload_folder(folder, bucket, f'landing/span-{span}')


def _compile(server, bucket, base):
    """runner.py --kubeflow as a user runs it (it lists the landing bucket): the upload file."""
    output = base / 'pipeline.json'
    done = subprocess.run(
        [sys.executable, 'runner.py', '--kubeflow', '--config', 'smoke', '--image', 'x',
         '--pipeline-root', f's3://{bucket}/kfp', '--data', f's3://{bucket}/landing',
         '--s3-endpoint', server.endpoint, '--output', str(output)],
        cwd=kfp_harness.REPO, env={**os.environ, **server.env()}, capture_output=True,
        text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return str(base / 'pipeline.spec.yaml')


@pytest.fixture(scope='module')
def runs(seaweedfs, tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_harness')
    bucket = seaweedfs.new_bucket()
    _upload_span(seaweedfs, bucket, base, 1, 30)
    upload = _compile(seaweedfs, bucket, base)
    root = f's3://{bucket}/kfp/pipeline_root'  # the compiled root (config.check_kubeflow_root)
    secrets = {SECRET: {'accesskey': seaweedfs_lib.ACCESS_KEY,
                        'secretkey': seaweedfs_lib.SECRET_KEY}}
    with kfp_harness.Harness(str(base / 'harness'), secrets=secrets) as harness:
        first = harness.run(harness.compile(upload, root, 'run-1'))
        versions_after_first = _versions(seaweedfs, bucket)
        _upload_span(seaweedfs, bucket, base, 2, 35)  # the next day's data lands
        second = harness.run(harness.compile(upload, root, 'run-2'))
        store = metadata_store.MetadataStore(metadata_store_pb2.MetadataStoreClientConfig(
            host=harness.mlmd.host, port=harness.mlmd.port))
        artifacts = store.get_artifacts()
        yield {'harness': harness, 'outcomes': [first, second], 'artifacts': artifacts,
               'versions_after_first': versions_after_first, 'bucket': bucket,
               'server': seaweedfs}


def _versions(server, bucket):
    return sorted({key.split('/')[2] for key in server.keys(bucket, 'kfp/serving/')
                   if key.split('/')[2].isdigit()})


def _properties(runs, run_id, task, key):
    """The custom properties ML Metadata holds for a run's output artifact (the launcher's)."""
    [artifact] = [a for a in runs['artifacts']
                  if f'/{run_id}/{task}/' in a.uri and a.uri.endswith('/' + key)]
    return {k: v.string_value or v.int_value or v.double_value
            for k, v in artifact.custom_properties.items()}


def _cache_enabled(record):
    """The tasks compiled with KFP's cache on (each driver task's `task` argument)."""
    root = record['workflow'].templates['root']['dag']['tasks']
    return {t['name'][:-len('-driver')] for t in root if t['name'].endswith('-driver') and any(
        p['name'] == 'task' and json.loads(p['value']).get('cachingOptions', {}).get(
            'enableCache') for p in t['arguments']['parameters'])}


def test_every_task_of_both_runs_ran_and_its_log_is_in_the_bucket(runs):
    harness = runs['harness']
    keys = runs['server'].keys(runs['bucket'])
    for record in harness.runs:
        assert record['phase'] == 'Succeeded', \
            kfp_harness.failures(record['workflow'], record['pods'])
        outcomes = record['outcomes']
        assert outcomes and set(outcomes.values()) <= {'ran', 'cached'}, outcomes
        # A cache hit only where the task was compiled cached, and never in the first run.
        cached = {t for t, outcome in outcomes.items() if outcome == 'cached'}
        assert cached <= (_cache_enabled(record) if record['run_id'] != 'run-1' else set())
        for task in ('ImageExampleGen', 'ImageTrainer', 'Pusher'):
            assert outcomes[task] == 'ran', outcomes
        outcomes = {t: o for t, o in outcomes.items() if o == 'ran'}
        logs = [k for k in keys if f'/{record["run_id"]}/' in k and k.endswith('executor-logs-0')]
        assert len(logs) == len(outcomes), (sorted(outcomes), logs)


def test_the_programs_met_the_cluster_as_in_a_pod(runs):
    """The root driver read the kfp-launcher ConfigMap (absent: defaults) and each launcher its
    own pod, with the service account's token, over TLS; every executor pod was the driver's
    patch applied to the impl template. With no task compiled cached (retention compiles them
    so), neither program asks the cache (driver/cache.go: no fingerprint without
    cachingOptions.enableCache)."""
    harness = runs['harness']
    if not any(_cache_enabled(record) for record in harness.runs):
        assert harness.cache.service.calls == []
    requests = harness.api.requests
    assert all(authorized for _, _, authorized in requests)
    assert ('GET', f'/api/v1/namespaces/{harness.namespace}/configmaps/kfp-launcher',
            True) in requests
    pods_read = {path.rsplit('/', 1)[1] for _, path, _ in requests if '/pods/' in path}
    for record in harness.runs:
        executors = [p for p in record['pods'].pods.values() if 'system-container-impl' in
                     p['metadata']['name']]
        ran = [t for t, outcome in record['outcomes'].items() if outcome == 'ran']
        assert len(executors) == len(ran)
        for pod in executors:
            assert pod['metadata']['name'] in pods_read
            [main] = pod['spec']['containers']
            assert main['image'] == 'x' and main['command'][0] == '/kfp-launcher/launch'
            assert main['args'][:3] == ['python', '-m', 'pipeline.kubeflow.entrypoint']


def test_the_second_run_trains_on_the_window_and_pushes_version_two(runs):
    assert runs['versions_after_first'] == ['1']
    assert _properties(runs, 'run-1', 'Pusher', 'pushed_model')['pushed_version'] == '1'
    assert _properties(runs, 'run-1', 'ImageTrainer', 'model')['spans'] == '1'
    model = _properties(runs, 'run-2', 'ImageTrainer', 'model')
    assert model['spans'] == '1,2' and model['steps_run'] > 0
    assert _properties(runs, 'run-2', 'Pusher', 'pushed_model')['pushed_version'] == '2'
    assert _versions(runs['server'], runs['bucket']) == ['1', '2']
