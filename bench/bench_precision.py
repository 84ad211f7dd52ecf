"""Precision benchmark: where mixed_bfloat16 starts to pay on this CPU, to calibrate `auto`.

    nice python -m bench.bench_precision [--rungs NAME ...] [--rounds 3] [--seconds 3]

For a ladder of models of increasing per-example cost (the default models.resnet at several
input sizes and widths, MobileNetV3Small, ResNet-50 at small sizes), trains each on synthetic
images with our own step functions under float32 and under mixed_bfloat16, in turns in one fresh
process per model (bench/trainer_worker.py `policies` mode: both built and traced first, then
short timed runs alternating, the best of --rounds kept), and prints one table: multiply-adds per
example (training/cost.py), images/s under each policy, their ratio, what `auto` picks
with the threshold in training/precision.py, and the seconds that deciding `auto`
adds (one float32 build and a count). It ends with the crossover it suggests: the smallest cost
from which every larger rung ran at least as fast in bfloat16. Nothing here is asserted.
"""
import argparse
import json
import math
import os
import subprocess

from bench.bench_trainer import run
from training import precision
from models import resnet

# name: (builder import path, side, channels, batch); ordered by cost.
LADDER = {
    'resnet 8x8x1 (digits)': ('models.resnet.build_model', 8, 1, 64),
    'resnet 12x12x1': ('models.resnet.build_model', 12, 1, 64),
    'resnet 48x48x3': ('models.resnet.build_model', 48, 3, 64),
    'resnet 28x28x1': ('models.resnet.build_model', 28, 1, 64),
    'mobilenet_v3_small 128': ('models.applications.mobilenet_v3_small', 128, 3, 32),
    'resnet 64x64x3': ('models.resnet.build_model', 64, 3, 64),
    'resnet 96x96x3': ('models.resnet.build_model', 96, 3, 32),
    'resnet 224x224x3': ('models.resnet.build_model', 224, 3, 32),
    'mobilenet_v3_small 224': ('models.applications.mobilenet_v3_small', 224, 3, 32),
    'efficientnet_b0 128': ('models.applications.efficientnet_b0', 128, 3, 32),
    'resnet50 32': ('models.applications.resnet50', 32, 3, 16),
    'mobilenet_v3_small 320': ('models.applications.mobilenet_v3_small', 320, 3, 32),
    'resnet wide 64x64x3': ('bench.bench_precision.resnet_wide', 64, 3, 16),
    'resnet50 64': ('models.applications.resnet50', 64, 3, 16),
    'resnet50 128': ('models.applications.resnet50', 128, 3, 32),   # the case
}


def resnet_wide(input_shape, num_classes):
    """The default model at 4x the width (base 128, up to 512 channels): ~16x the multiply-adds."""
    return resnet.build_model(input_shape, num_classes, base_width=128, max_width=512)


def measure(rung: str, rounds: int, seconds: float) -> dict:
    builder, side, channels, batch = LADDER[rung]
    return run('policies', '-', 0, builder=builder, size=side, channels=channels, batch=batch,
               rounds=rounds, seconds=seconds, warmup=2)


def _cost(result: dict) -> precision.Cost:
    return precision.Cost(result['macs'], result.get('depthwise_macs', 0))


def crossover(results: dict) -> tuple:
    """(largest cost where bf16 lost, smallest cost from which it never lost), in multiply-adds,
    over the models that the multiply-add threshold decides (not the depthwise-heavy ones)."""
    ordered = sorted((r for r in results.values()
                      if _cost(r).depthwise_share < precision.DEPTHWISE_MAX_SHARE),
                     key=lambda r: r['macs'])
    losing = [r['macs'] for r in ordered if r['mixed_bfloat16'] < r['float32']]
    above = [r['macs'] for r in ordered if not losing or r['macs'] > max(losing)]
    return (max(losing) if losing else None), (min(above) if above else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--rungs', nargs='+', default=list(LADDER), choices=list(LADDER),
                        metavar='RUNG', help=f'some of: {", ".join(LADDER)}')
    parser.add_argument('--rounds', type=int, default=3, help='timed turns per policy')
    parser.add_argument('--seconds', type=float, default=3.0, help='seconds per timed run')
    args = parser.parse_args()
    load = os.getloadavg()
    results = {}
    for rung in args.rungs:
        try:
            results[rung] = measure(rung, args.rounds, args.seconds)
        except subprocess.CalledProcessError as error:
            print(f'{rung}: failed\n{error.stderr[-2000:]}', flush=True)
            continue
        print(f'{rung}: {json.dumps(results[rung])}', flush=True)
    print(f'\nload average before: {load[0]:.2f}, after: {os.getloadavg()[0]:.2f} '
          f'({os.cpu_count()} cores); bf16 CPU flags: {precision.cpu_has_bf16()}')
    print('\n| Model (batch) | Multiply-adds per example | depthwise share | float32 img/s | '
          'mixed_bfloat16 img/s | bf16/f32 | auto picks | auto decision s |\n'
          '|---|---|---|---|---|---|---|---|')
    for rung, r in sorted(results.items(), key=lambda item: item[1]['macs']):
        ratio = r['mixed_bfloat16'] / r['float32']
        auto = precision.resolve_policy('auto', num_gpus=0, model_cost=_cost(r))
        gain = r[auto] / r['float32']
        print(f'| {rung} ({LADDER[rung][3]}) | {r["macs"] / 1e6:,.1f}M | '
              f'{_cost(r).depthwise_share:.0%} | {r["float32"]:.1f} | '
              f'{r["mixed_bfloat16"]:.1f} | {ratio:.2f}x | {auto} ({gain:.2f}x) | '
              f'{r["measure_seconds"]:.2f} |')
    lost, won = crossover(results)
    if won is None:
        print('\nbfloat16 never paid from any rung up: keep auto at float32 on this CPU.')
        return
    between = math.sqrt(lost * won) if lost else won
    print(f'\nbfloat16 lost up to {(lost or 0) / 1e6:,.1f}M and never from {won / 1e6:,.1f}M up: '
          f'a threshold between them, e.g. {between / 1e6:,.0f}M (now '
          f'{precision.BF16_MIN_MACS / 1e6:,.0f}M).')


if __name__ == '__main__':
    main()
