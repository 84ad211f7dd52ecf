"""The article's case: Keras' ResNet-50 trained with our step functions, on GPUs or this CPU.

    python -m bench.bench_seed_case [--smoke] [--repeats 1] [--size PX] [--batch B]

Prints the machine and one table: images/s at 1, 2, ... replicas and the scaling efficiency
against linear; float32 against the mixed policy (mixed_float16 on GPU, mixed_bfloat16 on CPU)
in speed and peak memory; and the cost of gradient accumulation (k=4 micro-batches making the
same update as one step). Every measurement runs in its own fresh process
(bench/seed_case_worker.py): the replicas are GPUs when present, otherwise logical CPU devices
of the one CPU, which share its cores and say nothing about multi-GPU scaling. Sizes follow
the hardware (224 px, 64 per replica on GPU; 128 px, 32 on a CPU with bf16 instructions; 64 px,
16 on other CPUs); warm-up steps are not timed. Peak memory is the GPU allocator's peak on GPU
and the process's peak RSS on CPU. Nothing here is asserted; with --repeats > 1 the
measurements are interleaved and the best of each is kept.
"""
import argparse
import dataclasses
import json
import os
import subprocess
import sys
from typing import Dict, List, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ACCUM = 4   # micro-batches per update in the accumulation row


@dataclasses.dataclass(frozen=True)
class Plan:
    device: str                   # 'gpu' or 'cpu'
    replicas: Tuple[int, ...]     # replica counts measured
    size: int                     # image height and width
    batch: int                    # images per replica per update
    warmup: int                   # untimed updates (tracing, allocator growth)
    steps: int                    # timed updates
    mixed: str                    # the mixed policy of this device
    train_policy: str             # the policy of the scaling and accumulation rows


def plan(gpus: int, bf16_cpu: bool, smoke: bool = False) -> Plan:
    """Sizes for the hardware: the article's 224 px / 64 on GPUs, what 2 cores finish on CPU."""
    if gpus:
        counts = sorted({n for n in (1, 2, 4, 8, 16) if n <= gpus} | {gpus})
        if smoke:
            return Plan('gpu', tuple(counts[:2]), 64, 16, 2, 3, 'mixed_float16', 'mixed_float16')
        return Plan('gpu', tuple(counts), 224, 64, 5, 20, 'mixed_float16', 'mixed_float16')
    # Without bf16 instructions the CPU emulates bfloat16, far slower than float32 (measured
    # here on AVX2: 3.5-3.8x the CPU time per image at 64 px, 10x the wall time at 128 px), so
    # the scaling and accumulation rows use the policy one would train with there, and the
    # images are smaller for the bfloat16 row to finish.
    policy = 'mixed_bfloat16' if bf16_cpu else 'float32'
    if smoke:
        return Plan('cpu', (1, 2), 32, 4, 1, 2, 'mixed_bfloat16', policy)
    if bf16_cpu:
        return Plan('cpu', (1, 2), 128, 32, 2, 6, 'mixed_bfloat16', policy)
    return Plan('cpu', (1, 2), 64, 16, 2, 6, 'mixed_bfloat16', policy)


Config = Tuple[int, str, int]   # (replicas, policy, accumulation steps)


def configs(p: Plan) -> List[Config]:
    """Every distinct measurement the table needs, each run once per repeat."""
    wanted = [(n, p.train_policy, 1) for n in p.replicas]
    wanted += [(1, 'float32', 1), (1, p.mixed, 1), (1, p.train_policy, ACCUM)]
    return list(dict.fromkeys(wanted))


def memory_mb(result: dict) -> float:
    """The peak the table compares: the GPU allocator's, else the process's peak RSS."""
    return result['gpu_peak_mb'] if 'gpu_peak_mb' in result else result['peak_rss_mb']


def table(p: Plan, results: Dict[Config, dict]) -> List[Tuple[str, ...]]:
    """Rows of (measurement, images/s, images per CPU-second, against the reference, memory).

    Images per CPU-second (CPU runs only) is what a shared machine's load stretches least."""
    ips = {config: r['images_per_second'] for config, r in results.items()}
    base = ips[(1, p.train_policy, 1)]
    unit = 'GPU' if p.device == 'gpu' else 'logical CPU device'

    def speed(config: Config) -> Tuple[str, str]:
        per_cpu = results[config].get('images_per_cpu_second')
        return (f'{ips[config]:.1f}',
                f'{per_cpu:.2f}' if p.device == 'cpu' and per_cpu is not None else '')

    rows = []
    for n in p.replicas:
        config = (n, p.train_policy, 1)
        against = ('the reference' if n == 1 else f'{ips[config] / base:.2f}x one; '
                   f'{100 * ips[config] / (n * base):.0f}% of linear')
        rows.append((f'{n} {unit}{"s" if n > 1 else ""}, {p.train_policy}', *speed(config),
                     against, f'{memory_mb(results[config]):.0f}'))
    f32, mixed = results[(1, 'float32', 1)], results[(1, p.mixed, 1)]
    rows.append(('1 replica, float32', *speed((1, 'float32', 1)), 'the reference',
                 _memory_cell(p, f32)))
    rows.append((f'1 replica, {p.mixed}', *speed((1, p.mixed, 1)),
                 f'{ips[(1, p.mixed, 1)] / ips[(1, "float32", 1)]:.2f}x float32 speed; '
                 f'{_change(memory_mb(mixed), memory_mb(f32))} memory',
                 _memory_cell(p, mixed)))
    if p.device == 'cpu':   # RSS counts the runtime too: the growth while training, apart
        rows.append((f'same, memory grown during training ({p.mixed} vs float32)', '', '',
                     _change(_growth(mixed), _growth(f32)),
                     f'{_growth(mixed):.0f} vs {_growth(f32):.0f}'))
    config = (1, p.train_policy, ACCUM)
    rows.append((f'accumulation k={ACCUM}: {ACCUM} x {p.batch // ACCUM} images per update, '
                 f'{p.train_policy}', *speed(config),
                 f'{ips[config] / base:.2f}x one step of {p.batch} '
                 f'({100 * (1 - ips[config] / base):+.0f}% overhead)',
                 f'{memory_mb(results[config]):.0f}'))
    return rows


def _growth(result: dict) -> float:
    return result['peak_rss_mb'] - result['rss_before_training_mb']


def _change(new: float, old: float) -> str:
    return f'{100 * (new / old - 1):+.0f}%'


def _memory_cell(p: Plan, result: dict) -> str:
    if p.device == 'gpu':
        return f'{memory_mb(result):.0f}'
    return f'{result["peak_rss_mb"]:.0f} ({_growth(result):.0f} grown in training)'


def machine() -> List[str]:
    import tensorflow as tf
    from training import precision
    model = 'unknown'
    if os.path.exists('/proc/cpuinfo'):
        with open('/proc/cpuinfo') as handle:
            model = next((line.split(':', 1)[1].strip() for line in handle
                          if line.startswith('model name')), model)
    gpus = [tf.config.experimental.get_device_details(g).get('device_name', g.name)
            for g in tf.config.list_physical_devices('GPU')]
    return [f'CPU: {model}, {os.cpu_count()} cores, bf16 instructions: '
            f'{precision.cpu_has_bf16()}',
            f'GPUs: {", ".join(gpus) if gpus else "none"}',
            'Load average (1, 5, 15 min): %.2f %.2f %.2f' % os.getloadavg(),
            f'TensorFlow {tf.__version__}']


def run(p: Plan, config: Config) -> dict:
    replicas, policy, accum = config
    command = [sys.executable, '-m', 'bench.seed_case_worker', '--replicas', str(replicas),
               '--policy', policy, '--accum', str(accum), '--size', str(p.size),
               '--batch', str(p.batch), '--warmup', str(p.warmup), '--steps', str(p.steps)]
    env = {**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2'}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f'{" ".join(command)} failed:\n{done.stderr[-3000:]}')
    return json.loads(done.stdout.split('RESULT ', 1)[1])


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--smoke', action='store_true', help='tiny sizes: about a minute')
    parser.add_argument('--repeats', type=int, default=1)
    parser.add_argument('--size', type=int, help='image height and width (default: by device)')
    parser.add_argument('--batch', type=int, help='images per replica per update')
    args = parser.parse_args(argv)
    import tensorflow as tf
    from training import precision
    p = plan(len(tf.config.list_physical_devices('GPU')), precision.cpu_has_bf16(), args.smoke)
    p = dataclasses.replace(p, size=args.size or p.size, batch=args.batch or p.batch)
    if p.batch % ACCUM:
        raise SystemExit(f'--batch must be a multiple of {ACCUM} (the accumulation row)')
    print('\n'.join(machine()), flush=True)
    best: Dict[Config, dict] = {}
    for repeat in range(args.repeats):
        for config in configs(p):
            result = run(p, config)
            print(f'[{repeat + 1}/{args.repeats}] {config}: {json.dumps(result)}', flush=True)
            if (config not in best or
                    result['images_per_second'] > best[config]['images_per_second']):
                best[config] = result
    memory = 'GPU allocator peak' if p.device == 'gpu' else 'peak RSS of the process'
    print(f'\nResNet-50 (keras.applications, weights=None, 1000 classes), {p.size}x{p.size} '
          f'synthetic images, {p.batch} per replica per update, SGD, our step functions; '
          f'{p.warmup} warm-up + {p.steps} timed updates each. Load average now: '
          '%.2f %.2f %.2f' % os.getloadavg())
    print(f'\n| Measurement | Images/s | Images/CPU-s | Against | Peak memory, MB ({memory}) |'
          '\n|---|---|---|---|---|')
    for row in table(p, best):
        print('| ' + ' | '.join(row) + ' |')


if __name__ == '__main__':
    main()
