"""Train-step benchmark: FLOP/s per model, precision and XLA against this machine's matmul peak.

    python -m bench.bench_step [--models NAME ...] [--rounds 2] [--seconds 2]

Each bundled model (the default models.resnet at the digits' and Fashion-MNIST's sizes, and the
keras.applications ones) runs in a fresh process of its own. There, in the same process and
minutes: the float32 and bfloat16 matmul peak (speed.matmul_peak, 2048 x 2048, measured before
and after the model, the higher kept), then the pipeline's own train step (job.build_steps, on
random images: the input pipeline is not timed) under float32 and mixed_bfloat16, each with XLA
off and on, timed in turns by the same code as the trainer's `auto` trial (training/trial.py).
FLOPs are counted from the model's forward multiply-adds: 6 per multiply-add and example
(speed.train_flops_per_example). The table gives images/s, GFLOP/s, the fraction of the float32
peak and of the peak of the step's own compute dtype, and the ratio to float32 without XLA.
The load average is printed with each model: on a shared machine only the ratios inside one
model's row group are comparable. Nothing here is asserted.
"""
import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANDIDATES = (('float32', False), ('float32', True), ('mixed_bfloat16', False),
              ('mixed_bfloat16', True))
# name: (builder import path, side, channels, global batch)
MODELS = {
    'resnet 8x8x1 (digits)': ('models.resnet.build_model', 8, 1, 64),
    # Fashion-MNIST's batch from the data (plan.auto_batch) is 128; 64 is the small splits'.
    'resnet 28x28x1 (Fashion-MNIST)': ('models.resnet.build_model', 28, 1, 128),
    'resnet 28x28x1, batch 64': ('models.resnet.build_model', 28, 1, 64),
    'mobilenet_v3_small 128': ('models.applications.mobilenet_v3_small', 128, 3, 32),
    'efficientnet_b0 128': ('models.applications.efficientnet_b0', 128, 3, 32),
    'resnet50 64': ('models.applications.resnet50', 64, 3, 16),
}
PEAK_SIZE = 2048


def measure(name: str, rounds: int, seconds: float) -> dict:
    """In this process: the peaks, then every candidate's images/s (see the docstring)."""
    import tensorflow as tf
    import keras
    from training import job as job_lib, loop, speed, trial
    builder, side, channels, batch = MODELS[name]
    shape = (side, side, channels)
    load = [os.getloadavg()[0]]
    peaks = {d.name: speed.matmul_peak(d, PEAK_SIZE, 1.0) for d in (tf.float32, tf.bfloat16)}
    job = job_lib.TrainJob(train_pattern='', eval_pattern='', image_shape=shape,
                           class_names=tuple(str(i) for i in range(10)),
                           options=loop.LoopOptions.of(train_steps=1000, global_batch_size=batch,
                                                       learning_rate=1e-3, model_builder=builder))
    strategy = tf.distribute.MirroredStrategy()
    flops = {}

    def build(candidate):
        keras.mixed_precision.set_global_policy(candidate.policy)
        steps = job_lib.build_steps(job, strategy, candidate.policy, candidate.xla)
        flops[candidate] = speed.train_flops_per_example(steps.model)
        keras.mixed_precision.set_global_policy('float32')
        return steps
    options = [trial.Candidate(policy, xla) for policy, xla in CANDIDATES]
    rates = trial.run(build, speed.synthetic_batches(shape, 10, batch), options, batch,
                      rounds=rounds, seconds=seconds)
    for dtype in (tf.float32, tf.bfloat16):
        peaks[dtype.name] = max(peaks[dtype.name], speed.matmul_peak(dtype, PEAK_SIZE, 1.0))
    load.append(os.getloadavg()[0])
    return {'batch': batch, 'flops_per_example': flops[options[0]], 'peaks': peaks,
            'load': load, 'rates': {c.label: rates[c] for c in options}}


def rows(name: str, result: dict) -> list:
    """Table rows of one model: one per candidate."""
    peaks, flops = result['peaks'], result['flops_per_example']
    base = result['rates']['float32']
    out = []
    for label, rate in result['rates'].items():
        dtype = 'bfloat16' if label.startswith('mixed_bfloat16') else 'float32'
        achieved = rate * flops
        out.append([f'{name} ({result["batch"]})', label, f'{rate:,.0f}',
                    f'{achieved / 1e9:,.1f}', f'{achieved / peaks["float32"]:.0%}',
                    f'{achieved / peaks[dtype]:.0%}', f'{rate / base:.2f}x'])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--models', nargs='+', default=list(MODELS), choices=list(MODELS),
                        metavar='NAME', help=f'some of: {", ".join(MODELS)}')
    parser.add_argument('--rounds', type=int, default=2, help='timed turns per candidate')
    parser.add_argument('--seconds', type=float, default=2.0, help='seconds per timed turn')
    parser.add_argument('--worker', help=argparse.SUPPRESS)  # one model, in this process
    args = parser.parse_args()
    if args.worker:
        print('RESULT ' + json.dumps(measure(args.worker, args.rounds, args.seconds)))
        return
    results = {}
    for name in args.models:
        command = [sys.executable, '-m', 'bench.bench_step', '--worker', name,
                   '--rounds', str(args.rounds), '--seconds', str(args.seconds)]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                              env={**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2'})
        if done.returncode or 'RESULT ' not in done.stdout:
            print(f'{name}: failed\n{done.stderr[-2000:]}', flush=True)
            continue
        results[name] = json.loads(done.stdout.split('RESULT ', 1)[1])
        print(f'{name}: {json.dumps(results[name])}', flush=True)
    print(f'\n{os.cpu_count()} cores. Peaks (GFLOP/s, {PEAK_SIZE}x{PEAK_SIZE} matmul) and load '
          'average, per model process:')
    for name, r in results.items():
        print(f'- {name}: float32 {r["peaks"]["float32"] / 1e9:,.0f}, bfloat16 '
              f'{r["peaks"]["bfloat16"] / 1e9:,.0f}; {r["flops_per_example"] / 1e6:,.1f} '
              f'MFLOP per trained example; load {r["load"][0]:.1f} -> {r["load"][1]:.1f}')
    print('\n| Model (batch) | step | img/s | GFLOP/s | of f32 peak | of own peak | '
          'vs float32 |\n|---|---|---|---|---|---|---|')
    for name, r in results.items():
        for row in rows(name, r):
            print('| ' + ' | '.join(row) + ' |')


if __name__ == '__main__':
    main()
