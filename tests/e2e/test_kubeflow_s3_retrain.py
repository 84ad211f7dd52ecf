"""End-to-end: the compiled Kubeflow spec on a real S3 bucket (SeaweedFS, the store KFP 2.17
ships: tests/support/seaweedfs.py), task by task, as open-source KFP 2.17 runs it
(tests/support/kfp_launcher.py, mode 'oss', with the launcher's object store transcribed in
kfp_objectstore.py: the run's bucket opened with its session info, inputs copied from the bucket
into each pod, outputs and executor logs uploaded to it).

Compiled as `runner.py --kubeflow --pipeline-root s3://BUCKET/kfp --data s3://BUCKET/landing
--s3-endpoint <the test server>` compiles it, and uploaded as the API server takes it (the spec
and its platform spec: load_upload). Each task's process gets only what the compiled spec gives
it: the container env (AWS_ENDPOINT_URL, AWS_REGION) and the secretAsEnv keys of the namespace's
Secret `mlpipeline-minio-artifact`, which holds the test server's keys; none of this process's
AWS_* variables (kfp_launcher_v2.run_command).

Three scheduled runs: span 1 has landed before the first, which pushes version 1; span 2 lands
and the second trains on the window of spans 1-2 and pushes version 2 under <root>/serving/;
nothing lands before the third, which trains nothing and pushes nothing, every task completing.
Then one run on a minio:// root (KFP's name for its own store: the launcher's default session
dials seaweedfs.kubeflow:9000, which the cluster's Service resolves to the test server), and a
task failing on S3 and one succeeding, each in a fresh interpreter (not the warm one, whose
children end with os._exit), so that their exit codes are the processes' own.
"""
import dataclasses
import json
import os

import pytest
import tensorflow as tf
from google.protobuf import json_format
from ml_metadata.proto import metadata_store_pb2

import runner
from pipeline.definition import config as config_lib
from pipeline.definition import presets
from pipeline.kubeflow import compiler

from helpers import copy_digits
import kfp_launcher
from kfp_jobs import only_tasks
import seaweedfs as seaweedfs_lib

pytestmark = pytest.mark.e2e

SECRET = 'mlpipeline-minio-artifact'
_STATE = metadata_store_pb2.Execution


def _secrets():
    return {SECRET: {'accesskey': seaweedfs_lib.ACCESS_KEY,
                     'secretkey': seaweedfs_lib.SECRET_KEY}}


def _compile(server, base, root: str, data: str):
    """runner.py --kubeflow's configs from its flags, compiled; the upload as the API server
    parses it, with the compiled root as the run's root. The "image" is this checkout."""
    args = runner.build_parser().parse_args([
        '--kubeflow', '--config', 'smoke', '--pipeline-root', root, '--data', data,
        '--image', 'local', '--s3-endpoint', server.endpoint,
        '--schema', config_lib.DIGITS_SCHEMA, '--output', str(base / 'pipeline.json'),
        # KFP's cache as it is; retention compiles every task uncached and has its own
        # scenario (test_kubeflow_retention.py).
        '--keep-runs', '0'])
    cfg, kf = presets.from_args(args)
    kf = dataclasses.replace(kf, image_workdir=config_lib.REPO_ROOT)
    spec = compiler.write_pipeline_spec(compiler.compile_pipeline(cfg, kf), cfg.pipeline_root,
                                        kf)
    job, platform = kfp_launcher.load_upload(spec, cfg.pipeline_root)
    return cfg, job, platform


def _upload_span(server, bucket, base, span: int, per_class: int) -> None:
    folder = copy_digits(str(base / 'landing' / f'span-{span}'), per_class=per_class)
    server.upload_folder(folder, bucket, f'landing/span-{span}')


@pytest.fixture(scope='module')
def runs(store, tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_s3')
    bucket = store.new_bucket()
    _upload_span(store, bucket, base, 1, 30)
    cfg, job, platform = _compile(store, base, f's3://{bucket}/kfp', f's3://{bucket}/landing')
    launcher = kfp_launcher.Launcher(workdir=str(base / 'pods'), secrets=_secrets())
    first = launcher.run_job(job, 'run-1', platform)
    _upload_span(store, bucket, base, 2, 35)  # the next day's data lands
    second = launcher.run_job(job, 'run-2', platform)
    versions_after_second = _versions(store, bucket)
    try:
        third = launcher.run_job(job, 'run-3', platform)  # nothing new
    except kfp_launcher.TaskFailed as failure:  # kept for its test, which raises it
        third = failure
    return {'cfg': cfg, 'bucket': bucket, 'server': store, 'launcher': launcher,
            'runs': [first, second, third], 'versions_after_second': versions_after_second}


def _versions(server, bucket):
    """The version folders under <root>/serving/ (beside TF Serving's models.config)."""
    return sorted({key.split('/')[2] for key in server.keys(bucket, 'kfp/serving/')
                   if key.split('/')[2].isdigit()})


def _artifact(outputs, task, key):
    [artifact] = outputs[task].artifacts[key].artifacts
    return artifact


def _metadata(outputs, task, key):
    return json_format.MessageToDict(_artifact(outputs, task, key).metadata)


def _key(bucket, uri):
    scheme = uri.split('://')[0] + '://'
    assert scheme in ('s3://', 'minio://') and uri.startswith(f'{scheme}{bucket}/'), uri
    return uri[len(f'{scheme}{bucket}/'):]


def _check_completed(launcher, run_id, server, bucket, tasks_at_least=8):
    """Every task of the run completed (its command exited 0) or was a cache hit; each that ran
    has its log uploaded as executor-logs and got the compiled endpoint and the Secret's keys."""
    keys = server.keys(bucket)
    tasks = {t: r for (run, t), r in launcher.tasks.items() if run == run_id}
    assert len(tasks) >= tasks_at_least, sorted(tasks)
    for task, record in tasks.items():
        execution = launcher.store.executions[record.execution_id]
        expected = _STATE.CACHED if record.cached else _STATE.COMPLETE
        assert execution.last_known_state == expected, task
        if record.cached:
            continue
        [logs] = record.executor_input.outputs.artifacts['executor-logs'].artifacts
        assert logs.uri.endswith('/executor-logs-0')
        assert keys.get(_key(bucket, logs.uri), 0) > 0, (task, logs.uri)
        # The task's own process got the compiled endpoint and the Secret's keys.
        with open(record.pod.log_file) as log:
            text = log.read()
        assert f'S3 endpoint {server.endpoint}, region us-east-1, keys: AWS_ACCESS_KEY_ID, ' \
               'AWS_SECRET_ACCESS_KEY' in text, (task, text[-2000:])
        assert seaweedfs_lib.SECRET_KEY not in text


def test_every_task_of_the_first_two_runs_completes_and_its_log_is_in_the_bucket(runs):
    for run_id in ('run-1', 'run-2'):
        _check_completed(runs['launcher'], run_id, runs['server'], runs['bucket'])
    cached = sorted(t for (run, t), r in runs['launcher'].tasks.items()
                    if r.cached and run != 'run-3')
    assert cached == ['ImportSchemaGen']


def test_artifacts_are_in_the_bucket_without_folder_objects(runs):
    bucket, server, cfg = runs['bucket'], runs['server'], runs['cfg']
    keys = server.keys(bucket)
    assert not [k for k in keys if k.endswith('/')], 'zero-byte folder objects (KFP #13476)'
    assert cfg.pipeline_root == f's3://{bucket}/kfp/pipeline_root'
    first = runs['runs'][0]
    examples = _key(bucket, _artifact(first, 'ImageExampleGen', 'examples').uri)
    assert examples.startswith('kfp/pipeline_root/smoke/run-1/ImageExampleGen/')
    assert [k for k in keys if k.startswith(examples + '/Split-train/')]
    model = _key(bucket, _artifact(first, 'ImageTrainer', 'model').uri)
    assert model + '/Format-Serving/saved_model.pb' in keys
    record = runs['launcher'].store.artifacts[int(_artifact(first, 'ImageTrainer', 'model').name)]
    assert record.custom_properties['store_session_info'].string_value == \
        '{"Provider":"s3","Params":{"fromEnv":"true"}}'


def test_the_launcher_copied_each_input_from_the_bucket_into_the_pod(runs):
    launcher, second = runs['launcher'], runs['runs'][1]
    examples = _artifact(second, 'ImageExampleGen', 'examples').uri
    pod = launcher.tasks[('run-2', 'StatisticsGen')].pod
    local = pod.local_path_for_uri(examples)
    assert local.startswith(pod.folder + '/s3/' + runs['bucket'] + '/')
    assert os.listdir(os.path.join(local, 'Split-train'))
    model = _artifact(second, 'ImageTrainer', 'model').uri
    evaluator = launcher.tasks[('run-2', 'Evaluator')].pod
    assert os.path.isfile(os.path.join(evaluator.local_path_for_uri(model), 'Format-Serving',
                                       'saved_model.pb'))
    # The schema is run 1's (a cache hit): another prefix of the bucket, opened as a
    # non-default bucket with the run's session.
    schema = _artifact(second, 'ImportSchemaGen', 'schema').uri
    assert '/smoke/run-1/' in schema
    consumers = [r for (run, t), r in launcher.tasks.items() if run == 'run-2' and r.pod and any(
        a.uri == schema for lst in r.executor_input.inputs.artifacts.values()
        for a in lst.artifacts)]
    assert consumers
    for record in consumers:
        assert os.path.isfile(os.path.join(record.pod.local_path_for_uri(schema),
                                           'schema.pbtxt'))


def test_the_second_run_trains_on_the_window_and_pushes_version_two(runs):
    first, second, _ = runs['runs']
    assert _metadata(first, 'Pusher', 'pushed_model')['pushed_version'] == '1'
    model = _metadata(second, 'ImageTrainer', 'model')
    assert 'training_skipped' not in model and model['steps_run'] == 30
    assert model['spans'] == '1,2'
    window = json.loads(_metadata(second, 'ImageExampleGen', 'examples')['window'])
    assert [entry['span'] for entry in window] == [1, 2]
    assert _metadata(second, 'ServedModelBaseline', 'baseline')['served_version'] == 1
    pushed = _metadata(second, 'Pusher', 'pushed_model')
    serving = f"s3://{runs['bucket']}/kfp/serving"
    assert pushed['pushed_version'] == '2'
    assert pushed['pushed_destination'] == f'{serving}/2'
    assert runs['versions_after_second'] == ['1', '2']
    for version in ('1', '2'):  # TF Serving reads s3:// itself; so does TensorFlow here
        loaded = tf.saved_model.load(f'{serving}/{version}')
        assert 'serving_default' in loaded.signatures


def test_the_third_run_trains_nothing_and_pushes_nothing(runs):
    _, second, third = runs['runs']
    if isinstance(third, Exception):
        raise third
    _check_completed(runs['launcher'], 'run-3', runs['server'], runs['bucket'])
    assert runs['launcher'].tasks[('run-3', 'ImportSchemaGen')].cached
    model = _metadata(third, 'ImageTrainer', 'model')
    assert model['training_skipped'] == 1 and model['steps_run'] == 0
    assert model['stop_reason'].startswith('no new data: serving version 2 unchanged')
    pushed = _metadata(third, 'Pusher', 'pushed_model')
    assert pushed['pushed_version'] == '2' and pushed['pushed_version_reused'] == 1
    assert _versions(runs['server'], runs['bucket']) == ['1', '2']
    assert _metadata(third, 'ImageExampleGen', 'examples')['input_fingerprint'] == \
        _metadata(second, 'ImageExampleGen', 'examples')['input_fingerprint']


def test_a_run_on_a_minio_root(store, tmp_path):
    """KFP's own name for its store: tasks get minio:// URIs (read as s3:// inside the task,
    pipeline/kubeflow/entrypoint.py), and the launcher opens the bucket with its default minio
    session: seaweedfs.kubeflow:9000, path-style, the Secret's keys read through the API."""
    bucket = store.new_bucket()
    _upload_span(store, bucket, tmp_path, 1, 30)
    cfg, job, platform = _compile(store, tmp_path, f'minio://{bucket}/kfp',
                                  f's3://{bucket}/landing')
    assert cfg.pipeline_root == f'minio://{bucket}/kfp/pipeline_root'
    service = {'seaweedfs.kubeflow:9000': store.endpoint[len('http://'):]}
    launcher = kfp_launcher.Launcher(workdir=str(tmp_path / 'pods'), secrets=_secrets(),
                                     services=service)
    outputs = launcher.run_job(job, 'run-1', platform)
    examples = _artifact(outputs, 'ImageExampleGen', 'examples')
    assert examples.uri.startswith(f'minio://{bucket}/kfp/pipeline_root/smoke/run-1/')
    pod = launcher.tasks[('run-1', 'StatisticsGen')].pod
    assert os.listdir(os.path.join(pod.local_path_for_uri(examples.uri), 'Split-train'))
    assert pod.local_path_for_uri(examples.uri).startswith(pod.folder + '/minio/')
    record = launcher.store.artifacts[int(examples.name)]
    session = json.loads(record.custom_properties['store_session_info'].string_value)
    assert session['Provider'] == 'minio' and session['Params']['endpoint'] == \
        'seaweedfs.kubeflow:9000'
    pushed = _metadata(outputs, 'Pusher', 'pushed_model')
    assert pushed['pushed_version'] == '1'
    keys = store.keys(bucket)
    assert 'kfp/serving/1/saved_model.pb' in keys
    assert not [k for k in keys if k.endswith('/')]
    _check_completed(launcher, 'run-1', store, bucket)
    # Without the Service, the launcher cannot reach the store its session names: the task's
    # own process writes (it has the compiled endpoint), the launcher's upload fails.
    stranded = kfp_launcher.Launcher(workdir=str(tmp_path / 'pods-2'), secrets=_secrets())
    with pytest.raises(kfp_launcher.TaskFailed, match='failed to execute component: failed to '
                       'upload output artifact "executor-logs" .* lookup seaweedfs.kubeflow: '
                       'no such host'):
        stranded.run_job(only_tasks(job, 'ImportSchemaGen'), 'run-2', platform)


def test_a_task_failing_on_s3_exits_non_zero_and_one_succeeding_exits_zero(
        store, tmp_path, monkeypatch):
    """Each task in a fresh interpreter (WARM_PYTHON=0): tensorflow-io's abort at exit (code
    134) would show here (core/storage.py keeps the process's own code)."""
    monkeypatch.setenv('WARM_PYTHON', '0')
    bucket = store.new_bucket()
    cfg, job, platform = _compile(store, tmp_path, f's3://{bucket}/kfp',
                                  f's3://{bucket}/no-such-landing')
    launcher = kfp_launcher.Launcher(workdir=str(tmp_path / 'pods'), secrets=_secrets())
    outputs = launcher.run_job(only_tasks(job, 'ImportSchemaGen'), 'run-1', platform)
    schema = _artifact(outputs, 'ImportSchemaGen', 'schema').uri
    assert _key(bucket, schema) + '/schema.pbtxt' in store.keys(bucket)
    _check_completed(launcher, 'run-1', store, bucket, tasks_at_least=1)
    with pytest.raises(kfp_launcher.TaskFailed) as failure:
        launcher.run_job(only_tasks(job, 'ImageExampleGen'), 'run-2', platform)
    message = str(failure.value)
    assert message.startswith('failed to execute component: exit status 1\n'), message[:300]
    assert 'no-such-landing' in message, message[-2000:]
    record = launcher.tasks.get(('run-2', 'ImageExampleGen'))
    assert record is None  # run_job raised before recording it; ML Metadata has it FAILED
    assert [e.last_known_state for e in launcher.store.executions.values()
            if e.custom_properties['task_name'].string_value == 'ImageExampleGen'] == \
        [_STATE.FAILED]
    # Its log reached the bucket all the same (executor-logs, uploaded after a failure).
    assert [k for k in store.keys(bucket, 'kfp/pipeline_root/smoke/run-2/ImageExampleGen/')
            if k.endswith('/executor-logs-0')]
