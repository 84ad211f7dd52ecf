"""The end of a Kubeflow run (pipeline/kubeflow/run_end.py): its compiled settings, the summary from
the task records, the payload a local run sends, and a notification that never fails the task;
and the task record each task writes (pipeline/kubeflow/task_record.py)."""
import dataclasses
import json
import os

import pytest
from google.protobuf import struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2

from pipeline.definition import config as config_lib
from pipeline.definition.config_kubeflow import KubeflowConfig
from pipeline.kubeflow import compiler
from pipeline.kubeflow import run_end as run_end_lib, task_record
from pipeline.runs import notify
from pipeline.definition.config_retraining import NotifyConfig, RetentionConfig
from pipeline.runs.summary import RunSummary

import notify_receiver

receiver = notify_receiver.receiver   # the fixture

NAME = 'smoke'


def _config(tmp_path, keep=3, **notify_fields):
    cfg = config_lib.smoke_config(config_lib.DEFAULT_DATA, str(tmp_path / 'out'))
    return dataclasses.replace(cfg, retention=RetentionConfig(keep),
                               notify=NotifyConfig(**notify_fields))


def test_settings_are_compiled_only_when_the_run_has_an_end_to_do(tmp_path):
    assert run_end_lib.settings(_config(tmp_path, keep=0)) is None
    found = run_end_lib.settings(_config(tmp_path, keep=0, url='http://hook/x'))
    assert found == {'pipeline_name': NAME, 'pipeline_root': str(tmp_path / 'out' /
                                                                 'pipeline_root'),
                     'serving_dir': str(tmp_path / 'out' / 'serving'), 'keep_runs': 0,
                     'url': 'http://hook/x', 'on_finish': None, 'timeout_seconds': 10.0}
    assert run_end_lib.settings(_config(tmp_path, keep=2))['keep_runs'] == 2
    values = {'custom_config': struct_pb2.Value(string_value=json.dumps(
        {'mode': 'auto', run_end_lib.RUN_END_KEY: found}))}
    assert run_end_lib.from_parameters(values) == found
    assert run_end_lib.from_parameters({'custom_config': struct_pb2.Value(
        string_value='{"mode": "auto"}')}) is None
    assert run_end_lib.from_parameters({}) is None


def _tasks(job):
    return job['pipelineSpec']['root']['dag']['tasks']


@pytest.mark.parametrize('keep,url,uncached', [
    (3, None, 'all'),
    (0, 'http://hook/x', {'ImageExampleGen', 'Pusher'}),
    (0, None, {'ImageExampleGen'})])
def test_the_cache_rule_of_the_compile(tmp_path, keep, url, uncached):
    """--keep-runs K > 0: no task cached (KFP would hand over deleted artifacts); a run end
    without retention: the Pusher uncached, so that it runs (and notifies) every time."""
    kf = KubeflowConfig(image='local', output_file=str(tmp_path / 'p.json'))
    job = compiler.build_job(_config(tmp_path, keep=keep, url=url), kf)
    tasks = _tasks(job)
    cached = {name for name, task in tasks.items()
              if task.get('cachingOptions', {}).get('enableCache')}
    assert set(tasks) - cached == (set(tasks) if uncached == 'all' else uncached)
    custom = json.loads(tasks['Pusher']['inputs']['parameters']['custom_config'][
        'runtimeValue']['constant'])
    assert (run_end_lib.RUN_END_KEY in custom) == bool(keep or url)
    assert custom['keep_versions'] == 5   # the Pusher's own keys stay


def test_cached_ingestion_and_retention_are_refused_together(tmp_path):
    kf = KubeflowConfig(image='local', cache_ingestion=True)
    with pytest.raises(ValueError, match='cache_ingestion = true and --keep-runs K > 0'):
        compiler.build_job(_config(tmp_path, keep=1), kf)
    assert compiler.run_end_text(_config(tmp_path, keep=0)) is None
    assert compiler.run_end_text(_config(tmp_path, keep=2, url='http://h/x', on_finish='cp')) \
        == ("At the end of each run (in the Pusher's task): retention keeps the newest 2 runs "
            '(every task uncached); notifies http://h/x; runs "cp"')


def test_run_of_reads_kfps_layout():
    root = 's3://b/kfp/pipeline_root'
    assert run_end_lib.run_of(f'{root}/{NAME}/run-7/Pusher/abc', root, NAME) == 'run-7'
    assert run_end_lib.run_of(f'minio://b/kfp/pipeline_root/{NAME}/run-7/Pusher/abc',
                              root, NAME) == 'run-7'
    assert run_end_lib.run_of(f'{root}/123/job-1/Pusher_9', root, NAME) is None   # Vertex AI
    assert run_end_lib.run_of(f'{root}/{NAME}/run-7/Pusher', root, NAME) is None


def _record(run, task, outputs, started, state='COMPLETE', run_end=False):
    return task_record.TaskRecord(run, task, f'/r/{NAME}/{run}/{task}/u', {
        'state': state, 'started': started, 'run_end': run_end, 'inputs': [],
        'outputs': [{'key': k, 'uri': f'/r/{NAME}/{run}/{task}/u/{k}', 'type': t,
                     'properties': p} for k, t, p in outputs]})


def _run_records(serving):
    window = json.dumps([
        {'span': 1, 'uri': '/a', 'fingerprint': 'f1', 'num_train': 40, 'num_eval': 10},
        {'span': 2, 'uri': '/b', 'fingerprint': 'f2', 'num_train': 41, 'num_eval': 9}])
    return [
        _record('run-2', 'ImageExampleGen', [('examples', 'Examples', {
            'custom:span': 2.0, 'span': 2.0, 'num_written_train': 41.0, 'num_written_eval': 9.0,
            'num_rejected': 0.0, 'num_found': 50.0, 'window': window})], 1),
        _record('run-2', 'ImageTrainer', [('model', 'Model', {
            'spans': '1,2', 'eval_accuracy': 0.75, 'train_accuracy': 0.5})], 2),
        _record('run-2', 'ServedModelBaseline', [('baseline', 'Model', {
            'served_version': 1.0, 'served_path': f'{serving}/1'})], 3),
        _record('run-2', 'DriftCheck', [('drift', 'ExampleAnomalies', {
            'drift_text': 'drift: label L∞ 0.05 ≤ 0.30 vs the data of served version 1',
            'drift_values': json.dumps([{'feature': 'label', 'value': 0.05}]),
            'drift_reasons': '[]', 'compared_version': 1.0})], 4),
        _record('run-2', 'Evaluator', [('blessing', 'ModelBlessing', {
            'blessed': 1.0, 'blessing_reasons': '[]'})], 5),
        _record('run-2', 'Pusher', [('pushed_model', 'PushedModel', {
            'pushed': 1.0, 'pushed_version': '2', 'pushed_destination': f'{serving}/2'}),
            ('executor-logs', 'Artifact', {})], 6, run_end=True)]


def test_the_summary_from_the_records_gives_a_local_runs_payload(tmp_path):
    serving = str(tmp_path / 'serving')
    os.makedirs(os.path.join(serving, '2'))
    with open(os.path.join(serving, '2', 'saved_model.pb'), 'wb') as handle:
        handle.write(b'm')
    summary = run_end_lib.summary_from_records('run-2', _run_records(serving), serving,
                                               json.dumps({'mode': 'candidate'}))
    data = notify.payload(summary, NAME, 0, None, None, 's3://b/summary.json')
    local = notify.payload(RunSummary(run_id='r', states={}, outputs={}), NAME, 0, None, None,
                           'x')
    assert set(data) == set(local)
    assert (data['outcome'], data['pushed_version'], data['reasons']) == ('pushed', 2, [])
    assert data['drift']['compared_version'] == 1   # a whole number, as locally
    assert data['drift']['text'].startswith('drift: label L∞ 0.05')
    assert data['spans'] == [1, 2] and data['examples'] == {'train': 81, 'eval': 19}
    assert data['eval_accuracy'] == 0.75 and data['push_mode'] == 'candidate'
    assert data['served_now'] == {'version': 2, 'path': os.path.join(serving, '2')}
    assert 'examples: train 41, eval 9, rejected 0 of 50 records (span 2)' in data['summary']
    assert summary.states['Pusher'] == 'COMPLETE' and summary.failure is None


def test_a_not_blessed_run_says_why(tmp_path):
    records = _run_records(str(tmp_path))
    records[4] = _record('run-2', 'Evaluator', [('blessing', 'ModelBlessing', {
        'blessed': 0.0, 'blessing_reasons': json.dumps(['accuracy 0.40 < 0.90'])})], 5)
    records[5] = _record('run-2', 'Pusher', [('pushed_model', 'PushedModel', {
        'pushed': 0.0})], 6, run_end=True)
    data = notify.payload(run_end_lib.summary_from_records('run-2', records, str(tmp_path),
                                                           '{}'), NAME, 0, None, None, 'x')
    assert (data['outcome'], data['reasons']) == ('not pushed', ['accuracy 0.40 < 0.90'])


def test_after_push_applies_retention_writes_the_summary_and_notifies(tmp_path, receiver):
    handler, url = receiver
    root = str(tmp_path / 'pipeline_root')
    serving = str(tmp_path / 'serving')
    for record in _run_records(serving):
        os.makedirs(record.folder.replace('/r/', root + '/', 1))
        task_record.write(record.data, record.folder.replace('/r/', root + '/', 1))
    folder = f'{root}/{NAME}/run-2/Pusher/u'
    hook = tmp_path / 'hook'
    hook.mkdir()
    run_end = {'pipeline_name': NAME, 'pipeline_root': root, 'serving_dir': serving,
               'keep_runs': 1, 'url': url, 'on_finish': f'cp -t {hook}', 'timeout_seconds': 5}
    data = run_end_lib.after_push(run_end, folder, '{}')
    assert data['run_id'] == 'run-2' and data['outcome'] == 'pushed'
    assert data['summary_file'] == os.path.join(folder, run_end_lib.SUMMARY_NAME)
    (_, body), = handler.bodies
    assert json.loads(body) == data
    with open(data['summary_file']) as handle:
        assert json.load(handle) == data
    with open(hook / run_end_lib.SUMMARY_NAME) as handle:
        assert json.load(handle) == data
    assert '  retention: kept 1 run, nothing to delete' in data['summary']


def test_a_failing_receiver_or_a_bad_layout_never_fails_the_task(tmp_path, caplog,
                                                                  monkeypatch):
    # The pause before the retry is notify's own (tests/pipeline/runs/test_notify.py); waiting
    # it out here shows nothing more about the task.
    monkeypatch.setattr(notify, '_RETRY_PAUSE_SECONDS', 0.0)
    root = str(tmp_path / 'pipeline_root')
    folder = f'{root}/{NAME}/run-2/Pusher/u'
    os.makedirs(folder)
    run_end = {'pipeline_name': NAME, 'pipeline_root': root, 'serving_dir': str(tmp_path),
               'keep_runs': 0, 'url': 'http://127.0.0.1:9/refused', 'on_finish': None,
               'timeout_seconds': 1}
    data = run_end_lib.after_push(run_end, folder, '{}')
    assert data['outcome'] == 'did not finish'   # no records: the Pusher did not run
    assert 'notification failed: POST http://127.0.0.1:9/refused' in caplog.text
    assert run_end_lib.after_push(run_end, f'{root}/123/job/Pusher_1', '{}') is None
    assert run_end_lib.after_push({}, folder, '{}') is None   # even a bug is a log line
    assert 'The end of the run failed' in caplog.text


def _executor_input(outputs, inputs=()):
    executor_input = pipeline_spec_pb2.ExecutorInput()
    for key, uri, schema in outputs:
        artifact = executor_input.outputs.artifacts[key].artifacts.add(uri=uri)
        if schema.startswith('title:'):
            artifact.type.instance_schema = schema
        else:
            artifact.type.schema_title = schema
    for key, uri, name in inputs:
        artifact = executor_input.inputs.artifacts[key].artifacts.add(uri=uri, name=name)
        artifact.type.instance_schema = 'title: tfx.Examples\ntype: object\n'
    return executor_input


def test_a_task_record_names_inputs_outputs_and_written_properties(tmp_path):
    task = 'minio://b/kfp/pipeline_root/smoke/run-1/StatisticsGen/u1'
    original = _executor_input(
        [('statistics', f'{task}/statistics', 'title: tfx.ExampleStatistics\ntype: object\n'),
         ('executor-logs', f'{task}/executor-logs', 'system.Artifact')],
        [('examples', 'minio://b/kfp/pipeline_root/smoke/run-1/ImageExampleGen/u0/examples',
          '4')])
    assert task_record.task_root(original) == task
    output_file = tmp_path / 'output_metadata.json'
    output_file.write_text(json.dumps({'artifacts': {'statistics': {'artifacts': [
        {'uri': f'{task}/statistics', 'metadata': {'span': 2, 'split_names': '["train"]'}}]}}}))
    record = task_record.make(original, original, 'COMPLETE', 5.0, None, str(output_file))
    assert record['inputs'] == [{'key': 'examples', 'type': 'Examples', 'id': '4', 'uri':
                                 's3://b/kfp/pipeline_root/smoke/run-1/ImageExampleGen/u0/'
                                 'examples'}]
    assert record['outputs'] == [
        {'key': 'executor-logs', 'uri': 's3://b/kfp/pipeline_root/smoke/run-1/StatisticsGen/u1/'
         'executor-logs', 'type': 'Artifact', 'properties': {}},
        {'key': 'statistics', 'uri': 's3://b/kfp/pipeline_root/smoke/run-1/StatisticsGen/u1/'
         'statistics', 'type': 'ExampleStatistics',
         'properties': {'span': 2, 'split_names': '["train"]'}}]
    assert (record['state'], record['started'], record['run_end']) == ('COMPLETE', 5.0, False)
    local = tmp_path / 'root' / 'run-1' / 'T' / 'u'
    task_record.write(record, str(local))
    [found] = task_record.read_runs(str(tmp_path / 'root'))['run-1']
    assert (found.task, found.data) == ('T', record)
