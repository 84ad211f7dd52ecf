"""End-to-end: a real, messy CSV through the real pipeline (LocalDagRunner, marked e2e).

scikit-learn's breast-cancer table (569 tumours, 30 measurements) as a user would export it: the
label column is `diagnosis` (not `label`) and sits in the middle, ~10% of six measurements are
empty, a `patient_id` column is mostly empty, a `scan_date` column is dropped by the config, and
five rows have structural faults. The schema is inferred (no curated one). One `runner.py` run, as
a user runs it (flags, and a settings file for the dropped column, which has no flag), is read
by the first four tests: nothing is lost but the structural faults, the counts reconcile, TFDV
raises no anomaly for the empty values, the model trains with the train means imputed and
indicators for the empty values, and the console says what was rejected and imputed.

A second pipeline, whose table has too many ragged rows, fails ingestion; the quarantine file
named in the error exists after TFX removed the failed execution's Examples folder.
"""
import dataclasses
import glob
import json
import os
import re
import sys

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
import tensorflow as tf

from core import inputs
from components.evaluate.params import EvalParams
from components.ingest.formats.rules import IngestionError
from training import export
from pipeline.definition import config as config_lib
from pipeline.runs import summary as summary_lib

from helpers import run_command, run_pipeline

pytestmark = pytest.mark.e2e

EMPTY_COLUMNS = ('mean radius', 'mean texture', 'worst area', 'mean smoothness',
                 'area error', 'worst concavity')
BAD_ROWS = 5  # 2 ragged, 1 without a diagnosis, 2 with 'n/a' in a measurement


def _messy_table(path, ragged=2):
    """Writes the table; returns {column: empty values} and the number of clean rows."""
    cancer = load_breast_cancer()
    rng = np.random.RandomState(7)
    names = list(cancer.feature_names)
    header = ['patient_id', 'scan_date'] + names[:10] + ['diagnosis'] + names[10:]
    empties = {c: 0 for c in EMPTY_COLUMNS + ('patient_id',)}
    lines = [','.join(header)]
    for i, (row, target) in enumerate(zip(cancer.data, cancer.target)):
        values = {n: repr(float(v)) for n, v in zip(names, row)}
        for column in EMPTY_COLUMNS:
            if rng.rand() < 0.10:
                values[column] = ''
                empties[column] += 1
        values['patient_id'] = str(842302 + 17 * i) if rng.rand() < 0.15 else ''
        empties['patient_id'] += values['patient_id'] == ''
        values['scan_date'] = f'2024-{1 + i % 12:02d}-{1 + i % 28:02d}'
        values['diagnosis'] = str(cancer.target_names[target])
        lines.append(','.join(values[c] for c in header))
    good = len(lines) - 1
    template = lines[1].split(',')
    for i in range(ragged):
        lines.insert(40 + 50 * i, ','.join(template + ['extra']))
    lines.insert(200, ','.join(template[:12] + [''] + template[13:]))          # no diagnosis
    for i in range(2):
        lines.insert(300 + i, ','.join(template[:2] + ['n/a'] + template[3:]))  # mean radius
    with open(path, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')
    return empties, good


def _config(base, data, **ingest):
    cfg = config_lib.smoke_config(data, os.path.join(base, 'out'), source='csv',
                                  schema_path=None)  # inferred by SchemaGen
    train = dataclasses.replace(cfg.train, train_steps=120)
    return dataclasses.replace(cfg, train=train, eval=EvalParams(min_accuracy=0.85),
                               ingest=dataclasses.replace(
                                   cfg.ingest, label_column='diagnosis',
                                   drop_columns=('scan_date',), **ingest))


@pytest.fixture(scope='module')
def messy(tmp_path_factory):
    """The run the first four tests read: `runner.py` with flags (the label column, the steps,
    the bar), scan_date dropped by a settings file (drop_columns has no flag), no Python edited.
    It was two runs of the same table before: this one in-process from _config, and the same
    by runner.py with flags alone; _config still builds the failing run's settings."""
    import runner
    from pipeline.definition import presets
    base = tmp_path_factory.mktemp('messy_csv')
    os.makedirs(base / 'data')
    empties, good = _messy_table(str(base / 'data' / 'tumours.csv'))
    settings = base / 'settings.toml'
    settings.write_text('[ingest]\ndrop_columns = ["scan_date"]\n')
    argv = ['--local', '--source', 'csv', '--data', str(base / 'data'), '--label-column',
            'diagnosis', '--output', str(base / 'out'), '--config', 'smoke', '--config-file',
            str(settings), '--steps', '120', '--min-accuracy', '0.85']
    result = run_command([sys.executable, 'runner.py', *argv], timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    cfg, _ = presets.from_args(runner.build_parser().parse_args(argv))
    # The settings _config gives the in-process runs, but for where the output goes.
    expected = _config(str(base), str(base / 'data'))
    assert (cfg.ingest, cfg.train.train_steps, cfg.eval.min_accuracy, cfg.schema_path) == (
        expected.ingest, 120, 0.85, None)
    return empties, good, summary_lib.read_latest_run(cfg.metadata_path, cfg.name), result


def _train_rows(examples):
    files = glob.glob(os.path.join(examples.uri, 'Split-train', '*.gz'))
    return [tf.train.Example.FromString(r.numpy())
            for r in tf.data.TFRecordDataset(files, compression_type='GZIP')]


def test_only_structural_faults_are_lost_and_the_counts_reconcile(messy):
    empties, good, run, _ = messy
    # Inferred schema, validation and the gate pass: empty values are not an anomaly.
    assert {s for n, s in run.states.items() if n != 'Resolver'} == {'COMPLETE'}
    assert 'SchemaGen' in run.states and 'AnomalyGate' in run.states
    (examples,) = run.outputs['Examples']
    prop = lambda name: summary_lib.custom_property(examples, name)  # noqa: E731
    assert prop('num_found') == good + BAD_ROWS
    assert prop('num_written_train') + prop('num_written_eval') == good
    assert (prop('num_rejected'), prop('num_rejected_wrong_column_count'),
            prop('num_rejected_missing_label'), prop('num_rejected_non_numeric')) == (
                BAD_ROWS, 2, 1, 2)
    assert json.loads(prop('missing_values')) == empties
    assert sum(empties.values()) > 600  # ~10% of six columns and most patient ids
    assert json.loads(prop('class_names')) == ['benign', 'malignant']


def test_the_train_means_are_imputed_with_an_indicator_per_column(messy):
    _, _, run, _ = messy
    (examples,) = run.outputs['Examples']
    spec = inputs.InputSpec.from_json(summary_lib.custom_property(examples, 'input_spec'))
    numeric = {name: mean for name, mean, _ in spec.numeric}
    assert 'scan_date' not in numeric and 'scan_date' not in spec.categorical
    assert len(numeric) == 31 and spec.categorical == ()
    assert set(spec.missing) == set(EMPTY_COLUMNS) | {'patient_id'}
    rows = _train_rows(examples)
    for column in spec.missing:
        present = [r.features.feature[column].float_list.value[0] for r in rows
                   if column in r.features.feature]
        assert 0 < len(present) < len(rows)
        assert numeric[column] == pytest.approx(np.mean(present), rel=1e-6)


def test_the_model_trains_and_serves_rows_with_empty_values(messy):
    _, _, run, _ = messy
    model = run.trained_model()
    assert summary_lib.custom_property(model, 'eval_accuracy') >= 0.85
    assert summary_lib.custom_property(run.outputs['PushedModel'][0], 'pushed') == 1
    serving = os.path.join(model.uri, 'Format-Serving')
    (examples,) = run.outputs['Examples']
    with open(os.path.join(serving, export.INPUT_SPEC_FILE)) as handle:  # recorded with it
        assert handle.read() == summary_lib.custom_property(examples, 'input_spec')
    rows = [r for r in _train_rows(examples)
            if not set(EMPTY_COLUMNS) <= set(r.features.feature)][:8]
    out = tf.saved_model.load(serving).signatures['serving_default'](
        examples=tf.constant([r.SerializeToString() for r in rows]))
    assert np.isfinite(out['probabilities'].numpy()).all() and len(rows) == 8


def test_too_many_structural_faults_fail_and_the_quarantine_outlives_the_artifact(
        tmp_path):
    os.makedirs(tmp_path / 'data')
    _messy_table(str(tmp_path / 'data' / 'tumours.csv'), ragged=12)
    cfg = _config(str(tmp_path), str(tmp_path / 'data'))
    with pytest.raises(IngestionError) as raised:
        run_pipeline(cfg)
    message = str(raised.value)
    assert message.startswith('Rejected 15 of 584 records (2.6%), more than the allowed 1.0%')
    assert "missing_label 1 (by column: 'diagnosis' 1)" in message
    assert "non_numeric 2 (by column: 'mean radius' 2)" in message
    assert len([line for line in message.splitlines() if line.startswith('  tumours.csv:')]) <= 5
    path = re.search(r'Every rejected record, with its reason: (\S+)$', message).group(1)
    assert path.startswith(os.path.join(cfg.pipeline_root, '_quarantine', 'ImageExampleGen'))
    with open(path) as handle:
        reasons = [json.loads(line)['reason'] for line in handle]
    assert sorted(reasons) == ['missing_label'] + ['non_numeric'] * 2 + [
        'wrong_column_count'] * 12
    # TFX removed the failed execution's Examples (and the quarantine inside them).
    examples_dir = os.path.join(cfg.pipeline_root, 'ImageExampleGen', 'examples')
    assert not glob.glob(os.path.join(examples_dir, '*', 'Quarantine'))


def test_a_user_runs_it_from_the_command_line(messy):
    """The table through `runner.py`: the label column named by a flag, no Python edited. The
    console says what was rejected and what was imputed."""
    empties, _, _, result = messy
    lines = result.stdout.splitlines()
    assert f'rejected {BAD_ROWS} (' in next(x for x in lines if x.startswith('  examples:'))
    imputed = next(x for x in lines if x.startswith('  input: table of '))
    assert 'imputed with the train mean' in imputed
    for column, count in empties.items():
        assert f'{column} {count}' in imputed
    assert '  blessed: yes' in lines
    assert next(x for x in lines if x.startswith('  pushed:')).startswith(
        '  pushed: version 1 at ')
