"""The launchers registry (launch/launchers.py): the trainer's `launcher` property as a Choice, the
names it takes, each launcher loaded on first use, and what the two launchers say about readers
and settings."""
import json
import re
import subprocess
import sys

import pytest

from helpers import REPO_ROOT
from launch import launchers, local
from training.params import TrainParams


def test_the_default_choice_is_recorded_as_nothing_and_others_round_trip():
    assert launchers.Choice().to_json() == ''  # local: the digest of a local training unchanged
    assert launchers.Choice.from_json('') == launchers.Choice('local')
    pods = launchers.Choice('kubernetes', '{"workers": 2}')
    assert json.loads(pods.to_json()) == {'name': 'kubernetes', 'spec': '{"workers": 2}'}
    assert launchers.Choice.from_json(pods.to_json()) == pods


def test_an_unknown_launcher_is_refused_with_the_names():
    assert launchers.NAMES[:2] == ('local', 'kubernetes')  # the default first
    with pytest.raises(ValueError, match=re.escape(
            f"launcher must be one of {launchers.NAMES}, got 'ray'")):
        launchers.Choice('ray')
    with pytest.raises(ValueError, match="got 'ray'"):
        launchers.get('ray')


def test_local_is_this_module_and_reads_with_every_worker():
    launcher = launchers.get('local')
    assert isinstance(launcher, local.LocalLauncher) and launchers.get('local') is launcher
    assert launcher.readers('', TrainParams(workers=1)) == 1
    assert launcher.readers('', TrainParams(workers=2, global_batch_size=32)) == 2
    launcher.check('', TrainParams(workers=2, global_batch_size=32))  # nothing to refuse


def test_the_kubeflow_launcher_is_loaded_only_when_asked_for():
    """launch/ names the adapter by path only: loading the registry, or the local launcher,
    imports nothing of pipeline/kubeflow/."""
    code = ('import sys\nfrom launch import launchers\nlaunchers.get("local")\n'
            'assert not [m for m in sys.modules if m.startswith("pipeline")], sys.modules\n'
            'launchers.get("kubernetes")\n'
            'assert "pipeline.kubeflow.jobs.launcher" in sys.modules\n')
    done = subprocess.run([sys.executable, '-c', code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_kubernetes_launcher_reads_with_its_pods_and_checks_the_batch():
    from pipeline.kubeflow.jobs import tfjob
    launcher = launchers.get('kubernetes')
    spec = tfjob.TFJobSpec(workers=3, image='i').to_json()
    assert launcher.readers(spec, TrainParams(workers=1)) == 3
    launcher.check(spec, TrainParams(global_batch_size=48))
    with pytest.raises(ValueError, match=r'split global_batch_size \(32\) evenly, got 3'):
        launcher.check(spec, TrainParams(global_batch_size=32))
