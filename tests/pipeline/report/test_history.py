"""Unit tests of the report's history: rows per run (and rollback) and the accuracy picture.

RunSummaries are built here as `pipeline.summary` reads them from ML Metadata; the history of
real runs read back from ML Metadata is checked in test_report_e2e.py.
"""
import datetime
import json
import os

from PIL import Image

from pipeline import summary as summary_lib
from pipeline.report import history
from pipeline.summary import RunSummary

from helpers import mlmd_artifact


def _artifact(artifact_id=1, **custom):
    artifact = mlmd_artifact(**custom)
    artifact.id = artifact_id
    return artifact


def _run(run_id, created_s, accuracy, pushed, spans='1', blessed=1, reasons=(), drift=None,
         states=None):
    outputs = {'Examples': [_artifact(num_written_train=80, num_written_eval=20, span=1)],
               'Model': [_artifact(eval_accuracy=accuracy, spans=spans)],
               'ModelBlessing': [_artifact(blessed=blessed,
                                           blessing_reasons=json.dumps(list(reasons)))],
               'PushedModel': [_artifact(**pushed)]}
    if drift:
        outputs['ExampleAnomalies'] = [_artifact(9, drift_text=drift, drift_values='[]')]
    return RunSummary(run_id=run_id, states=states or {'Pusher': 'COMPLETE'}, outputs=outputs,
                      created_ms=created_s * 1000)


def _history(tmp_path, monkeypatch, current=None):
    runs = [
        _run('day-1', 100, 0.95, {'pushed': 1, 'pushed_version': '1'}),
        _run('day-2', 200, 0.97, {'pushed': 1, 'pushed_version': '2'}, spans='1,2',
             drift='drift: largest label L\u221e 0.04 <= 0.30 vs the data of served version 1'),
        _run('day-3', 300, 0.99, {'pushed': 0}, spans='1,2,3', blessed=0,
             reasons=['label L\u221e 0.63 > 0.30 vs the data of served version 2'],
             drift='drift: label L\u221e 0.63 > 0.30 vs the data of served version 2'),
        RunSummary(run_id='day-4', states={'ImageExampleGen': 'FAILED'}, outputs={},
                   created_ms=400_000),
    ]
    monkeypatch.setattr(summary_lib, 'read_runs', lambda path, name: list(runs))
    out = tmp_path / 'out'
    os.makedirs(out / 'logs')
    with open(out / 'logs' / 'day-4.summary.json', 'w') as handle:  # pipeline/notify.py's file
        json.dump({'outcome': 'failed', 'reasons': ['ImageExampleGen: Input is empty']}, handle)
    with open(out / 'rollbacks.jsonl', 'w') as handle:
        when = datetime.datetime.fromtimestamp(500).isoformat()  # as rollback.py records it
        handle.write(json.dumps({'time': when, 'version': 3,
                                 'copy_of': 1, 'previously_served': 2}) + '\n')
    return history.read_rows('unused.sqlite', 'p', str(out), current), out


def test_one_row_per_run_and_rollback_in_time_order_with_reasons(tmp_path, monkeypatch):
    rows, _ = _history(tmp_path, monkeypatch)
    cells = [row.cells() for row in rows]
    assert [c[0] for c in cells][:4] == ['day-1', 'day-2', 'day-3', 'day-4']
    assert cells[0] == ['day-1', '1', '80 / 20', '0.9500', 'not measured', 'pushed: version 1']
    assert cells[1][1] == '1, 2'
    assert cells[1][4] == 'largest label L\u221e 0.04 <= 0.30 vs the data of served version 1'
    assert cells[2][5] == ('not pushed: label L\u221e 0.63 > 0.30 vs the data of served '
                           'version 2')
    # ML Metadata says only that it failed; the run's JSON summary says why.
    assert cells[3][5] == 'failed: ImageExampleGen: Input is empty'
    assert cells[4][0].startswith('rollback at ') and cells[4][5] == (
        'rollback: version 3 = copy of version 1')


def test_this_run_replaces_its_metadata_reading_with_its_failure(tmp_path, monkeypatch):
    current = RunSummary(run_id='day-4', states={}, outputs={},
                         failure=('ImageExampleGen', 'IngestionError: no span folder'))
    rows, _ = _history(tmp_path, monkeypatch, current)
    assert [r.cells()[5] for r in rows if r.run == 'day-4'] == [
        'failed: ImageExampleGen: IngestionError: no span folder']


def test_accuracy_per_served_version_takes_a_rollback_copy_from_its_source(tmp_path,
                                                                            monkeypatch):
    rows, out = _history(tmp_path, monkeypatch)
    assert history.served_versions(rows) == [('v1', 0.95, 1), ('v2', 0.97, 2),
                                             ('v3 (= v1)', 0.95, 3)]
    for version in ('1', '2', '3'):
        os.makedirs(out / 'serving' / version)
        (out / 'serving' / version / 'saved_model.pb').write_bytes(b'x')
    pictures = tmp_path / 'pictures'
    os.makedirs(pictures)
    text = history.section(rows, str(out / 'serving'), str(pictures))
    assert text.count('<tr>') == 1 + len(rows)
    assert 'Served now: version 3.' in text
    with Image.open(pictures / 'history_accuracy.png') as image:
        assert image.size[0] >= 400 and image.size[1] >= 250


def test_no_run_yet_says_so(tmp_path):
    assert history.section([], str(tmp_path), str(tmp_path)) == (
        '<p>No run of this pipeline is recorded yet.</p>')
    assert summary_lib.read_runs(str(tmp_path / 'absent.sqlite'), 'p') == []


def test_the_anomalies_section_reads_the_validators_artifact_not_the_drift_check(tmp_path):
    from tensorflow_metadata.proto.v0 import anomalies_pb2
    from pipeline.report import sections
    validator = _artifact(3)
    validator.uri = str(tmp_path / 'validator')
    validator.properties['split_names'].string_value = '["train"]'
    os.makedirs(tmp_path / 'validator' / 'Split-train')
    (tmp_path / 'validator' / 'Split-train' / 'SchemaDiff.pb').write_bytes(
        anomalies_pb2.Anomalies().SerializeToString())
    drift = _artifact(9, drift_text='drift: label L\u221e 0.63 > 0.30')  # newer, no files
    summary = RunSummary(run_id='r', states={}, outputs={'ExampleAnomalies': [validator, drift]})
    assert sections.anomalies_section(summary) == '<p>train: <span class="yes">none</span></p>'
