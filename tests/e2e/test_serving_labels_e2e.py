"""Candidates, approval and canary labels, as a team runs them, with flags alone: two runs in
`--push-mode candidate` (a new span each), `--promote`, a third run, `--reject --reason`, and
`--rollback`. After each step serving/models.config is parsed as TF Serving parses it
(model_server_config_pb2) and its labels and loaded versions are checked."""
import glob
import json
import os
import sys

from google.protobuf import text_format
import pytest
from tensorflow_serving.config import model_server_config_pb2

from helpers import copy_digits, run_command, runner_command

pytestmark = pytest.mark.e2e


def _config(serving):
    with open(os.path.join(serving, 'models.config')) as handle:
        config = text_format.Parse(handle.read(), model_server_config_pb2.ModelServerConfig())
    model, = config.model_config_list.config
    assert model.base_path == serving and model.name == 'smoke'
    return list(model.model_version_policy.specific.versions), dict(model.version_labels)


def _runner(*args):
    result = run_command([sys.executable, 'runner.py', *args], timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_candidate_promote_reject_rollback(tmp_path):
    data, out = tmp_path / 'data', str(tmp_path / 'out')
    serving = os.path.join(out, 'serving')
    command = runner_command(str(data), out, '--config', 'smoke', '--push-mode', 'candidate',
                             '--window', '1')

    def run(span: int) -> str:
        copy_digits(str(data / f'span-{span}'), per_class=20 + span)
        result = run_command(command)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        return result.stdout

    first = run(1)   # nothing served yet: the first blessed version becomes stable
    assert f'pushed: version 1 at {serving}/1\n' in first
    assert _config(serving) == ([1], {'stable': 1})

    second = run(2)
    assert f'pushed: version 2 at {serving}/2 as canary; stable is version 1' in second
    assert 'baseline: served version 1' in second
    assert _config(serving) == ([1, 2], {'stable': 1, 'canary': 2})
    with open(os.path.join(out, 'report.html'), encoding='utf-8') as handle:
        assert 'pushed: version 2 as canary' in handle.read()   # the history's outcome
    # What a notification carries (the run's JSON summary is its payload, pipeline/runs/notify.py).
    summaries = sorted(glob.glob(os.path.join(out, 'logs', '*.summary.json')))
    with open(summaries[-1]) as handle:
        payload = json.load(handle)
    assert (payload['outcome'], payload['pushed_version']) == ('pushed', 2)
    assert payload['push_mode'] == 'candidate'
    assert payload['labels'] == {'stable': 1, 'canary': 2}
    assert 'as canary; stable is version 1' in payload['summary']

    assert 'labels now stable 2 in' in _runner('--promote', '2', '--output', out)
    assert _config(serving) == ([2], {'stable': 2})

    third = run(3)
    assert 'baseline: served version 2' in third   # compared with stable, the promoted one
    assert f'pushed: version 3 at {serving}/3 as canary; stable is version 2' in third
    assert _config(serving) == ([2, 3], {'stable': 2, 'canary': 3})

    assert 'Rejected version 3: labels now stable 2' in _runner(
        '--reject', '3', '--reason', 'worse on the 3s', '--output', out)
    assert _config(serving) == ([2], {'stable': 2})
    with open(os.path.join(out, 'approvals.jsonl')) as handle:
        records = [json.loads(line) for line in handle]
    assert [(r['action'], r['version'], r['reason']) for r in records] == [
        ('promote', 2, ''), ('reject', 3, 'worse on the 3s')]
    assert records[1]['before'] == {'stable': 2, 'canary': 3}
    assert records[1]['after'] == {'stable': 2, 'canary': None} and '@' in records[1]['by']

    assert 'version 4 = copy of version 1' in _runner('--rollback', '1', '--output', out)
    assert _config(serving) == ([4], {'stable': 4})
    # A decision that cannot be made is one line, and changes nothing.
    refused = run_command([sys.executable, 'runner.py', '--reject', '2', '--output', out],
                          timeout=300)
    assert refused.returncode == 2 and 'version 2 is not the canary' in refused.stderr
    assert _config(serving) == ([4], {'stable': 4})
