"""End-to-end (e2e): `runner.py --local --workers 2` trains with two local processes under
MultiWorkerMirroredStrategy (one replica each), and the chief's export is pushed.
"""
import json
import os
import subprocess

import pytest

from helpers import REPO_ROOT, copy_digits, runner_command
from pipeline import summary as summary_lib

pytestmark = pytest.mark.e2e


def test_two_local_workers_train_the_pushed_model(tmp_path):
    data, out = copy_digits(str(tmp_path / 'data')), str(tmp_path / 'out')
    result = subprocess.run(runner_command(data, out, '--config', 'smoke', '--workers', '2'),
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert 'pushed: version 1 at' in result.stdout
    run = summary_lib.read_latest_run(os.path.join(out, 'metadata.sqlite'), 'smoke')
    model = run.trained_model()
    recorded = {key: summary_lib.custom_property(model, key)
                for key in ('num_workers', 'num_replicas', 'steps_run')}
    assert recorded == {'num_workers': 2.0, 'num_replicas': 2.0, 'steps_run': 30.0}
    # Both workers ran the job on the 2-replica cluster; only the chief wrote metrics.
    trainer = os.path.join(out, 'pipeline_root', 'ImageTrainer')
    found = {name: os.path.join(root, name) for root, _, names in os.walk(trainer)
             for name in names if name.startswith('worker-') or name == 'metrics.json'}
    assert sorted(found) == ['metrics.json', 'worker-0.log', 'worker-1.log'], found
    for name in ('worker-0.log', 'worker-1.log'):
        assert 'Training models.resnet.build_model on 2 replica(s)' in open(found[name]).read()
    assert json.load(open(found['metrics.json']))['num_workers'] == 2
