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

The three scheduled runs on an s3:// root (version 1; version 2 on spans 1-2; nothing new) run
on the real cluster, under the real Argo (tests/cluster/test_kfp_pipeline.py); three on a
minio:// root (KFP's name for its own store), with retention, in test_kubeflow_retention.py.
Here: a task failing on S3 and one succeeding, each in a fresh interpreter (not the warm one,
whose children end with os._exit), so that their exit codes are the processes' own.
"""
import dataclasses

import pytest
from ml_metadata.proto import metadata_store_pb2

import runner
from pipeline.definition import config as config_lib
from pipeline.definition import presets
from pipeline.kubeflow import compiler

import kfp_launcher
from kfp_jobs import assert_got_the_store, only_tasks
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


def _artifact(outputs, task, key):
    [artifact] = outputs[task].artifacts[key].artifacts
    return artifact


def _key(bucket, uri):
    assert uri.startswith(f's3://{bucket}/'), uri
    return uri[len(f's3://{bucket}/'):]


def _check_completed(launcher, run_id, server, bucket):
    """Every task of the run completed (its command exited 0) or was a cache hit; each that ran
    has its log uploaded as executor-logs and got the compiled endpoint and the Secret's keys."""
    keys = server.keys(bucket)
    tasks = {t: r for (run, t), r in launcher.tasks.items() if run == run_id}
    assert tasks, run_id
    for task, record in tasks.items():
        execution = launcher.store.executions[record.execution_id]
        expected = _STATE.CACHED if record.cached else _STATE.COMPLETE
        assert execution.last_known_state == expected, task
        if record.cached:
            continue
        [logs] = record.executor_input.outputs.artifacts['executor-logs'].artifacts
        assert logs.uri.endswith('/executor-logs-0')
        assert keys.get(_key(bucket, logs.uri), 0) > 0, (task, logs.uri)
        assert_got_the_store(record, server.endpoint, seaweedfs_lib.SECRET_KEY)


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
    _check_completed(launcher, 'run-1', store, bucket)
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
