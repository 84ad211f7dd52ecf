"""The stage registry (pipeline/runs/stages.py): its ids are the components the factories build, and
the console, the summary and the report name stages and read key figures through it."""
import io
import logging
import re

from ml_metadata.proto import metadata_store_pb2

from pipeline.definition import config as config_lib
from pipeline.local import console as console_lib
from pipeline.definition import factory
from pipeline.definition import scoring
from pipeline.runs import stages
from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text


def test_every_registered_stage_is_a_component_the_factories_build(tmp_path):
    cfg = config_lib.smoke_config(config_lib.DEFAULT_DATA, str(tmp_path / 'out'))
    score = config_lib.ScoreConfig(str(tmp_path / 'new'), version=1)
    built = {c.id for c in factory.create_components(cfg)}
    built |= {c.id for c in scoring.create_components(cfg, score)}
    assert set(stages.STAGES) <= built, set(stages.STAGES) - built
    # Every stage of our own (components/) has an entry, so its console line has a figure.
    ours = {'ImageExampleGen', 'AnomalyGate', 'ImageTrainer', 'ServedModelBaseline',
            'DriftCheck', 'ScoringModel', 'ScoreWriter'}
    assert ours <= set(stages.STAGES)


def test_an_unlisted_component_is_named_by_its_id_with_no_figure():
    summary = summary_lib.RunSummary('r', {'StatisticsGen': 'COMPLETE'}, {})
    assert stages.stage('StatisticsGen').display_name == 'StatisticsGen'
    assert stages.stage('StatisticsGen').key_figure(summary) is None


def test_console_and_summary_read_names_and_figures_from_the_registry(monkeypatch):
    blessing = metadata_store_pb2.Artifact()
    blessing.custom_properties['blessed'].int_value = 0
    summary = summary_lib.RunSummary('r', {'Evaluator': 'COMPLETE'}, {'ModelBlessing': [blessing]})
    assert stages.stage('Evaluator').key_figure(summary) == 'not blessed'
    renamed = stages.Stage('Evaluator', lambda s: 'figure from the registry')
    monkeypatch.setitem(stages.STAGES, 'Evaluator', renamed)
    monkeypatch.setattr(stages.Stage, 'display_name', property(lambda s: f'<{s.id}>'))
    stream = io.StringIO()
    lines = console_lib.StageLines(console_lib.Console(stream), lambda: summary)
    lines.emit(logging.makeLogRecord({'msg': 'Component %s is running.', 'args': ('Evaluator',)}))
    lines.emit(logging.makeLogRecord({'msg': 'Component %s is finished.', 'args': ('Evaluator',)}))
    assert re.fullmatch(r'<Evaluator> +complete +\d+\.\d s  figure from the registry',
                        stream.getvalue().strip()), stream.getvalue()
    assert summary_text.steps_text(summary) == '<Evaluator> complete'
