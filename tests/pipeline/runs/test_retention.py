"""Retention on a real SQLite ML Metadata store and real folders (pipeline/runs/retention.py).

The store is laid out as TFX's LocalDagRunner records runs: a `pipeline` context holding every
execution, a `pipeline_run` context per run, OUTPUT and INPUT events, artifacts at
<pipeline_root>/<node>/<key>/<id>. Each run here ingests, computes statistics and trains.
"""
import dataclasses
import json
import os
import subprocess
import sys
import time

from ml_metadata.proto import metadata_store_pb2 as mlmd

from pipeline.definition import config as config_lib
from pipeline.runs import retention
from pipeline.runs import runlock
from pipeline.definition.config_retraining import RetentionConfig

from helpers import REPO_ROOT


class Store:
    """A pipeline's ML Metadata, written as TFX writes it, and the artifact folders."""

    def __init__(self, tmp_path, name='smoke'):
        self.cfg = config_lib.smoke_config(str(tmp_path / 'data'), str(tmp_path / 'out'),
                                           name=name)
        os.makedirs(self.cfg.pipeline_root)
        open(self.cfg.metadata_path, 'w').close()
        self.store = retention.open_store(self.cfg.metadata_path)
        put = self.store.put_artifact_type
        self.types = {n: put(mlmd.ArtifactType(name=n)) for n in
                      ('Examples', 'ExampleStatistics', 'Model', 'PushedModel')}
        self.pipeline_type = self.store.put_context_type(mlmd.ContextType(name='pipeline'))
        self.run_type = self.store.put_context_type(mlmd.ContextType(name='pipeline_run'))
        [self.pipeline_id] = self.store.put_contexts([mlmd.Context(
            type_id=self.pipeline_type, name=self.cfg.name)])
        self.node_types = {}

    def artifact(self, type_name, node, key, size=1000, **custom):
        [artifact_id] = self.store.put_artifacts([mlmd.Artifact(
            type_id=self.types[type_name], state=mlmd.Artifact.LIVE)])
        uri = os.path.join(self.cfg.pipeline_root, node, key, str(artifact_id))
        os.makedirs(uri)
        with open(os.path.join(uri, 'data'), 'wb') as handle:
            handle.write(b'x' * size)
        artifact = self.store.get_artifacts_by_id([artifact_id])[0]
        artifact.uri = uri
        for name, value in custom.items():
            artifact.custom_properties[name].string_value = value
        self.store.put_artifacts([artifact])
        return artifact_id

    def execution(self, run, node, inputs=(), outputs=(), state=mlmd.Execution.COMPLETE):
        if node not in self.node_types:
            self.node_types[node] = self.store.put_execution_type(
                mlmd.ExecutionType(name=f'tfx.{node}'))
        [execution_id] = self.store.put_executions([mlmd.Execution(
            type_id=self.node_types[node], last_known_state=state)])
        events = [mlmd.Event(artifact_id=a, execution_id=execution_id, type=mlmd.Event.INPUT)
                  for a in inputs]
        events += [mlmd.Event(artifact_id=a, execution_id=execution_id, type=mlmd.Event.OUTPUT)
                   for a in outputs]
        self.store.put_events(events)
        self.store.put_attributions_and_associations([], [
            mlmd.Association(context_id=self.pipeline_id, execution_id=execution_id),
            mlmd.Association(context_id=run, execution_id=execution_id)])
        return execution_id

    def run(self, name, running=False, window=None):
        """One run: Examples (with a window), statistics, Model. Returns its artifact ids."""
        [run] = self.store.put_contexts([mlmd.Context(type_id=self.run_type, name=name)])
        time.sleep(0.002)   # create times order the runs
        examples = self.artifact('Examples', 'ImageExampleGen', 'examples',
                                 **({'window': json.dumps(window)} if window else {}))
        self.execution(run, 'ImageExampleGen', outputs=[examples])
        stats = self.artifact('ExampleStatistics', 'StatisticsGen', 'statistics')
        self.execution(run, 'StatisticsGen', [examples], [stats])
        model = self.artifact('Model', 'ImageTrainer', 'model', size=50_000)
        self.execution(run, 'ImageTrainer', [examples], [model],
                       mlmd.Execution.RUNNING if running else mlmd.Execution.COMPLETE)
        return {'examples': examples, 'stats': stats, 'model': model}

    def state(self, artifact_id):
        artifact = self.store.get_artifacts_by_id([artifact_id])[0]
        return mlmd.Artifact.State.Name(artifact.state), os.path.exists(artifact.uri)

    def uri(self, artifact_id):
        return self.store.get_artifacts_by_id([artifact_id])[0].uri

    def apply(self, keep, current, lock='held'):
        cfg = dataclasses.replace(self.cfg, retention=RetentionConfig(keep))
        held = runlock.OutputLock(cfg.output_dir) if lock == 'held' else None
        return retention.apply(cfg, current, held)


def test_older_runs_are_marked_deleted_and_their_folders_removed(tmp_path):
    store = Store(tmp_path)
    runs = [store.run(f'run-{i}') for i in range(1, 5)]
    outcome = store.apply(2, 'run-4')
    assert outcome.text() == 'kept 2 runs, deleted 6 artifacts of 2 runs (0.1 MB)'
    assert outcome.bytes == 2 * (1000 + 1000 + 50_000)
    for old in runs[:2]:
        assert {store.state(a) for a in old.values()} == {('DELETED', False)}
    for new in runs[2:]:
        assert {store.state(a) for a in new.values()} == {('LIVE', True)}
    # Nothing half-deleted is left in sight, and the next retention has nothing to do.
    assert not [n for n in os.listdir(os.path.join(store.cfg.pipeline_root, 'ImageTrainer',
                                                   'model')) if n.startswith('.')]
    assert store.apply(2, 'run-4').text() == 'kept 2 runs, nothing to delete'


def test_a_concurrent_or_interrupted_run_keeps_everything_it_used(tmp_path):
    store = Store(tmp_path)
    interrupted = store.run('run-1', running=True)   # its trainer never finished
    middle = store.run('run-2')
    store.run('run-3')
    outcome = store.apply(1, 'run-3')
    assert outcome.text() == 'kept 1 run (1 unfinished), deleted 3 artifacts of 1 run (0.1 MB)'
    assert {store.state(a) for a in interrupted.values()} == {('LIVE', True)}
    assert {store.state(a) for a in middle.values()} == {('DELETED', False)}


def test_nothing_is_deleted_while_another_run_holds_the_output(tmp_path):
    store = Store(tmp_path)
    old = store.run('run-1')
    store.run('run-2')
    holder = subprocess.Popen(
        [sys.executable, '-c', 'import sys; from pipeline.runs import runlock; '
         'lock = runlock.OutputLock(sys.argv[1]); lock.acquire(False); lock.record("other"); '
         'print("held", flush=True); sys.stdin.read()', store.cfg.output_dir],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=REPO_ROOT)
    try:
        assert holder.stdout.readline().strip() == 'held'
        outcome = store.apply(1, 'run-2', lock=None)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert outcome.text() == (f'not applied: the output is in use by run other '
                              f'(pid {holder.pid})')
    assert {store.state(a) for a in old.values()} == {('LIVE', True)}
    assert store.apply(1, 'run-2', lock=None).deleted == 3   # once it has finished


def test_the_window_and_a_served_versions_training_data_are_kept(tmp_path):
    store = Store(tmp_path)
    first, second, third = (store.run(f'run-{i}') for i in range(1, 4))
    newest = store.run('run-4', window=[{'span': 3, 'uri': store.uri(third['examples'])},
                                        {'span': 4, 'uri': 'newest'}])
    served = os.path.join(store.cfg.serving_dir, '1', 'assets.extra')
    os.makedirs(served)
    with open(os.path.join(served, 'training_data.json'), 'w') as handle:
        json.dump({'window': [{'span': 1, 'uri': store.uri(first['examples'])}]}, handle)
    open(os.path.join(store.cfg.serving_dir, '1', 'saved_model.pb'), 'w').close()
    outcome = store.apply(1, 'run-4')
    assert store.state(first['examples']) == store.state(third['examples']) == ('LIVE', True)
    assert store.state(second['examples']) == ('DELETED', False)
    assert outcome.deleted == 7 and store.state(newest['model']) == ('LIVE', True)


def test_a_deletion_a_killed_retention_left_is_finished(tmp_path):
    store = Store(tmp_path)
    old = store.run('run-1')
    store.run('run-2')
    record = store.store.get_artifacts_by_id([old['model']])[0]
    record.state = mlmd.Artifact.MARKED_FOR_DELETION
    store.store.put_artifacts([record])
    parent, name = os.path.split(record.uri)
    os.rename(record.uri, os.path.join(parent, retention.HIDDEN_PREFIX + name))
    outcome = store.apply(1, 'run-2')
    assert store.state(old['model']) == ('DELETED', False)
    assert os.listdir(parent) == [name for name in os.listdir(parent)
                                  if not name.startswith('.')]
    assert outcome.deleted == 3


def test_leftovers_of_ended_executions_and_finished_trainings_are_collected(tmp_path):
    store = Store(tmp_path)
    store.run('run-1', running=True)   # killed: its trainer's scratch holds a .temp
    store.run('run-2')
    root = store.cfg.pipeline_root
    executions = store.store.get_executions()
    killed = next(e.id for e in executions if e.last_known_state == mlmd.Execution.RUNNING)
    scratch = os.path.join(root, 'ImageTrainer', '.system', 'executor_execution')
    os.makedirs(os.path.join(scratch, str(killed), '.temp'))
    with open(os.path.join(scratch, str(killed), '.temp', 'part'), 'wb') as handle:
        handle.write(b'x' * 3000)
    os.makedirs(os.path.join(scratch, str(executions[-1].id)))   # a finished one: empty
    os.makedirs(os.path.join(scratch, '999999', '.temp'))      # not this pipeline's
    finished = os.path.join(root, '_checkpoints', 'ImageTrainer', 'aaaa')
    resumable = os.path.join(root, '_checkpoints', 'ImageTrainer', 'bbbb')
    os.makedirs(finished)
    os.makedirs(resumable)
    open(os.path.join(resumable, 'ckpt-1.index'), 'w').close()
    quarantine = os.path.join(root, '_quarantine', 'ImageExampleGen', 'cccc.jsonl')
    os.makedirs(os.path.dirname(quarantine))
    open(quarantine, 'w').close()
    outcome = store.apply(1, 'run-2')
    assert outcome.text() == ('kept 1 run (1 unfinished), nothing to delete; removed 1 '
                              'leftover folder (0.0 MB)')
    assert sorted(os.listdir(scratch)) == ['999999']
    assert not os.path.exists(finished) and os.path.exists(resumable)
    assert os.path.exists(quarantine)


def test_errors_are_told_never_raised_and_zero_keeps_everything(tmp_path):
    store = Store(tmp_path)
    store.run('run-1')
    store.run('run-2')
    assert store.apply(0, 'run-2').text() == 'off (--keep-runs 0): every run is kept'
    with open(store.cfg.metadata_path, 'wb') as handle:
        handle.write(b'not a database')
    text = store.apply(1, 'run-2').text()
    assert text.startswith('failed (') and text.endswith('nothing else is affected, details '
                                                         'in the log')


def test_drift_baselines_of_windows_no_serving_version_was_trained_on_are_removed(tmp_path):
    """DriftCheck keeps one baseline per window it compared with (<root>/_drift/<key>); once no
    version under serving/ was trained on that window, retention removes it."""
    from components.drift import training_data
    root, serving = tmp_path / 'pipeline_root', tmp_path / 'serving'
    windows = {v: [{'span': v, 'uri': f'/spans/{v}', 'fingerprint': f'f{v}'}] for v in (1, 2)}
    for version in (2, 3):   # version 3 was pushed by hand: it records no window
        (serving / str(version) / 'assets.extra').mkdir(parents=True)
        (serving / str(version) / 'saved_model.pb').write_bytes(b'graph')
        if version in windows:
            (serving / str(version) / training_data.TRAINING_DATA_FILE).write_text(
                json.dumps({'window': windows[version]}))
    for window in windows.values():
        folder = root / training_data.CACHE_FOLDER / training_data.cache_key(window)
        folder.mkdir(parents=True)
        (folder / training_data.STATS_FILE).write_bytes(b'x' * 1000)

    assert retention.collect_drift_baselines(str(root), str(serving)) == (1, 1000)

    left = sorted(os.listdir(root / training_data.CACHE_FOLDER))
    assert left == [training_data.cache_key(windows[2])]
    assert retention.collect_drift_baselines(str(root), str(serving)) == (0, 0)
    text = retention.Outcome(kept_runs=3, baselines=1, baseline_bytes=1000).text()
    assert text == 'kept 3 runs, nothing to delete; removed 1 drift baseline (0.0 MB)'
