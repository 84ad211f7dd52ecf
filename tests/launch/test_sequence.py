"""The shared launch sequence (launch/sequence.py): its order whatever happens, the relay of the
chief's output (progress events published in this process, other lines logged), and, with two
real local workers, the chief's progress events reaching the parent's listeners."""
import json
import os

import pytest

from core import inputs
from launch import local, sequence
from training import job as job_lib, loop, progress
from training.result import TrainResult

from helpers import write_digit_examples


class _Recorded(sequence.Workers):
    """A launcher that records the sequence's calls; its 'chief' writes `lines` at start."""
    folder = 'fake'

    def __init__(self, log_dir, lines=(), fail=False):
        self.calls, self._log_dir, self._lines, self._fail = [], log_dir, lines, fail

    def start(self, args):
        self.calls.append(('start', args))
        with open(self.chief_output(), 'w') as handle:
            handle.write(''.join(self._lines))
        with open(os.path.join(self._log_dir, 'metrics.json'), 'w') as handle:
            json.dump({'eval_accuracy': 0.5}, handle)

    def wait(self):
        self.calls.append(('wait',))
        if self._fail:
            raise RuntimeError('worker 1 failed')

    def stop(self):
        self.calls.append(('stop',))

    def chief_output(self):
        return os.path.join(self._log_dir, self.folder, 'chief.log')


def _job():
    return job_lib.TrainJob(train_pattern='/d/train/*', eval_pattern='/d/eval/*',
                            class_names=('a', 'b'), image_shape=(8, 8, 1),
                            options=loop.LoopOptions.of(
                                train_steps=4, global_batch_size=8, learning_rate=1e-3,
                                model_builder='models.resnet.build_model'))


def test_the_sequence_writes_the_job_relays_the_chief_and_reads_its_metrics(tmp_path, caplog):
    logs = str(tmp_path / 'logs')
    events = [progress.Progress(step=0, total=4, running=True),
              progress.Progress(step=4, total=4, running=False)]
    launcher = _Recorded(logs, [progress.to_line(events[0]) + '\n', 'step 2/4  loss 0.5\n',
                                progress.to_line(events[1])])  # the last line cut short
    seen = []
    unsubscribe = progress.subscribe(seen.append)
    try:
        with caplog.at_level('INFO'):
            metrics = sequence.run(_job(), 's', logs, 'c', launcher)
    finally:
        unsubscribe()
    assert metrics == TrainResult(eval_accuracy=0.5)  # the chief's metrics.json, typed
    job_file = os.path.join(logs, 'fake', 'job.json')
    assert launcher.calls == [('start', [job_file, 's', logs, 'c']), ('wait',), ('stop',)]
    written = json.load(open(job_file))  # the parameters as ML Metadata records them
    assert written['options']['params']['model_builder'] == 'models.resnet.build_model'
    assert seen == events
    assert '[worker 0] step 2/4  loss 0.5' in caplog.text
    assert 'training-progress' not in caplog.text  # events are not log lines


def test_a_failed_wait_still_stops_every_worker(tmp_path):
    launcher = _Recorded(str(tmp_path), fail=True)
    with pytest.raises(RuntimeError, match='worker 1 failed'):
        sequence.run(_job(), 's', str(tmp_path), 'c', launcher)
    assert [call[0] for call in launcher.calls] == ['start', 'wait', 'stop']


@pytest.mark.slow
def test_two_local_workers_send_the_chiefs_progress_to_the_parent(tmp_path):
    for split, offset in (('train', 0), ('eval', 40)):
        write_digit_examples(str(tmp_path / split / 'part.gz'), ('0', '1'), 40, offset)
    job = job_lib.TrainJob(
        train_pattern=str(tmp_path / 'train' / '*'), eval_pattern=str(tmp_path / 'eval' / '*'),
        class_names=('0', '1'), image_shape=(8, 8, 1), input_spec=inputs.InputSpec(),
        options=loop.LoopOptions.of(train_steps=12, global_batch_size=8, learning_rate=1e-3,
                                    checkpoint_interval=100,
                                    model_builder='models.resnet.build_model'))
    seen = []
    unsubscribe = progress.subscribe(seen.append)
    try:
        metrics = local.run(job, str(tmp_path / 's'), str(tmp_path / 'logs'),
                            str(tmp_path / 'c'), num_workers=2)
    finally:
        unsubscribe()
    assert metrics.num_workers == 2 and metrics.steps_run == 12
    # Nothing trained in this process: every event came from the chief's relayed output.
    assert seen[0].running and (seen[0].step, seen[0].total, seen[0].start_step) == (0, 12, 0)
    assert (seen[-1].step, seen[-1].total, seen[-1].running) == (12, 12, False)
    assert [e.step for e in seen] == sorted(e.step for e in seen)
    assert seen[0].checkpoint_dir == str(tmp_path / 'c')
    logs = tmp_path / 'logs' / 'workers'
    assert progress.LINE_PREFIX in (logs / 'worker-0.log').read_text()
    assert progress.LINE_PREFIX not in (logs / 'worker-1.log').read_text()  # the chief's only
