"""Unit tests of retention's decision (pipeline/runs/retention_plan.py) on hand-made runs.

Each run r<i> ingests Examples 10i, computes statistics 10i+1, trains Model 10i+2, evaluates
(blessing 10i+3) and pushes (PushedModel 10i+4 into serving/<i>), under /root/<node>/<id>.
"""
import json

from pipeline.runs import retention_plan as plan_lib
from pipeline.runs.retention_plan import Artifact, Execution, Run

ROOT = '/out/pipeline_root'
SERVING = '/out/serving'


def _run(i, state='COMPLETE', cached_examples_from=None, window=(), pushed=True):
    examples = cached_examples_from * 10 if cached_examples_from else 10 * i
    ids = {'examples': examples, 'stats': 10 * i + 1, 'model': 10 * i + 2,
           'blessing': 10 * i + 3, 'pushed': 10 * i + 4}
    artifacts = {
        ids['stats']: Artifact(ids['stats'], f'{ROOT}/StatisticsGen/statistics/{10 * i + 1}',
                               'ExampleStatistics'),
        ids['model']: Artifact(ids['model'], f'{ROOT}/ImageTrainer/model/{10 * i + 2}',
                               'Model'),
        ids['blessing']: Artifact(ids['blessing'], f'{ROOT}/Evaluator/blessing/{10 * i + 3}',
                                  'ModelBlessing'),
        ids['pushed']: Artifact(ids['pushed'], f'{ROOT}/Pusher/pushed_model/{10 * i + 4}',
                                'PushedModel', pushed_to=f'{SERVING}/{i}' if pushed else None)}
    if not cached_examples_from:
        artifacts[examples] = Artifact(examples, f'{ROOT}/ImageExampleGen/examples/{examples}',
                                       'Examples', window=tuple(window))
    run = f'r{i}'
    executions = (
        Execution(100 * i, run, 'CACHED' if cached_examples_from else 'COMPLETE',
                  outputs=frozenset({examples})),
        Execution(100 * i + 1, run, 'COMPLETE', frozenset({examples}),
                  frozenset({ids['stats']})),
        Execution(100 * i + 2, run, state, frozenset({examples}), frozenset({ids['model']})),
        Execution(100 * i + 3, run, 'COMPLETE', frozenset({examples, ids['model']}),
                  frozenset({ids['blessing']})),
        Execution(100 * i + 4, run, 'COMPLETE', frozenset({ids['model'], ids['blessing']}),
                  frozenset({ids['pushed']})))
    return Run(run, (1000 * i, i), executions), artifacts


def _history(*runs):
    all_runs, artifacts = [], {}
    for run, found in runs:
        all_runs.append(run)
        artifacts.update(found)
    return all_runs, artifacts


def _deleted(plan):
    return sorted(a.id for a in plan.delete)


def test_the_newest_runs_are_kept_and_older_ones_deleted():
    runs, artifacts = _history(*(_run(i) for i in range(1, 6)))
    plan = plan_lib.decide(runs, artifacts, 2, 'r5', ROOT)
    assert plan.kept_runs == ('r5', 'r4')
    assert _deleted(plan) == [10, 11, 12, 13, 14, 20, 21, 22, 23, 24, 30, 31, 32, 33, 34]
    assert plan.deleted_runs == ('r3', 'r2', 'r1')
    assert plan.kept[40] == 'run r4 is among the newest 2' and plan.kept[50] == 'the current run'


def test_an_old_artifact_a_kept_run_took_from_the_cache_stays():
    runs, artifacts = _history(_run(1), _run(2), _run(3, cached_examples_from=1))
    plan = plan_lib.decide(runs, artifacts, 1, 'r3', ROOT)
    assert 10 not in _deleted(plan) and plan.kept[10] == 'the current run'
    assert 11 in _deleted(plan)   # run 1's statistics: run 3 computed its own


def test_a_run_that_is_not_finished_keeps_everything_it_used_however_old():
    runs, artifacts = _history(_run(1, state='RUNNING'), _run(2), _run(3))
    plan = plan_lib.decide(runs, artifacts, 1, 'r3', ROOT)
    assert set(plan.kept_runs) == {'r3', 'r1'}
    assert not {10, 11, 12, 13, 14} & set(_deleted(plan))
    assert plan.kept[12] == 'run r1 is not finished'
    assert _deleted(plan) == [20, 21, 22, 23, 24]


def test_the_current_run_is_kept_even_when_it_is_not_among_the_newest():
    runs, artifacts = _history(_run(1), _run(2), _run(3))
    plan = plan_lib.decide(runs, artifacts, 1, 'r2', ROOT)
    assert set(plan.kept_runs) == {'r3', 'r2'}
    assert _deleted(plan) == [10, 11, 12, 13, 14]


def test_spans_of_the_newest_window_are_kept_with_their_examples_only():
    # Run 3's Examples hold span 3; its window names runs 1 and 2's span folders as well.
    window = (f'{ROOT}/ImageExampleGen/examples/10', f'{ROOT}/ImageExampleGen/examples/20/',
              f'{ROOT}/ImageExampleGen/examples/30')
    runs, artifacts = _history(_run(1), _run(2), _run(3, window=window))
    plan = plan_lib.decide(runs, artifacts, 1, 'r3', ROOT)
    assert plan.kept[10] == plan.kept[20] == 'in the window of Examples 30'
    assert _deleted(plan) == [11, 12, 13, 14, 21, 22, 23, 24]


def test_a_window_entry_inside_an_examples_folder_keeps_that_examples():
    runs, artifacts = _history(_run(1), _run(2))
    plan = plan_lib.decide(runs, artifacts, 1, 'r2', ROOT, window_uris=[
        (f'{ROOT}/ImageExampleGen/examples/10/span-1', 'serving version 1 was trained on it')])
    assert plan.kept[10] == 'serving version 1 was trained on it'
    # No prefix confusion: /examples/1 does not hold /examples/10.
    assert not plan_lib.inside(f'{ROOT}/ImageExampleGen/examples/10', f'{ROOT}/ImageExampleGen'
                               '/examples/1')


def test_a_kept_serving_version_keeps_its_model_evaluation_and_training_data():
    runs, artifacts = _history(_run(1), _run(2), _run(3))
    plan = plan_lib.decide(runs, artifacts, 1, 'r3', ROOT,
                           served_dirs=[(f'{SERVING}/1', 'serving version 1 came from it')])
    # Pusher's inputs and output, the trainer's and the Evaluator's inputs and outputs.
    assert {10, 12, 13, 14} <= set(plan.kept)
    assert plan.kept[12] == 'serving version 1 came from it'
    assert _deleted(plan) == [11, 20, 21, 22, 23, 24]


def test_a_version_named_by_several_pushes_keeps_each_of_them():
    runs, artifacts = _history(_run(1), _run(2), _run(3))
    artifacts[24] = Artifact(24, artifacts[24].uri, 'PushedModel', pushed_to=f'{SERVING}/1/')
    plan = plan_lib.decide(runs, artifacts, 1, 'r3', ROOT,
                           served_dirs=[(f'{SERVING}/1', 'serving version 1 came from it')])
    assert {10, 12, 13, 14, 20, 22, 23, 24} <= set(plan.kept)


def test_outside_the_pipeline_root_deleted_already_or_written_by_nobody_is_untouched():
    runs, artifacts = _history(_run(1), _run(2))
    artifacts[11] = Artifact(11, '/elsewhere/stats', 'ExampleStatistics')
    artifacts[12] = Artifact(12, artifacts[12].uri, 'Model', state='DELETED')
    artifacts[13] = Artifact(13, artifacts[13].uri, 'ModelBlessing', state='MARKED_FOR_DELETION')
    artifacts[99] = Artifact(99, f'{ROOT}/Importer/x/99', 'Schema')   # no execution wrote it
    plan = plan_lib.decide(runs, artifacts, 1, 'r2', ROOT)
    assert _deleted(plan) == [10, 13, 14]   # a MARKED one is finished


def test_keeping_more_runs_than_there_are_deletes_nothing():
    runs, artifacts = _history(_run(1), _run(2))
    plan = plan_lib.decide(runs, artifacts, 5, 'r2', ROOT)
    assert plan.delete == () and plan.deleted_runs == () and plan.kept_runs == ('r2', 'r1')


def test_the_window_json_of_the_contract_reads_as_its_uris():
    from pipeline.runs import retention
    text = json.dumps([{'span': 1, 'uri': '/a/1', 'fingerprint': 'f', 'num_train': 1,
                        'num_eval': 1, 'image_sizes': None, 'color_modes': None},
                       {'span': 2, 'uri': '/a/2'}])
    assert retention.window_uris(text) == ['/a/1', '/a/2']
    assert retention.window_uris('') == []
