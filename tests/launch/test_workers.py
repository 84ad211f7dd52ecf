"""Local multi-worker training (launch/local.py): the job crosses the process
boundary intact, each worker gets its own TF_CONFIG, and a failing worker fails the run with
its own error and leaves no process behind. Real training by 2 workers is in
tests/e2e/test_input_shape_e2e.py."""
import dataclasses
import json
import os
import signal
import subprocess
import tempfile
import time

import pytest

from core import inputs
from launch import local, worker
from training import job as job_lib, loop

from helpers import REPO_ROOT, write_digit_examples
import warm_python


def _job(**overrides):
    fields = dict(
        train_pattern='/d/train/*', eval_pattern='/d/eval/*', class_names=('a', 'b'),
        image_shape=(8, 8, 1),
        options=loop.LoopOptions.of(train_steps=20, global_batch_size=8, learning_rate=1e-3,
                                    steps_per_epoch=5, max_epochs=4.0, patience=2,
                                    model_builder='models.resnet.build_model',
                                    devices=('/cpu:0',), image_size=(8, 8), flip=True),
        input_spec=inputs.InputSpec(kind='tabular', numeric=(('x', 1.5),)),
        epochs=4.0, held_out_percent=10)
    names = {field.name for field in dataclasses.fields(job_lib.TrainJob)}
    params = {k: overrides.pop(k) for k in list(overrides) if k not in names}  # TrainParams'
    fields.update(overrides)
    fields['options'] = dataclasses.replace(
        fields['options'], params=dataclasses.replace(fields['options'].params, **params))
    return job_lib.TrainJob(**fields)


def test_a_job_round_trips_through_json_unchanged():
    job = _job()
    assert worker.job_from_json(worker.job_to_json(job)) == job


def test_each_worker_gets_the_same_cluster_and_its_own_index():
    ports = local.free_ports(3)
    # Below the range the kernel gives any socket, so none is taken before the workers bind.
    assert len(set(ports)) == 3 and all(1024 <= p < local.ephemeral_low() for p in ports)
    configs = [json.loads(local.tf_config(ports, i)) for i in range(3)]
    assert all(c['cluster'] == {'worker': [f'127.0.0.1:{p}' for p in ports]} for c in configs)
    assert [c['task'] for c in configs] == [{'type': 'worker', 'index': i} for i in range(3)]


@pytest.mark.slow
def test_a_failing_worker_fails_the_run_with_its_error_and_leaves_no_process(tmp_path):
    job = _job(train_pattern=str(tmp_path / 'missing' / '*'), devices=(),
               input_spec=inputs.InputSpec())
    with pytest.raises(RuntimeError) as error:
        local.run(job, str(tmp_path / 'serving'), str(tmp_path / 'logs'),
                    str(tmp_path / 'ckpt'), num_workers=2)
    message = str(error.value)
    assert message.startswith('training worker ') and 'of 2 failed (exit code 1)' in message
    # The worker's own error, from the tail of its log.
    assert f'No files matched pattern: {tmp_path / "missing" / "*"}' in message
    left = subprocess.run(['pgrep', '-f', str(tmp_path / 'logs' / 'workers' / 'job.json')],
                          capture_output=True, text=True)
    assert left.stdout == ''


@pytest.mark.slow
def test_killing_the_parent_outright_leaves_no_worker(tmp_path):
    """SIGKILL gives the parent no chance to clean up: the workers, mid-training on real digits
    for far longer than the test waits, notice and end themselves."""
    for split, offset in (('train', 0), ('eval', 40)):
        write_digit_examples(str(tmp_path / split / 'part.gz'), ('0', '1'), 40, offset)
    job = _job(train_pattern=str(tmp_path / 'train' / '*'),
               eval_pattern=str(tmp_path / 'eval' / '*'), epochs=0.0,
               held_out_percent=0, input_spec=inputs.InputSpec(),
               options=loop.LoopOptions.of(train_steps=100_000, global_batch_size=8,
                                           learning_rate=1e-3, checkpoint_interval=100_000,
                                           log_every=5,  # the chief's log shows it training
                                           model_builder='models.resnet.build_model'))
    job_file = tmp_path / 'job.json'
    job_file.write_text(worker.job_to_json(job))
    script = tmp_path / 'parent.py'
    script.write_text('import sys; from launch import local, worker\n'
                      'job = worker.job_from_json(open(sys.argv[1]).read())\n'
                      'local.run(job, sys.argv[2] + "/s", sys.argv[2] + "/logs", '
                      'sys.argv[2] + "/c", num_workers=2)\n')
    # The parent in the warm interpreter (its workers are the launcher's own processes).
    parent = warm_python.start([str(script), str(job_file), str(tmp_path)], REPO_ROOT,
                               dict(os.environ), os.devnull, str(tmp_path / 'parent.log'))
    chief_log = tmp_path / 'logs' / 'workers' / 'worker-0.log'
    deadline = time.time() + 240
    while not (chief_log.exists() and 'step 5/100000' in chief_log.read_text()):
        assert time.time() < deadline and parent.poll() is None, 'the workers never trained'
        time.sleep(0.5)
    os.kill(parent.pid, signal.SIGKILL)
    assert parent.wait(timeout=60) == -signal.SIGKILL
    running = str(tmp_path / 'logs' / 'workers' / 'job.json')
    deadline = time.time() + 30
    while subprocess.run(['pgrep', '-f', running], capture_output=True).stdout:
        assert time.time() < deadline, 'workers outlived their killed parent'
        time.sleep(0.5)


def test_what_a_killed_worker_leaves_in_its_tmpdir_goes_with_the_launcher(tmp_path, monkeypatch):
    """A worker SIGKILLed (stop() after another worker failed, or a crash) runs no `finally`: the
    scratch checkpoints a non-chief makes with tempfile (training/job.py) go with the launcher's
    own folder, not left in /tmp run after run."""
    (tmp_path / 'modules').mkdir()
    (tmp_path / 'modules' / 'scratch_worker.py').write_text(
        'import os, tempfile, time\n'
        'folder = tempfile.mkdtemp(prefix="ckpt_1_")\n'
        'open(os.path.join(folder, "ckpt-10.index"), "w").close()\n'
        'print(folder, flush=True)\n'
        'time.sleep(600)\n')
    (tmp_path / 'tmp').mkdir()
    monkeypatch.setenv('PYTHONPATH', str(tmp_path / 'modules'))
    monkeypatch.setenv('TMPDIR', str(tmp_path / 'tmp'))
    monkeypatch.setattr(tempfile, 'tempdir', None)   # read TMPDIR again
    monkeypatch.setattr(worker, 'MODULE', 'scratch_worker')
    (tmp_path / 'logs' / 'workers').mkdir(parents=True)
    launcher = local.LocalWorkers(str(tmp_path / 'logs'), 2)
    launcher.start([])
    logs = [tmp_path / 'logs' / 'workers' / f'worker-{i}.log' for i in range(2)]
    deadline = time.time() + 60
    while not all(log.exists() and log.read_text().strip() for log in logs):
        assert time.time() < deadline, 'the workers never made their scratch folders'
        time.sleep(0.2)
    made = [log.read_text().strip() for log in logs]
    assert all(os.path.isfile(os.path.join(folder, 'ckpt-10.index')) for folder in made)
    launcher.stop()   # SIGKILL: no worker removes its own
    assert not any(os.path.exists(folder) for folder in made), made
    assert os.listdir(tmp_path / 'tmp') == []


def test_a_failed_workers_error_is_shown_even_when_a_long_dump_follows_it(tmp_path):
    log = tmp_path / 'worker-0.log'
    frames = ''.join(f'  File "m{i}.py", line {i}, in f\n    call()\n' for i in range(30))
    dump = ''.join(f'  tensor spec {i}\n' for i in range(80))
    log.write_text('starting\nTraceback (most recent call last):\n' + frames +
                   'ValueError: Found an unshardable source dataset\n' + dump)
    shown = local._tail(str(log))
    assert 'ValueError: Found an unshardable source dataset' in shown
    assert 'File "m29.py"' in shown and 'File "m0.py"' not in shown  # innermost frames
    log.write_text(''.join(f'line {i}\n' for i in range(50)))  # no traceback: the last lines
    assert local._tail(str(log)).splitlines() == [f'line {i}' for i in range(30, 50)]
