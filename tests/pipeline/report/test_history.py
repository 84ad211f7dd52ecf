"""Unit tests of the report's history: rows per run (and rollback) and the accuracy picture.

RunSummaries are built here as `pipeline.runs.summary` reads them from ML Metadata; the history of
real runs read back from ML Metadata is checked in test_report_e2e.py.
"""
import datetime
import json
import os

from PIL import Image

from core import properties, serving_labels
from pipeline.runs import summary as summary_lib
from pipeline.report import history, plots
from pipeline.runs.summary import RunSummary

from helpers import mlmd_artifact


def _artifact(artifact_id=1, **custom):
    artifact = mlmd_artifact(**custom)
    artifact.id = artifact_id
    return artifact


def _run(run_id, created_s, accuracy, pushed, spans='1', blessed=1, reasons=(), drift=None,
         states=None, figures=None):
    """figures: the Evaluator's (candidate_accuracy, served_accuracy, compared_version, ...);
    None for a run whose blessing records none."""
    outputs = {'Examples': [_artifact(num_written_train=80, num_written_eval=20, span=1)],
               'Model': [_artifact(eval_accuracy=accuracy, spans=spans)],
               'ModelBlessing': [_artifact(blessed=blessed,
                                           blessing_reasons=json.dumps(list(reasons)),
                                           **(figures or {}))],
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
    with open(out / 'logs' / 'day-4.summary.json', 'w') as handle:  # pipeline/runs/notify.py's file
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


def _compared(candidate, examples, served=None, version=-1, **more):
    """The blessing's figures as our Evaluator records them (components/evaluate/figures.py)."""
    figures = {properties.CANDIDATE_ACCURACY: candidate, properties.EVAL_EXAMPLES: examples,
               properties.COMPARED_VERSION: version, **more}
    if served is not None:
        figures[properties.SERVED_ACCURACY] = served
    return figures


def _compared_history(tmp_path, monkeypatch, labels=None):
    """Three runs that kept the Evaluator's figures (the trainer's eval accuracy differs: it is
    not what the history shows), then a rollback of version 3 to a copy of version 2."""
    runs = [
        _run('day-1', 100, 0.5, {'pushed': 1, 'pushed_version': '1'},
             figures=_compared(0.9, 20)),
        _run('day-2', 200, 0.5, {'pushed': 1, 'pushed_version': '2'}, spans='1,2',
             figures=_compared(0.925, 40, served=0.875, version=1)),
        _run('day-3', 300, 0.5, {'pushed': 1, 'pushed_version': '3'}, spans='1,2,3',
             figures=_compared(0.95, 60, served=0.9, version=2)),
        _run('day-4', 400, 0.5, {'pushed': 0}, spans='2,3,4', blessed=1,
             figures=_compared(0.9, 60, not_compared="served version 3: served model predicts "
                               "classes ['0', '1']")),
    ]
    monkeypatch.setattr(summary_lib, 'read_runs', lambda path, name: list(runs))
    out = tmp_path / 'out'
    os.makedirs(out / 'logs')
    with open(out / 'rollbacks.jsonl', 'w') as handle:
        when = datetime.datetime.fromtimestamp(500).isoformat()
        handle.write(json.dumps({'time': when, 'version': 4, 'copy_of': 2}) + '\n')
    for version in ('1', '2', '3', '4'):
        os.makedirs(out / 'serving' / version)
        (out / 'serving' / version / 'saved_model.pb').write_bytes(b'x')
    if labels is not None:
        serving_labels.write(str(out / 'serving'), 'model', labels)
    return history.read_rows('unused.sqlite', 'p', str(out)), out


def test_each_row_shows_the_candidate_against_the_served_model_on_the_same_examples(
        tmp_path, monkeypatch):
    rows, _ = _compared_history(tmp_path, monkeypatch)
    assert [row.cells()[3] for row in rows] == [
        '0.9000 on 20 examples (nothing served)',
        '0.9250 vs 0.8750 (served version 1) on the same 40 examples',
        '0.9500 vs 0.9000 (served version 2) on the same 60 examples',
        '0.9000 on 60 examples (served version 3 not compared)',
        '']  # the rollback measured nothing
    assert history.HEADER[3] == 'eval accuracy: candidate vs served, same examples'


def test_the_picture_pairs_each_version_with_the_served_model_on_its_examples(
        tmp_path, monkeypatch):
    rows, out = _compared_history(tmp_path, monkeypatch,
                                  labels=serving_labels.Labels(stable=4, canary=3))
    # A rollback's copy keeps the pair of the version it copies.
    assert [(p.label, p.candidate, p.compared and p.compared.served)
            for p in history.points(rows)] == [
        ('v1', 0.9, None), ('v2', 0.925, 0.875), ('v3', 0.95, 0.9), ('v4 (= v2)', 0.925, 0.875)]
    drawn = {}
    real = plots.accuracy_per_version

    def spy(labels, accuracies, served, folder, **options):
        drawn.update(labels=labels, accuracies=accuracies, served=served, **options)
        return real(labels, accuracies, served, folder, **options)

    monkeypatch.setattr(plots, 'accuracy_per_version', spy)
    pictures = tmp_path / 'pictures'
    os.makedirs(pictures)
    text = history.section(rows, str(out / 'serving'), str(pictures))
    assert drawn['labels'] == ['v1 nothing served\n20 examples', 'v2 vs v1\n40 examples',
                               'v3 vs v2\n60 examples\n(canary)',
                               'v4 (= v2) vs v1\n40 examples\n(stable)']
    assert drawn['accuracies'] == [0.9, 0.925, 0.95, 0.925]
    assert drawn['served_then'] == [None, 0.875, 0.9, 0.875]
    assert (drawn['served'], drawn['canary']) == (3, 2)
    assert ('Served now: version 4. Labels (models.config): stable version 4, canary version 3.'
            in text)
    assert "on the same examples, the eval splits of that run's training window" in text


def _pixels(path, colour):
    with Image.open(path) as image:
        return sum(1 for pixel in image.convert('RGB').getdata() if pixel == colour)


def test_the_served_models_bars_are_drawn_beside_the_candidates_only_where_compared(tmp_path):
    grey = (0xbd, 0xbd, 0xbd)   # the served model's bars
    plain = plots.accuracy_per_version(['v1', 'v2'], [0.9, 0.92], 1, str(tmp_path),
                                       name='plain.png')
    paired = plots.accuracy_per_version(['v1', 'v2'], [0.9, 0.92], 1, str(tmp_path),
                                        name='paired.png', served_then=[None, 0.88])
    # A few anti-aliased pixels of text can be that grey; a bar is hundreds.
    assert _pixels(tmp_path / plain, grey) < 50
    assert _pixels(tmp_path / paired, grey) > 500
