"""End-to-end: three local runs with --keep-runs 1 (pipeline/local/run.py and
pipeline/runs/retention.py).

Run 1 ingests span 1 and pushes serving version 1, run 2 ingests span 2 and deletes what run 1
no longer needs, run 3 finds span 1 again (span 2 withdrawn). Shown: what a served version came
from stays; a deleted artifact is never a cache hit (run 3 recomputes span 1's statistics
although the cache would have given run 1's); the baseline and the push keep no model copies.
"""
import os
import shutil

import pytest
from ml_metadata.proto import metadata_store_pb2 as mlmd

from bench import bench_retention
from pipeline.definition import config as config_lib
from pipeline.runs import retention
from pipeline.runs import summary as summary_lib
from pipeline.definition.config_retraining import RetentionConfig

from helpers import copy_digits

pytestmark = pytest.mark.e2e


def _artifact(summary, type_name, node_output=None):
    found = [a for a in summary.outputs[type_name]
             if node_output is None or node_output in a.uri]
    assert len(found) == 1, (type_name, found)
    return found[0]


def _state(cfg, artifact_id):
    [artifact] = retention.open_store(cfg.metadata_path).get_artifacts_by_id([artifact_id])
    return mlmd.Artifact.State.Name(artifact.state), os.path.exists(artifact.uri)


@pytest.fixture(scope='module')
def three_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp('retention')
    data = base / 'data'
    copy_digits(str(data / 'span-1'))
    cfg = config_lib.smoke_config(str(data), str(base / 'out'),
                                  schema_path=config_lib.DIGITS_SCHEMA,
                                  retention=RetentionConfig(keep_runs=1))
    summaries, consoles = [], []
    for change in (None, lambda: copy_digits(str(data / 'span-2'), per_class=25),
                   lambda: shutil.rmtree(data / 'span-2')):
        if change:
            change()
        consoles.append(_run(cfg))
        summaries.append(summary_lib.read_latest_run(cfg.metadata_path, cfg.name))
    return cfg, summaries, consoles


def _run(cfg):
    """local.run's exit code checked, and what it printed."""
    code, text = bench_retention.run_captured(cfg, cfg.output_dir + '-console.txt')
    assert code == 0, text
    return text


def test_the_first_runs_summary_says_there_was_nothing_to_delete(three_runs):
    _, _, consoles = three_runs
    assert 'retention: kept 1 run, nothing to delete' in consoles[0]


def test_the_second_run_deletes_what_the_first_no_longer_needs(three_runs):
    cfg, (first, second, _), consoles = three_runs
    line = [text for text in consoles[1].splitlines() if 'retention: ' in text][-1]
    assert 'retention: kept 1 run, deleted ' in line and ' artifacts of 1 run (' in line
    # Serving version 1 came from run 1: its Model, Examples and evaluation stay.
    for kept in (first.trained_model(), _artifact(first, 'Examples'),
                 _artifact(first, 'ModelEvaluation')):
        assert _state(cfg, kept.id) == ('LIVE', True)
    assert _state(cfg, _artifact(first, 'ExampleStatistics').id) == ('DELETED', False)
    assert second.states['ImageExampleGen'] == 'COMPLETE'


def test_a_deleted_artifact_is_never_a_cache_hit(three_runs):
    cfg, (first, _, third), _ = three_runs
    # Span 1 again: ingestion is the cached run-1 execution, its statistics were deleted.
    assert third.states['ImageExampleGen'] == 'CACHED'
    assert _artifact(third, 'Examples').id == _artifact(first, 'Examples').id
    assert third.states['StatisticsGen'] == 'COMPLETE'
    stats = _artifact(third, 'ExampleStatistics')
    assert stats.id != _artifact(first, 'ExampleStatistics').id
    assert os.path.exists(os.path.join(stats.uri, 'Split-train', 'FeatureStats.pb'))


def test_the_baseline_is_compared_in_place_and_no_stage_copies_a_model(three_runs):
    _, (_, second, _), _ = three_runs
    baseline = second.baseline_model()
    assert summary_lib.custom_property(baseline, 'served_version') == 1
    assert os.listdir(baseline.uri) == []
    [blessing] = second.outputs['ModelBlessing']
    assert summary_lib.custom_property(blessing, 'compared_version') == 1
    assert summary_lib.custom_property(blessing, 'baseline_model') == \
        summary_lib.custom_property(baseline, 'served_path')
    [pushed] = second.outputs['PushedModel']
    assert summary_lib.custom_property(pushed, 'pushed_version') == '2'
    assert os.listdir(pushed.uri) == []
