"""Equivalence of the training maths across replicas, accumulation and workers (marked slow).

Every case runs distributed_worker.py in a process of its own (logical CPU devices must be set
before TensorFlow's runtime starts; a child of the warm interpreter, the two workers of a
cluster side by side; a case's XLA variant after it in the same process) for 10
SGD-with-momentum updates under a warm-up + cosine schedule, from the same initial weights
over the same data, and compares the final float32 weights with one replica at the same
examples-per-update (32). The usual mistakes each break this: a loss divided by the
per-replica batch, a schedule advancing per micro-batch, gradients summed but not averaged,
or an update per micro-batch.
"""
import json
import os
import re
import sys

import numpy as np
import pytest

from launch import local

from helpers import REPO_ROOT, run_command
import warm_python

pytestmark = pytest.mark.slow
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'distributed_worker.py')
TOLERANCE = 1e-5


def _train(tmp_path, name, *args):
    out = str(tmp_path / f'{name}.npz')
    # A child of the warm interpreter (TensorFlow imported, its runtime not yet started, so the
    # worker still sets its logical devices first), as a fresh `python` would run it.
    done = run_command([sys.executable, WORKER, *args, '--out', out], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return _load(out)


def _load(out):
    """(weights, info) a run wrote to out."""
    with open(out + '.json') as handle:
        info = json.load(handle)
    weights = np.load(out)
    return [weights[f'w{i}'] for i in range(len(weights.files))], info


def _max_diff(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


CASES = [
    (2, 16, 1, False),   # (a) 2 replicas x 16 == 1 x 32
    (4, 8, 1, False),    # (a) 4 replicas x 8 == 1 x 32
    (1, 8, 4, False),    # (b) accumulate 4 x 8 == one step at 32, schedule per update
    (2, 4, 4, False),    # (c) 2 replicas x 4, accumulate 4 == 1 x 32
    # The same maths with the forward and backward pass compiled by XLA (--xla on).
    (1, 32, 1, True),
    (2, 16, 1, True),
    (2, 4, 4, True),
]


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """run(replicas, batch, accum, jit) -> (weights, info, out). Each (replicas, batch, accum)
    trains in one process, with its XLA variant after it when a case asks for one (--jit-too):
    only the logical devices need a process of their own, and each variant still trains a new
    model from the same initial weights."""
    done = {}

    def run(replicas, batch, accum, jit):
        key = (replicas, batch, accum)
        if key not in done:
            tmp = tmp_path_factory.mktemp('run')
            with_jit = any(case == (*key, True) for case in CASES)
            _train(tmp, 'run', '--replicas', str(replicas), '--batch', str(batch),
                   '--accum', str(accum), *(['--jit-too'] if with_jit else []))
            done[key] = str(tmp / 'run.npz')
        out = done[key] + ('.jit.npz' if jit else '')
        return (*_load(out), out)
    return run


@pytest.fixture(scope='module')
def reference(runs):
    """One replica, batch 32, no accumulation."""
    weights, info, out = runs(1, 32, 1, False)
    saved = np.load(out + '.init.npz')
    initial = [saved[f'arr_{i}'] for i in range(len(saved.files))]
    assert info['iterations'] == 10
    assert _max_diff(weights, initial) > 1e-2  # training really moved the weights
    return weights


@pytest.mark.parametrize('replicas, batch, accum, jit', CASES)
def test_same_weights_as_one_replica_at_the_same_examples_per_update(
        runs, reference, replicas, batch, accum, jit):
    weights, info, _ = runs(replicas, batch, accum, jit)
    assert info['replicas'] == replicas
    assert info['iterations'] == 10  # one optimizer update (and schedule step) per k batches
    assert _max_diff(weights, reference) < TOLERANCE
    # One batched all-reduce per update, traced once per replica: never one per micro-batch.
    assert info['reductions_traced'] == {'all_reduce': replicas, 'strategy_reduce': 0}


@pytest.fixture(scope='module')
def overflow_runs(tmp_path_factory):
    """The float16 overflow case, then its XLA variant, in one process: {jit: out}."""
    tmp = tmp_path_factory.mktemp('fp16')
    _train(tmp, 'fp16', '--replicas', '2', '--batch', '8', '--accum', '2',
           '--policy', 'mixed_float16', '--steps', '3', '--overflow-step', '2', '--jit-too')
    return {False: str(tmp / 'fp16.npz'), True: str(tmp / 'fp16.npz.jit.npz')}


@pytest.mark.parametrize('jit', [False, True])
def test_mixed_float16_overflow_is_skipped_on_two_replicas(overflow_runs, jit):
    _, info = _load(overflow_runs[jit])
    saved = np.load(overflow_runs[jit] + '.overflow.npz')
    half = len(saved.files) // 2
    before = [saved[f'arr_{i}'] for i in range(half)]
    after = [saved[f'arr_{i + half}'] for i in range(half)]
    assert _max_diff(before, after) == 0.0  # the overflowing update changed nothing
    assert all(np.isfinite(w).all() for w in after)
    assert info['skipped'] >= 1 and info['iterations'] == 3 - info['skipped']
    assert info['loss_scale'] < 3e38  # the scale was reduced after the overflow


def _two_workers(tmp_path, *args):
    """Runs the worker as a two-process cluster on 127.0.0.1; each one's (weights, info)."""
    ports = local.free_ports(2)  # as the launcher picks them: below the ephemeral range
    cluster = {'worker': [f'127.0.0.1:{p}' for p in ports]}
    processes = []
    for index in range(2):  # both at once, children of the warm interpreter
        tf_config = json.dumps({'cluster': cluster, 'task': {'type': 'worker', 'index': index}})
        out = str(tmp_path / f'worker{index}.npz')
        processes.append((out, warm_python.start(
            [WORKER, *args, '--out', out], REPO_ROOT, {**os.environ, 'TF_CONFIG': tf_config},
            os.devnull, out + '.log')))
    results = []
    for out, process in processes:
        assert process.wait(timeout=300) == 0, open(out + '.log').read()[-2000:]
        weights = np.load(out)
        with open(out + '.json') as handle:
            results.append(([weights[f'w{i}'] for i in range(len(weights.files))],
                            json.load(handle)))
    return results


def test_two_workers_agree_with_each_other_and_with_one_replica(tmp_path, reference):
    (first, info), (second, other) = _two_workers(tmp_path, '--batch', '16')
    assert info['replicas'] == other['replicas'] == 2
    assert _max_diff(first, second) == 0.0
    assert _max_diff(first, reference) < TOLERANCE


def _epoch_weights(out, key):
    saved = np.load(out + '.epochs.npz')
    names = sorted((n for n in saved.files if n.startswith(key + '_')),
                   key=lambda n: int(n.rsplit('_', 1)[1]))
    return [saved[n] for n in names]


def test_early_stopping_on_two_replicas_restores_the_best_epochs_mirrored_weights(tmp_path):
    weights, info = _train(tmp_path, 'es', '--replicas', '2', '--batch', '8',
                           '--early-stopping')
    assert info['replicas'] == 2 and info['epochs_run'] < 20  # stopped early
    # Patience 2, from the last epoch that improved held-out accuracy or loss, or from epoch 15
    # (the schedule's last quarter: 30 of 40 updates) when that is later.
    counted = int(re.search(r'after epoch (\d+)', info['stop_reason']).group(1))
    assert counted >= max(info['best_epoch'], 15) and info['epochs_run'] == counted + 2
    assert info['stop_reason'].startswith(
        'early stopping: neither held-out accuracy nor loss improved')
    best = _epoch_weights(str(tmp_path / 'es.npz'), f's{2 * info["best_epoch"]}')
    last = _epoch_weights(str(tmp_path / 'es.npz'), f's{info["steps_run"]}')
    assert _max_diff(weights, best) == 0.0 and _max_diff(weights, last) > 0.0


def test_two_workers_stop_early_at_the_same_epoch_with_the_same_weights(tmp_path):
    # A budget far away: each step still agrees on the clock with an all-reduce.
    results = _two_workers(tmp_path, '--batch', '8', '--early-stopping', '--budget', '3600')
    (first, info), (second, other) = results
    # Each worker's own clock: its rate, input wait and epoch times (loop._Speed).
    timing = ('examples_per_second', 'input_wait_fraction', 'epoch_seconds')
    assert all(key in info for key in timing)
    info, other = ({k: v for k, v in i.items() if k not in timing} for i in (info, other))
    assert info == other and info['replicas'] == 2 and info['epochs_run'] < 20
    # Same restored weights; BatchNorm's moving statistics (4 and 5) are each worker's own
    # batches' by design, so they are left out.
    keep = [i for i in range(len(first)) if i not in (4, 5)]
    assert len(first) == 8 and _max_diff([first[i] for i in keep],
                                         [second[i] for i in keep]) == 0.0
