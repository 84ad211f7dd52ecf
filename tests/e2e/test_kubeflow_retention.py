"""End-to-end: --keep-runs, --notify and --on-finish on Kubeflow, over three scheduled runs on a
minio:// root (KFP's own name for its store; SeaweedFS here), as open-source KFP 2.17 runs the
compiled spec.

The runs go through a run driver (the `kfp_driver` fixture): today the KFP stand-in
(tests/support/kfp_launcher.py, mode 'oss', which keeps ML Metadata and KFP's cache table across
runs); a harness running KFP's own driver and launcher can take its place, as long as it runs
a job as `run_job(job, run_id, platform)` (returning each task's recorded outputs), keeps
`tasks[(run id, task)]` with each task's `executor_input` and whether it was `cached`, and shows
the API server's cache table as `store.cache_entries`.

Compiled as `runner.py --kubeflow --pipeline-root minio://BUCKET/kfp --keep-runs 1 --window 2
--notify URL --on-finish CMD` with serving/ keeping one version ([push] keep_versions = 1): tasks
get minio:// URIs (read as s3:// inside the task, pipeline/kubeflow/entrypoint.py), and the
launcher opens the bucket with its default minio session, seaweedfs.kubeflow:9000, which the
cluster's Service resolves to the test server. (The real cluster's runs have an s3:// root:
tests/cluster/test_kfp_pipeline.py.) Runs: span 1 lands, run 1 pushes
version 1; span 2 lands, run 2 pushes version 2 (window: spans 1-2); span 3 lands, run 3
pushes version 3 (window: spans 2-3). After each, the Pusher's task applies retention and
notifies (pipeline/kubeflow/run_end.py). A run with no new data, which trains and pushes
nothing, is one of the three runs on the real cluster (tests/cluster/test_kfp_pipeline.py); its
notification is the local run's (pipeline/runs/notify.py, tests/pipeline/runs).
"""
import dataclasses
import json
import os
import re
import shutil

import pytest
from google.protobuf import json_format
from ml_metadata.proto import metadata_store_pb2

import runner
from core import storage
from pipeline.definition import config as config_lib
from pipeline.definition.config_kubeflow import KubeflowConfig
from pipeline.definition.config_retraining import RetentionConfig
from pipeline.definition import presets
from pipeline.kubeflow import compiler
from pipeline.kubeflow import run_end as run_end_lib, task_record
from pipeline.runs import notify
from pipeline.runs.summary import RunSummary

from helpers import copy_digits
import kfp_launcher
import notify_receiver
from kfp_jobs import assert_got_the_store, only_tasks
import seaweedfs as seaweedfs_lib

pytestmark = pytest.mark.e2e

SECRET = 'mlpipeline-minio-artifact'
SERVICE = 'seaweedfs.kubeflow:9000'   # the launcher's default minio session dials it
RUNS = ('run-1', 'run-2', 'run-3')


@pytest.fixture(scope='module', params=['stand-in'])
def kfp_driver(request):
    """Makes the run driver of a scenario: (workdir, the namespace's Secrets, the cluster's
    Services as {name:port: address}) -> a driver."""
    assert request.param == 'stand-in'
    return lambda workdir, secrets, services=None: kfp_launcher.Launcher(
        workdir=workdir, secrets=secrets, services=services)


def _upload_span(server, bucket, base, span: int, per_class: int) -> None:
    folder = copy_digits(str(base / 'landing' / f'span-{span}'), per_class=per_class)
    server.upload_folder(folder, bucket, f'landing/span-{span}')


def _keys(server, bucket, prefix):
    return {k: size for k, size in server.keys(bucket, prefix).items()}


@pytest.fixture(scope='module')
def scenario(store, kfp_driver, tmp_path_factory):
    base = tmp_path_factory.mktemp('kfp_retention')
    bucket = store.new_bucket()
    handler, url, server = notify_receiver.serve()
    hooks = base / 'hooks'
    hooks.mkdir()
    settings = base / 'settings.toml'
    settings.write_text('[push]\nkeep_versions = 1\n')
    _upload_span(store, bucket, base, 1, 30)   # before the compile, which lists span folders
    args = runner.build_parser().parse_args([
        '--kubeflow', '--config', 'smoke', '--config-file', str(settings),
        '--pipeline-root', f'minio://{bucket}/kfp', '--data', f's3://{bucket}/landing',
        '--image', 'local', '--s3-endpoint', store.endpoint, '--schema', config_lib.DIGITS_SCHEMA,
        '--keep-runs', '1', '--window', '2', '--notify', url,
        '--on-finish', f'cp -t {hooks}', '--output', str(base / 'pipeline.json')])
    cfg, kf = presets.from_args(args)
    kf = dataclasses.replace(kf, image_workdir=config_lib.REPO_ROOT)
    spec = compiler.write_pipeline_spec(compiler.compile_pipeline(cfg, kf), cfg.pipeline_root,
                                        kf)
    job, platform = kfp_launcher.load_upload(spec, cfg.pipeline_root)
    secrets = {SECRET: {'accesskey': seaweedfs_lib.ACCESS_KEY,
                        'secretkey': seaweedfs_lib.SECRET_KEY}}
    driver = kfp_driver(str(base / 'pods'), secrets, {SERVICE: store.endpoint[len('http://'):]})
    prefix = 'kfp/pipeline_root/smoke/'
    outputs, keys_after = {}, {}
    try:
        for run_id, span in zip(RUNS, (None, 2, 3)):
            if span is not None:   # the day's data lands
                _upload_span(store, bucket, base, span, 25 + 5 * span)
            outputs[run_id] = driver.run_job(job, run_id, platform)
            keys_after[run_id] = _keys(store, bucket, prefix)
    finally:
        notify_receiver.stop(server)
    # Without the Service, the launcher cannot reach the store its session names: the task's own
    # process writes (it has the compiled endpoint), the launcher's upload of its log fails.
    stranded = kfp_driver(str(base / 'pods-stranded'), secrets)
    with pytest.raises(kfp_launcher.TaskFailed) as failed:
        stranded.run_job(only_tasks(job, 'ImportSchemaGen'), 'run-stranded', platform)
    return {'cfg': cfg, 'job': job, 'bucket': bucket, 'server': store, 'driver': driver,
            'stranded': str(failed.value), 'outputs': outputs, 'keys': keys_after,
            'payloads': [json.loads(body) for _, body in handler.bodies],
            'hooks': hooks, 'prefix': prefix}


def _run_keys(scenario, after, run_id):
    return [k for k in scenario['keys'][after] if k.startswith(f"{scenario['prefix']}{run_id}/")]


def test_the_compiled_pipeline_caches_no_task_and_the_pusher_ends_the_run(scenario):
    tasks = json_format.MessageToDict(scenario['job'].pipeline_spec)['root']['dag']['tasks']
    assert len(tasks) == 10
    assert not [name for name, task in tasks.items()
                if task.get('cachingOptions', {}).get('enableCache')]
    custom = json.loads(tasks['Pusher']['inputs']['parameters']['custom_config'][
        'runtimeValue']['constant'])
    run_end = custom[run_end_lib.RUN_END_KEY]
    assert run_end['keep_runs'] == 1 and run_end['url'].startswith('http://127.0.0.1:')
    assert run_end['pipeline_root'] == scenario['cfg'].pipeline_root


def test_no_task_of_any_run_was_a_cache_hit_and_kfp_recorded_no_cache_entry(scenario):
    driver = scenario['driver']
    ran = {(run, task): record for (run, task), record in driver.tasks.items()}
    assert {run for run, _ in ran} == set(RUNS) and len(ran) == 30
    assert not [key for key, record in ran.items() if record.cached]
    assert driver.store.cache_entries == []


def test_every_input_a_run_received_existed_when_it_ran(scenario):
    """Retention after runs 1-2 deleted older runs' artifacts; no later task was handed one."""
    bucket = scenario['bucket']
    for index, run_id in enumerate(RUNS[1:], start=1):
        present = scenario['keys'][RUNS[index - 1]]   # the bucket when run_id started
        for (run, task), record in scenario['driver'].tasks.items():
            if run != run_id:
                continue
            for lst in record.executor_input.inputs.artifacts.values():
                for artifact in lst.artifacts:
                    key = artifact.uri.split(f'{bucket}/', 1)[1]
                    if key.startswith(scenario['prefix']) and f'/{run_id}/' not in key:
                        assert any(k.startswith(key + '/') for k in present), (run_id, task, key)


def test_tasks_get_minio_uris_and_the_launcher_reaches_the_store_through_its_service(scenario):
    """KFP's minio session: the launcher copies each input into the pod from minio:// URIs and
    uploads each task's log, every task got the compiled endpoint and the Secret's keys (never a
    key's value in its log); without the Service, the upload fails as KFP's launcher's does."""
    driver, bucket = scenario['driver'], scenario['bucket']
    [examples] = scenario['outputs']['run-1']['ImageExampleGen'].artifacts['examples'].artifacts
    assert examples.uri.startswith(f'minio://{bucket}/kfp/pipeline_root/smoke/run-1/')
    pod = driver.tasks[('run-1', 'StatisticsGen')].pod
    assert pod.local_path_for_uri(examples.uri).startswith(pod.folder + '/minio/')
    assert os.listdir(os.path.join(pod.local_path_for_uri(examples.uri), 'Split-train'))
    session = json.loads(driver.store.artifacts[int(examples.name)].custom_properties[
        'store_session_info'].string_value)
    assert session['Provider'] == 'minio' and session['Params']['endpoint'] == SERVICE
    kept = scenario['keys']['run-3']   # run 3 is kept whole: every task's log is there
    for (run, task), record in driver.tasks.items():
        execution = driver.store.executions[record.execution_id]
        assert execution.last_known_state == metadata_store_pb2.Execution.COMPLETE, (run, task)
        assert_got_the_store(record, scenario['server'].endpoint, seaweedfs_lib.SECRET_KEY)
        if run == 'run-3':
            [logs] = record.executor_input.outputs.artifacts['executor-logs'].artifacts
            assert logs.uri.startswith('minio://') and logs.uri.endswith('/executor-logs-0')
            assert kept.get(logs.uri.split(f'{bucket}/', 1)[1], 0) > 0, (task, logs.uri)
    assert re.search('failed to execute component: failed to upload output artifact '
                     '"executor-logs" .* lookup seaweedfs.kubeflow: no such host',
                     scenario['stranded']), scenario['stranded'][-2000:]


def test_retention_leaves_the_older_runs_only_what_the_window_and_serving_need(scenario):
    record = '/' + task_record.RECORD_NAME
    # After run 2: run 1 keeps only its Examples (span 1, in run 2's window) and their record,
    # and the record of its Pusher's task that says the run ended, without its artifacts.
    left = _run_keys(scenario, 'run-2', 'run-1')
    examples = [k for k in left if '/ImageExampleGen/' in k]
    assert [k for k in examples if '/examples/Span-1/' in k or '/examples/Split-' in k]
    assert [k for k in examples if k.endswith(record)]
    assert not [k for k in left if '/executor-logs-0' in k]
    [pusher] = [k for k in left if '/ImageExampleGen/' not in k]
    assert '/Pusher/' in pusher and pusher.endswith(record)
    # After run 3 (window: spans 2-3, version 3 served alone): only that record of run 1.
    assert _run_keys(scenario, 'run-3', 'run-1') == [pusher]
    # Run 3 is kept whole: every task folder has its record and the Pusher's the summary.
    last = _run_keys(scenario, 'run-3', 'run-3')
    assert len([k for k in last if k.endswith(task_record.RECORD_NAME)]) == 10
    assert [k for k in last if '/Pusher/' in k and k.endswith('/' + run_end_lib.SUMMARY_NAME)]


def test_each_run_notified_as_a_local_run_does(scenario):
    payloads = {p['run_id']: p for p in scenario['payloads']}
    assert sorted(payloads) == list(RUNS)
    local_keys = set(notify.payload(RunSummary(run_id='r', states={}, outputs={}), 'p', 0,
                                    None, None, 'f'))
    for payload in payloads.values():
        assert set(payload) == local_keys and payload['pipeline'] == 'smoke'
        assert payload['exit_code'] == 0 and payload['failed_stage'] is None
        assert payload['log'] is None and payload['report'] is None
        assert payload['summary_file'].endswith('/' + run_end_lib.SUMMARY_NAME)
        assert '  retention: ' in payload['summary']
    first, second, third = (payloads[r] for r in RUNS)
    assert (first['outcome'], first['pushed_version']) == ('pushed', 1)
    assert first['drift']['text'] == 'drift: not measured (nothing served yet)'
    assert first['spans'] == [1] and first['examples']['train'] + first['examples']['eval'] == 90
    assert (second['outcome'], second['pushed_version']) == ('pushed', 2)
    assert second['drift']['compared_version'] == 1 and second['spans'] == [1, 2]
    assert (third['outcome'], third['pushed_version']) == ('pushed', 3)
    assert third['spans'] == [2, 3] and third['drift']['compared_version'] == 2
    assert third['served_now']['version'] == 3 and third['push_mode'] == 'auto'
    assert 'kept 1 run, deleted' in third['summary']


def test_the_on_finish_command_got_the_summary_and_the_bucket_keeps_it(scenario):
    import tensorflow as tf
    [copied] = os.listdir(scenario['hooks'])   # each run's copy replaced the one before
    with open(os.path.join(scenario['hooks'], copied)) as handle:
        last = json.load(handle)
    assert last['run_id'] == 'run-3' and last == scenario['payloads'][-1]
    with tf.io.gfile.GFile(storage.to_s3(last['summary_file'])) as handle:
        assert json.load(handle) == last


@pytest.mark.parametrize('keep', [0, 1])
def test_a_deleted_output_comes_back_from_kfps_cache_only_without_retention(
        kfp_driver, tmp_path, keep):
    """KFP's cache ignores artifact state (backend/src/v2/driver/cache.go reuseCachedOutputs):
    compiled with the cache (--keep-runs 0), a task whose output folder was deleted is a cache
    hit that hands over the deleted URI; compiled with retention (--keep-runs 1) the task runs
    again and hands over a new folder that exists. ImportSchemaGen alone, as compiled, on a
    local folder standing for gs://."""
    data = copy_digits(str(tmp_path / 'data' / 'span-1'), per_class=5)
    cfg = config_lib.smoke_config(os.path.dirname(data), str(tmp_path / 'out'),
                                  schema_path=config_lib.DIGITS_SCHEMA,
                                  retention=RetentionConfig(keep_runs=keep))
    kf = KubeflowConfig(image='local', output_file=str(tmp_path / 'pipeline.json'),
                                   image_workdir=config_lib.REPO_ROOT)
    job = only_tasks(kfp_launcher.load_job(compiler.compile_pipeline(cfg, kf)),
                     'ImportSchemaGen')
    driver = kfp_driver(str(tmp_path / 'pods'), {})
    schema = lambda found: found['ImportSchemaGen'].artifacts['schema'].artifacts[0].uri  # noqa
    first = schema(driver.run_job(job, 'run-1'))
    assert os.path.isfile(os.path.join(first, 'schema.pbtxt'))
    shutil.rmtree(first)   # as retention deletes an older run's artifact
    second = schema(driver.run_job(job, 'run-2'))
    cached = driver.tasks[('run-2', 'ImportSchemaGen')].cached
    if keep == 0:
        assert cached and second == first and not os.path.exists(second)
    else:
        assert not cached and second != first and '/run-2/' in second
        assert os.path.isfile(os.path.join(second, 'schema.pbtxt'))
        assert driver.store.cache_entries == []
