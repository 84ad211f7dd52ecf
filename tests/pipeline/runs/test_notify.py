"""Unit tests of notifications: the JSON payload of each outcome, delivered to a local HTTP
server in a thread, and failures (refused, HTTP 500, a slow receiver, a failing command) that
say one line and never change the run's exit code."""
import json
import os
import socket
import sys
import time

import pytest

from pipeline.runs import notify
from pipeline.definition.config_retraining import NotifyConfig
from pipeline.runs.summary import RunSummary

from helpers import mlmd_artifact
import notify_receiver

receiver = notify_receiver.receiver   # the fixture


def _artifact(artifact_id=1, **custom):
    artifact = mlmd_artifact(**custom)
    artifact.id = artifact_id
    return artifact


def _summary(pushed=None, blessed=1, reasons=None, failure=None, drift=None, spans='2,3,4'):
    outputs = {
        'Examples': [_artifact(num_written_train=400, num_written_eval=100, span=4)],
        'Model': [_artifact(eval_accuracy=0.9625, spans=spans)],
        'ModelBlessing': [_artifact(blessed=blessed, blessing_reasons=json.dumps(reasons or []))],
    }
    if pushed is not None:
        outputs['PushedModel'] = [_artifact(**pushed)]
    if drift is not None:
        outputs['ExampleAnomalies'] = [_artifact(7, **drift)]
    return RunSummary(run_id='2026-12-04T03:00:00', states={'Pusher': 'COMPLETE'},
                      outputs=outputs, failure=failure)


def _payload(summary, code=0):
    return notify.payload(summary, 'nightly', code, '/out/logs/r.log', '/out/report.html',
                          '/out/logs/r.summary.json')


DRIFT = {'drift_text': 'drift: label L\u221e 0.63 > 0.30 vs the data of served version 1',
         'drift_values': json.dumps([{'feature': 'label', 'measure': 'L-infinity',
                                      'value': 0.63, 'threshold': 0.3, 'exceeded': True}]),
         'drift_reasons': json.dumps(['label L\u221e 0.63 > 0.30 vs the data of served version 1']),
         'compared_version': 1}


def test_pushed_payload_names_version_spans_examples_and_accuracy():
    data = _payload(_summary(pushed={'pushed': 1, 'pushed_version': '3',
                                     'pushed_destination': '/out/serving/3'}))
    assert (data['outcome'], data['pushed_version'], data['reasons']) == ('pushed', 3, [])
    assert data['spans'] == [2, 3, 4] and data['examples'] == {'train': 400, 'eval': 100}
    assert data['eval_accuracy'] == 0.9625 and data['exit_code'] == 0
    assert data['drift'] is None  # not measured: no DriftCheck artifact
    assert (data['run_id'], data['pipeline'], data['log'], data['report']) == (
        '2026-12-04T03:00:00', 'nightly', '/out/logs/r.log', '/out/report.html')
    assert 'pushed: version 3 at /out/serving/3' in data['summary']
    json.dumps(data)  # every field is JSON


def test_not_pushed_payload_gives_the_blessing_reasons_and_the_drift_figures():
    reason = 'label L\u221e 0.63 > 0.30 vs the data of served version 1'
    data = _payload(_summary(pushed={'pushed': 0, 'not_pushed_reason': f'not blessed: {reason}'},
                             blessed=0, reasons=[reason], drift=DRIFT))
    assert (data['outcome'], data['pushed_version'], data['reasons']) == (
        'not pushed', None, [reason])
    assert data['drift']['text'] == DRIFT['drift_text']
    assert data['drift']['values'][0]['value'] == 0.63 and data['drift']['compared_version'] == 1


def test_an_unchanged_model_already_served_is_not_pushed_and_says_why():
    summary = _summary(pushed={'pushed': 1, 'pushed_version': '2', 'pushed_version_reused': 1})
    model = summary.outputs['Model'][0]
    model.custom_properties['training_skipped'].double_value = 1.0
    model.custom_properties['stop_reason'].string_value = 'no new data'
    data = _payload(summary)
    assert data['outcome'] == 'not pushed'
    assert data['reasons'] == ['version 2 already serves this model (no new data)']
    assert data['training_skipped'] == 'no new data'


def test_failed_payload_names_the_stage_and_error_and_keeps_the_exit_code():
    data = _payload(_summary(failure=('ImageTrainer', 'ValueError: bad\nsecond line')), code=1)
    assert (data['outcome'], data['failed_stage'], data['exit_code']) == (
        'failed', 'ImageTrainer', 1)
    assert data['error'] == 'ValueError: bad\nsecond line'
    assert data['reasons'] == ['ImageTrainer: ValueError: bad']


def _finish(tmp_path, **notify_fields):
    data = _payload(_summary(pushed={'pushed': 1, 'pushed_version': '1'}))
    data['summary_file'] = str(tmp_path / 'logs' / 'r.summary.json')
    said = []
    failures = notify.finish(NotifyConfig(**notify_fields), data, said.append)
    return data, said, failures


def test_the_payload_is_posted_as_json_and_the_summary_file_is_written(tmp_path, receiver):
    handler, url = receiver
    data, said, failures = _finish(tmp_path, url=url)
    assert failures == [] and said == [f'Notified {url}']
    (content_type, body), = handler.bodies
    assert content_type.startswith('application/json') and json.loads(body) == data
    with open(data['summary_file']) as handle:
        assert json.load(handle) == data
    assert os.listdir(tmp_path / 'logs') == ['r.summary.json']  # no temp file left


def test_http_500_is_retried_once_then_one_line(tmp_path, receiver):
    handler, url = receiver
    handler.status = 500
    _, said, failures = _finish(tmp_path, url=url)
    assert len(handler.bodies) == 2  # one retry
    assert said == [f'notification failed: POST {url}: HTTP 500 Internal Server Error '
                    '(2 attempts)']
    assert len(failures) == 1


def test_a_slow_receiver_times_out_quickly(tmp_path, receiver):
    handler, url = receiver
    handler.delay = 3.0
    started = time.monotonic()
    _, said, _ = _finish(tmp_path, url=url, timeout_seconds=0.5)
    assert time.monotonic() - started < 2.5  # 2 x 0.5 s, not 2 x 3 s
    assert said == [f'notification failed: POST {url}: timed out after 0.5 s (2 attempts)']


def test_a_refused_port_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(notify, '_RETRY_PAUSE_SECONDS', 0.0)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    _, said, _ = _finish(tmp_path, url=f'http://127.0.0.1:{port}/')
    assert len(said) == 1 and said[0].startswith('notification failed: POST ')
    assert 'refused' in said[0].lower()


def test_on_finish_gets_the_summary_path_as_argument_and_in_the_environment(tmp_path):
    seen, hook = tmp_path / 'seen.txt', tmp_path / 'hook.py'
    hook.write_text(f'import os, sys\nopen({str(seen)!r}, "w").write(sys.argv[-1] + "|" + '
                    f'os.environ["{notify.ENV_VAR}"] + "|" + open(sys.argv[-1]).read())\n')
    data, said, failures = _finish(tmp_path, on_finish=f'{sys.executable} {hook} --flag')
    path, env_path, text = seen.read_text().split('|', 2)
    assert path == env_path == data['summary_file'] and json.loads(text) == data
    assert failures == [] and said[0].startswith('On-finish command done: ')


@pytest.mark.parametrize('command, message', [
    (f'{sys.executable} -c "raise SystemExit(3)"', 'on-finish command exited with status 3: '),
    ('/no/such/hook', 'on-finish command not found: /no/such/hook'),
])
def test_a_failing_on_finish_command_is_one_line(tmp_path, command, message):
    _, said, failures = _finish(tmp_path, on_finish=command)
    assert len(said) == 1 and said[0].startswith(f'notification failed: {message}')
    assert len(failures) == 1


def test_after_run_never_raises_and_reports_a_bug_in_one_line(tmp_path):
    class Config:
        name, notify = 'nightly', NotifyConfig()
    said = []
    # A summary missing what a payload needs (outputs is None) must not fail the run.
    broken = RunSummary(run_id='r', states={}, outputs=None)
    assert notify.after_run(Config, broken, 0, str(tmp_path / 'r.log'), None, said.append)
    assert len(said) == 1 and said[0].startswith('notification failed: ')


@pytest.mark.parametrize('fields, message', [
    ({'url': 'ftp://x'}, 'url must be an http'), ({'on_finish': ' '}, 'on_finish must be'),
    ({'on_finish': 'hook "unclosed'}, 'on_finish must be a command line: No closing quotation'),
    ({'timeout_seconds': 0}, 'timeout_seconds must be')])
def test_bad_settings_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        NotifyConfig(**fields)


def test_a_cached_pusher_is_an_earlier_runs_push_not_a_new_one():
    summary = _summary(pushed={'pushed': 1, 'pushed_version': '1'})
    summary.states['Pusher'] = 'CACHED'
    data = _payload(summary)
    assert (data['outcome'], data['pushed_version']) == ('not pushed', None)
    assert data['reasons'] == ['version 1 already serves this model: pushed by an earlier run '
                               '(the Pusher was cached)']
