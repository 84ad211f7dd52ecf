"""Unit tests of the report's page on RunSummaries built here as `pipeline.runs.summary` reads them
from ML Metadata, over small artifacts (tests/support/py). The readers and
pictures: test_readers.py. The whole-pipeline report is checked in test_report_e2e.py (two runs
into one output) and tests/e2e/test_serving_e2e.py.
"""
import json
import os
import re

import numpy as np
from PIL import Image

from core import inputs
from pipeline.runs import summary as summary_lib
from pipeline.report import page, plots, readers
from training.result import TrainResult
from report_inputs import artifact, write_anomalies, write_statistics


def _headings(text):
    return re.findall(r'<h2 id="([^"]+)">', text)


def _trainer_properties(**overrides):
    """The ImageTrainer execution's properties as ML Metadata records them (see summary.py)."""
    properties = {'image_height': 8, 'image_width': 8, 'channels': 1, 'train_steps': 0,
                  'train_epochs': 2.0, 'global_batch_size': 32, 'accumulation_steps': 4,
                  'mixed_precision': 'auto', 'optimizer': 'adamw', 'learning_rate': 0.003,
                  'warmup_steps': 20, 'model_builder': 'models.resnet.build_model',
                  'warm_start': 0, 'augment': 'standard', 'flip': 1}
    properties.update(overrides)
    return properties


def _settings(asked, model):
    """The settings rows of the trainer's Model as the report reads it (sections.py)."""
    return readers.training_settings(
        asked, TrainResult.from_properties(summary_lib.custom_properties(model)),
        readers.model_input(model), None)


def test_a_run_stopped_by_the_gate_reports_only_the_stages_that_ran(tmp_path):
    stats = write_statistics(str(tmp_path / 'stats'), {'train': {'a': 3}, 'eval': {'a': 1}})
    anomalies = write_anomalies(str(tmp_path / 'anomalies'), 'train')
    examples = artifact(tmp_path / 'examples', class_names=json.dumps(['a']))
    summary = summary_lib.RunSummary(
        run_id='r1', states={'StatisticsGen': 'COMPLETE', 'AnomalyGate': 'FAILED'},
        outputs={'Examples': [examples], 'ExampleStatistics': [stats],
                 'ExampleAnomalies': [anomalies]})
    path = page.write_report(summary, str(tmp_path / 'out'))
    text = open(path, encoding='utf-8').read()
    assert _headings(text) == ['data', 'anomalies']  # nothing about training, blessing, push
    assert 'train: <span class="no">anomalies</span>' in text and 'value &quot;x&quot;' in text
    assert 'did not run' not in text and 'No training' not in text
    assert os.path.exists(tmp_path / 'out' / 'reports' / 'r1' / 'data_classes.png')


def test_settings_section_states_how_the_model_was_trained(tmp_path):
    model = artifact(tmp_path / 'model', artifact_id=5, mixed_precision='mixed_bfloat16',
                      num_replicas=2.0, num_workers=2.0, input_height=28.0, input_width=32.0,
                      input_channels=3.0,
                      input_statement='trained at 28x32x3; 85% of images 28x32, 15% resized',
                      warm_start_version=-1.0)
    examples = artifact(tmp_path / 'examples', num_written_train=1000)
    summary = summary_lib.RunSummary(
        run_id='r1', states={'ImageTrainer': 'COMPLETE'},
        outputs={'Model': [model], 'Examples': [examples]},
        execution_properties={'ImageTrainer': _trainer_properties()})
    text = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    assert _headings(text) == ['settings']
    rows = dict(re.findall(r'<tr><td>([^<]+)</td><td>([^<]+)</td></tr>', text))
    # The Model's recorded input shape wins over the execution's (digits-default) 8x8x1.
    assert rows['input size'] == '28\u00d732\u00d73 (height \u00d7 width \u00d7 channels)'
    assert rows['input shape chosen'].startswith('trained at 28x32x3; 85%')
    assert rows['replicas'] == '2' and rows['training processes'] == '2'
    assert rows['precision policy'] == 'mixed_bfloat16 (asked: auto)'
    assert rows['batch'] == '32 per micro-batch (all replicas together; 16 per replica)'
    assert rows['accumulation'] == '4 micro-batches per update, so 128 examples per update'
    # A Model without steps_run (the trainer recorded only what was asked): the most 2 epochs
    # could take over 1000 examples at 128 per update (7 per epoch).
    assert rows['steps'] == 'up to 14 updates (2 epochs over about 1000 train examples)'
    assert rows['learning rate'] == '0.003, cosine decay to 0 after 20 warm-up steps'
    assert rows['optimizer'] == 'adamw' and rows['model'] == 'models.resnet.build_model'
    assert rows['augmentation'] == 'standard + flip (train images only)'
    assert 'warm start' not in rows


def test_settings_say_how_long_training_ran_and_why_it_stopped(tmp_path):
    reason = "ran the maximum of 20 epochs (best 0.9000 at epoch 18); restored epoch 18's weights"
    model = artifact(tmp_path / 'model', steps_run=400.0, epochs_run=20.0,
                      held_out_examples=130.0, stop_reason=reason, xla=0.0,
                      xla_reason='asked', examples_per_second=900.0,
                      epoch_seconds='[3.0, 1.0]', input_wait_fraction=0.3)
    rows = dict(_settings(
        _trainer_properties(train_epochs=20.0, patience=3, validation_percent=10,
                            time_budget_minutes=15.0), model))
    assert rows['steps'] == '400 updates'
    assert rows['training length'] == f'20 epochs, {reason} (held-out 130 examples of train)'
    # The same sentences as the run summary's (summary_text.step_text and speed_text).
    assert rows['train step'] == 'XLA off'
    assert rows['speed'] == ('900 img/s; epochs 1.0 s (the first 3.0 s, with tracing); input '
                             'wait 30%: input-bound')
    assert rows['early stopping'] == ('patience 3 epochs on 10% of the train split held out; '
                                      'time budget 15 min')


def test_settings_fall_back_to_the_execution_when_the_model_records_no_shape(tmp_path):
    model = artifact(tmp_path / 'model', mixed_precision='float32')  # no input_*, no replicas
    rows = dict(_settings(
        _trainer_properties(train_steps=400, train_epochs=0.0, accumulation_steps=1), model))
    assert rows['input size'].startswith('8\u00d78\u00d71 ') and 'train step' not in rows
    assert rows['replicas'] == 'not recorded' and rows['steps'] == '400 updates'
    assert rows['accumulation'] == '1 micro-batch per update, so 32 examples per update'


def test_settings_of_a_model_recorded_by_an_older_version(tmp_path):
    # tests/fixtures/model_recorded_older.json: `replicas` for num_replicas, no flip recorded
    # (so the execution's flip 1 says it), a diverged eval loss as text.
    from google.protobuf import json_format
    from ml_metadata.proto import metadata_store_pb2
    with open(os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures',
                           'model_recorded_older.json')) as handle:
        model = json_format.ParseDict(json.load(handle), metadata_store_pb2.Artifact())
    rows = dict(_settings(_trainer_properties(train_epochs=3.0, global_batch_size=0), model))
    assert rows['replicas'] == '1'
    assert rows['batch'] == '16 per micro-batch (all replicas together; 16 per replica)'
    assert rows['steps'] == '3 updates'
    assert rows['training length'] == ('3 epochs at batch 16, ran the maximum of 3 epochs (best '
                                       '0.3667 at epoch 3) (held-out 30 examples of train)')
    assert rows['precision policy'] == 'float32 (asked: auto)'  # no reason recorded then
    assert rows['augmentation'] == 'standard + flip (train images only)'
    assert rows['input size'].startswith('8\u00d78\u00d71 ')


def test_a_csv_run_has_no_image_size_table_and_its_input_is_a_table(tmp_path):
    stats = write_statistics(str(tmp_path / 'stats'), {'train': {'1': 40, '2': 50},
                                                        'eval': {'1': 9, '2': 11}},
                              image_sizes=False)
    spec = inputs.InputSpec(kind='tabular', numeric=(('alcohol', 13.0, 0.8), ('ash', 2.4, 0.3)))
    examples = artifact(tmp_path / 'examples', class_names=json.dumps(['1', '2']),
                         input_spec=spec.to_json(), num_written_train=90)
    summary = summary_lib.RunSummary(
        run_id='csv', states={'StatisticsGen': 'COMPLETE', 'ImageTrainer': 'FAILED'},
        outputs={'Examples': [examples], 'ExampleStatistics': [stats]},
        execution_properties={'ImageTrainer': _trainer_properties()})
    text = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    assert _headings(text) == ['data', 'settings']
    assert 'Image sizes' not in text and 'height' not in text and '\u00d7' not in text
    assert '<td>input</td><td>table: 2 numeric, 0 categorical columns</td>' in text
    # The trainer failed before it recorded anything: what it was asked is still shown.
    assert '<td>precision policy</td><td>auto (asked; no policy recorded)</td>' in text
    assert 'augmentation' not in text  # images only


def test_each_run_keeps_its_report_and_report_html_is_the_newest(tmp_path):
    out = str(tmp_path / 'out')
    first_stats = write_statistics(str(tmp_path / 's1'), {'train': {'a': 3}, 'eval': {'a': 1}})
    second_stats = write_statistics(str(tmp_path / 's2'), {'train': {'a': 9, 'b': 8},
                                                            'eval': {'a': 2, 'b': 2}})
    for run_id, stats in (('2026-12-02T14:20:40.1', first_stats),
                          ('2026-12-02T14:25:03.7', second_stats)):
        page.write_report(summary_lib.RunSummary(
            run_id=run_id, states={'StatisticsGen': 'COMPLETE'},
            outputs={'ExampleStatistics': [stats]}), out)
        if run_id.startswith('2026-12-02T14:20'):
            first_picture = open(os.path.join(
                out, 'reports', '2026-12-02T14_20_40.1', 'data_classes.png'), 'rb').read()
    reports = os.path.join(out, 'reports')
    assert sorted(n for n in os.listdir(reports) if n.endswith('.html')) == [
        '2026-12-02T14_20_40.1.html', '2026-12-02T14_25_03.7.html']
    # The first run's page and pictures are its own: the second run drew two classes.
    first = open(os.path.join(reports, '2026-12-02T14_20_40.1.html'), encoding='utf-8').read()
    assert 'Run 2026-12-02T14:20:40.1' in first and '<td>b</td>' not in first
    assert open(os.path.join(reports, '2026-12-02T14_20_40.1', 'data_classes.png'),
                'rb').read() == first_picture
    newest = open(os.path.join(out, page.REPORT_FILE), encoding='utf-8').read()
    assert 'Run 2026-12-02T14:25:03.7' in newest and '<td>b</td>' in newest
    # Every picture link works from where each page is.
    for folder, text in ((out, newest), (reports, first)):
        links = re.findall(r'<img src="([^"]+)"', text)
        assert links and all(os.path.getsize(os.path.join(folder, link)) > 1000
                             for link in links)
    assert re.findall(r'<img src="([^"]+)"', newest) == [
        'reports/2026-12-02T14_25_03.7/data_classes.png']


def test_a_failed_run_says_so_first_and_omits_stages_that_never_ran(tmp_path):
    summary = summary_lib.RunSummary(
        run_id='r9', states={'ImageExampleGen': 'FAILED'}, outputs={},
        failure=('ImageExampleGen', "IngestionError: 28% of records rejected <label>\n"
                                    "  missing_value 4275 (column 'company')"))
    text = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    assert _headings(text) == ['failed']
    body = text.split('<body>', 1)[1]
    assert '<h2 id="failed">Run failed</h2><p>Stage <b>ImageExampleGen</b> failed:</p>' in body
    assert "rejected &lt;label&gt;\n  missing_value 4275 (column &#x27;company&#x27;)" in body
    for filler in ('No statistics', 'did not run', 'No training', 'No blessing'):
        assert filler not in text


def test_a_cached_rerun_names_the_baseline_and_what_is_served_now(tmp_path):
    serving = tmp_path / 'serving'
    for version in ('1', '2'):
        os.makedirs(serving / version)
        (serving / version / 'saved_model.pb').write_bytes(b'graph')
    baseline = artifact(tmp_path / 'baseline', artifact_id=7, served_version=1,
                         served_path=str(serving / '1'))
    pushed = artifact(tmp_path / 'pushed', artifact_id=10, pushed=1, pushed_version='2')
    nodes = ('ServedModelBaseline', 'Pusher')
    summary = summary_lib.RunSummary(
        run_id='r2', states={n: 'CACHED' for n in nodes},
        outputs={'Model': [baseline], 'PushedModel': [pushed]},
        execution_properties={'ServedModelBaseline': {'serving_dir': str(serving)}})
    text = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    assert (f'Baseline: served version 1 ({serving / "1"}), chosen when this model was first '
            'evaluated (reused from the cache)') in text
    assert f'Served now: version 2 ({serving / "2"}), this run&#x27;s model' in text
    assert 'Every step was served from the cache' in text


def test_confusion_matrix_grows_with_classes_and_shortens_very_long_names(tmp_path):
    few = plots.confusion_matrix(np.eye(3), ['a', 'b', 'c'], str(tmp_path), 'few.png')
    names = [f'class_with_a_rather_long_name_{i}' for i in range(12)]
    many = plots.confusion_matrix(np.eye(12) * 5, names, str(tmp_path), 'many.png')
    with Image.open(tmp_path / few) as small, Image.open(tmp_path / many) as large:
        assert large.size[0] > 1.8 * small.size[0] and large.size[1] > 1.8 * small.size[1]
    assert plots.short_label(names[7]) == names[7]  # 31 characters: kept whole
    long_name = 'a_very_long_class_name_that_keeps_going_and_' + 'differs_at_the_end_7'
    short = plots.short_label(long_name)
    assert len(short) == 40 and short.startswith('a_very_long') and short.endswith('end_7')


def test_settings_say_why_auto_chose_the_policy(tmp_path):
    reason = 'auto on a CPU without bfloat16 instructions'
    model = artifact(tmp_path / 'model', mixed_precision='float32', precision_reason=reason)
    summary = summary_lib.RunSummary(
        run_id='r1', states={'ImageTrainer': 'COMPLETE'}, outputs={'Model': [model]},
        execution_properties={'ImageTrainer': _trainer_properties()})
    text = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    rows = dict(re.findall(r'<tr><td>([^<]+)</td><td>([^<]+)</td></tr>', text))
    assert rows['precision policy'] == f'float32 ({reason})'


def test_the_drift_section_lists_every_value_and_anomalies_stay_the_validators(tmp_path):
    stats = write_statistics(str(tmp_path / 'stats'), {'train': {'a': 3}, 'eval': {'a': 1}})
    anomalies = write_anomalies(str(tmp_path / 'anomalies'), None)
    # DriftCheck's output: the same artifact type, written after the validator's (higher id).
    drift = artifact(tmp_path / 'drift', splits=(), artifact_id=9,
                      drift_text='drift: label L∞ 0.59 > 0.30 vs the data of served version 1',
                      drift_values=json.dumps([
                          {'feature': 'label', 'measure': 'L-infinity', 'value': 0.59,
                           'threshold': 0.3, 'exceeded': True},
                          {'feature': 'image size', 'measure': 'L-infinity', 'value': 0.0,
                           'threshold': 0.3, 'exceeded': False}]))
    summary = summary_lib.RunSummary(
        run_id='r1', states={'StatisticsGen': 'COMPLETE', 'DriftCheck': 'COMPLETE'},
        outputs={'ExampleStatistics': [stats], 'ExampleAnomalies': [anomalies, drift]})
    text = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    assert _headings(text) == ['data', 'anomalies', 'drift']
    assert 'train: <span class="yes">none</span>' in text
    assert '<p class="no">Drift: label L∞ 0.59 &gt; 0.30 vs the data of served version 1</p>' \
        in text
    assert re.findall(r'<td>(.*?)</td>', text.split('id="drift"')[1]) == [
        'label', 'L-infinity', '0.5900', '&lt;= 0.30', 'EXCEEDED',
        'image size', 'L-infinity', '0.0000', '&lt;= 0.30', 'ok']
