"""Retention on Kubeflow (pipeline/kubeflow/retention.py) over hand-made runs in KFP's layout: task
folders with their records (pipeline/kubeflow/task_record.py), on a local folder and on S3."""
import json
import os

from pipeline.kubeflow import task_record, retention

NAME = 'smoke'


class Runs:
    """Writes runs as KFP lays them out: <root>/<pipeline>/<run>/<task>/<uuid>/<key>, each task
    folder with its record (or without, for a task killed before it wrote one)."""

    def __init__(self, root: str):
        self.root, self.uris = root, {}

    def task(self, run, task, started, outputs=(), inputs=(), state='COMPLETE', run_end=False,
             record=True):
        folder = os.path.join(self.root, NAME, run, task, f'uuid-{task.lower()}')
        entries = []
        for key, kind, properties in outputs:
            uri = os.path.join(folder, key)
            os.makedirs(uri)
            with open(os.path.join(uri, 'data'), 'wb') as handle:
                handle.write(b'x' * 1000)
            self.uris[(run, key)] = uri
            entries.append({'key': key, 'uri': uri, 'type': kind, 'properties': properties})
        if record:
            task_record.write({
                'version': 1, 'state': state, 'started': started, 'ended': started + 1,
                'error': None, 'run_end': run_end, 'outputs': entries,
                'inputs': [{'key': k, 'uri': self.uris[ref], 'type': t, 'id': '1'}
                           for k, t, ref in inputs]}, folder)
        return folder

    def run(self, run, started, window=(), pushed=None, state='COMPLETE', finished=True):
        """A run of four tasks: ingestion, statistics, training, push."""
        window = json.dumps([{'span': i, 'uri': self.uris[ref] + suffix}
                             for i, (ref, suffix) in enumerate(window, 1)]
                            + [{'span': len(window) + 1, 'uri': f'{{{run}}}'}])
        self.task(run, 'ImageExampleGen', started, [('examples', 'Examples', {})])
        examples = self.uris[(run, 'examples')]
        self._fix_window(run, window.replace(f'{{{run}}}', examples))
        self.task(run, 'StatisticsGen', started + 1, [('statistics', 'ExampleStatistics', {})],
                  [('examples', 'Examples', (run, 'examples'))])
        self.task(run, 'ImageTrainer', started + 2, [('model', 'Model', {})],
                  [('examples', 'Examples', (run, 'examples'))], state=state)
        if finished and state == 'COMPLETE':
            self.task(run, 'Pusher', started + 3, [('pushed_model', 'PushedModel', {
                'pushed_destination': pushed or ''})], [('model', 'Model', (run, 'model'))],
                run_end=True)

    def _fix_window(self, run, window):
        folder = os.path.dirname(self.uris[(run, 'examples')])
        path = os.path.join(folder, task_record.RECORD_NAME)
        with open(path) as handle:
            record = json.load(handle)
        record['outputs'][0]['properties']['window'] = window
        with open(path, 'w') as handle:
            json.dump(record, handle)


def _serving(tmp_path, *versions):
    serving = tmp_path / 'serving'
    for version in versions:
        (serving / str(version)).mkdir(parents=True)
        (serving / str(version) / 'saved_model.pb').write_bytes(b'm')
    return str(serving)


def test_keeps_the_newest_runs_the_window_and_what_serving_came_from(tmp_path):
    root = str(tmp_path / 'pipeline_root')
    runs = Runs(root)
    serving = _serving(tmp_path, 1)
    runs.run('run-a', 100, pushed=os.path.join(serving, '1'))
    runs.run('run-b', 200, window=[(('run-a', 'examples'), '')])
    runs.run('run-c', 300, window=[(('run-b', 'examples'), '')], finished=False)
    outcome = retention.apply(root, NAME, 'run-c', 1, serving)
    exists = lambda run, key: os.path.exists(runs.uris[(run, key)])   # noqa: E731
    # Version 1 is served: run a's push, model and the Examples it was trained on stay.
    assert exists('run-a', 'pushed_model') and exists('run-a', 'model')
    assert exists('run-a', 'examples') and not exists('run-a', 'statistics')
    # Run b: its Examples are in run c's window; nothing serves its model.
    assert exists('run-b', 'examples')
    assert not exists('run-b', 'model') and not exists('run-b', 'statistics')
    assert not exists('run-b', 'pushed_model')
    # The current run is whole.
    assert all(exists('run-c', key) for key in ('examples', 'statistics', 'model'))
    # Task folders left with nothing kept went whole, their records with them.
    assert not os.path.exists(os.path.join(root, NAME, 'run-b', 'StatisticsGen'))
    assert os.path.exists(os.path.join(os.path.dirname(runs.uris[('run-b', 'examples')]),
                                       task_record.RECORD_NAME))
    assert (outcome.kept_runs, outcome.deleted, outcome.deleted_runs) == (1, 4, 2)
    assert outcome.bytes == 4000 and outcome.note is None
    assert outcome.text() == 'kept 1 run, deleted 4 artifacts of 2 runs (0.0 MB)'
    again = retention.apply(root, NAME, 'run-c', 1, serving)
    assert again.deleted == 0 and again.text() == 'kept 1 run, nothing to delete'


def test_a_running_run_is_kept_and_a_killed_ones_leftovers_are_removed(tmp_path):
    root = str(tmp_path / 'pipeline_root')
    runs = Runs(root)
    serving = _serving(tmp_path)
    runs.run('run-a', 100)
    runs.run('run-b', 200)
    # A task killed before it wrote its record, in a run started before run b finished.
    killed = runs.task('run-k', 'ImageTrainer', 150, [('model', 'Model', {})], record=False)
    os.utime(os.path.join(killed, 'model', 'data'), (150, 150))   # written before run b
    # A run started after run b and still running (no task ended it): kept whole.
    runs.run('run-r', 10 ** 10, finished=False)
    runs.run('run-c', 300, finished=False)
    outcome = retention.apply(root, NAME, 'run-c', 1, serving)
    assert not os.path.exists(os.path.join(root, NAME, 'run-k'))
    # Of run a only the record that ended it is left, without its artifacts.
    [left] = [os.path.join(path, name) for path, _, names in os.walk(
        os.path.join(root, NAME, 'run-a')) for name in names]
    assert left.endswith(os.path.join('Pusher', 'uuid-pusher', task_record.RECORD_NAME))
    with open(left) as handle:
        assert json.load(handle) == {'version': 1, 'state': 'COMPLETE', 'started': 103,
                                     'ended': 104, 'run_end': True}
    assert os.path.exists(runs.uris[('run-r', 'model')])
    assert (outcome.kept_runs, outcome.unfinished_runs) == (1, 1)
    assert (outcome.leftovers, outcome.leftover_bytes) == (1, 1000)
    assert 'kept 1 run (1 unfinished)' in outcome.text()
    assert 'removed 1 leftover folder (0.0 MB)' in outcome.text()


def test_a_failed_run_counts_as_ended(tmp_path):
    root = str(tmp_path / 'pipeline_root')
    runs = Runs(root)
    runs.run('run-a', 100)
    runs.run('run-f', 200, state='FAILED')   # its trainer failed: no push, no run end
    runs.run('run-c', 300, finished=False)
    outcome = retention.apply(root, NAME, 'run-c', 2, _serving(tmp_path))
    assert not os.path.exists(runs.uris[('run-a', 'model')])        # beyond the newest 2
    assert os.path.exists(runs.uris[('run-f', 'model')])            # among them
    assert outcome.unfinished_runs == 0 and outcome.kept_runs == 2


def test_off_and_unknown_runs_do_nothing(tmp_path):
    root = str(tmp_path / 'pipeline_root')
    runs = Runs(root)
    runs.run('run-a', 100)
    assert retention.apply(root, NAME, 'run-a', 0, '').text() == \
        'off (--keep-runs 0): every run is kept'
    outcome = retention.apply(root, NAME, 'run-z', 1, '')
    assert outcome.text() == f'not applied: run run-z is not under {root}/{NAME}'
    assert os.path.exists(runs.uris[('run-a', 'model')])


def test_on_a_bucket(s3):
    """The same decisions on S3: listing gives folders with '/', nothing is renamed."""
    root = s3.uri('kfp', 'pipeline_root')
    local = Runs(root)
    import tensorflow as tf

    def write(run, task, key, started, run_end=False, inputs=()):
        folder = f'{root}/{NAME}/{run}/{task}/uuid-{task}'
        uri = f'{folder}/{key}'
        with tf.io.gfile.GFile(f'{uri}/data', 'wb') as handle:
            handle.write(b'x' * 500)
        local.uris[(run, key)] = uri
        task_record.write({'state': 'COMPLETE', 'started': started, 'run_end': run_end,
                               'outputs': [{'key': key, 'uri': uri, 'type': 'Model',
                                            'properties': {}}],
                               'inputs': [{'key': 'x', 'uri': local.uris[i], 'type': 'Model'}
                                          for i in inputs]}, folder)

    for index, run in enumerate(('run-1', 'run-2', 'run-3'), 1):
        write(run, 'ImageTrainer', 'model', index * 100)
        write(run, 'Pusher', 'pushed', index * 100 + 1, run_end=True,
              inputs=[(run, 'model')])
    # Run 3 took run 1's model as an input (as a cache hit would hand it over).
    write('run-3', 'Evaluator', 'evaluation', 302, inputs=[('run-1', 'model')])
    outcome = retention.apply(root, NAME, 'run-3', 1, s3.uri('kfp', 'serving'))
    keys = s3.keys(f'kfp/pipeline_root/{NAME}/')
    # Run 2: only the record that ended it, without artifacts; run 1: the model run 3 used.
    assert [k for k in keys if '/run-2/' in k] == [
        f'kfp/pipeline_root/{NAME}/run-2/Pusher/uuid-Pusher/' + task_record.RECORD_NAME]
    assert sorted(k for k in keys if '/run-1/' in k) == [
        f'kfp/pipeline_root/{NAME}/run-1/ImageTrainer/uuid-ImageTrainer/model/data',
        f'kfp/pipeline_root/{NAME}/run-1/ImageTrainer/uuid-ImageTrainer/'
        + task_record.RECORD_NAME,
        f'kfp/pipeline_root/{NAME}/run-1/Pusher/uuid-Pusher/' + task_record.RECORD_NAME]
    assert (outcome.deleted, outcome.bytes, outcome.note) == (3, 1500, None)
