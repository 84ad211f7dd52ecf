"""Ingestion benchmark: the component's Beam graph with 1 and 2 workers against a naive loop.

    python -m bench.bench_ingest [--images 20000] [--size 32] [--repeats 2]

Generates N synthetic PNGs (size x size RGB, 10 classes) once, and a subset of N/5 of them
(hard links), then runs every measurement in its own fresh process (so each peak RSS is its
own), interleaved over the repeats so that machine noise hits every configuration alike; the
best run of each is reported. The naive loop and the Beam graph read the same files, apply the
same full decode and build the same tf.Example. StatisticsGen (the stock executor) then runs on
the 2-worker output.

Two sizes separate a fixed cost from a rate. Beam's DirectRunner starts its worker processes,
and each imports TensorFlow, before any file is read: seconds that do not depend on N. The
"marginal" rate, (N - N/5) / (time at N - time at N/5), is the throughput once running, and
peak RSS at both sizes shows whether memory grows with the data. Prints one markdown table with
the issue's target. Nothing here is asserted.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_images(root: str, count: int, size: int, classes: int = 10) -> int:
    """Writes `count` PNGs (a class-coloured gradient plus noise, so PNG cannot trivially
    compress them); returns their total size in bytes."""
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 1, size)[None, :, None]
    total = 0
    for i in range(count):
        label = i % classes
        colour = np.array([(label * 37) % 256, (label * 91) % 256, (label * 53) % 256])
        pixels = ramp * colour + rng.integers(0, 48, (size, size, 3))
        folder = os.path.join(root, f'class_{label}')
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f'{i:06d}.png')
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path)
        total += os.path.getsize(path)
    return total


def run(mode: str, source: str, out: str, workers: int = 1) -> dict:
    if os.path.exists(out):
        shutil.rmtree(out)
    command = [sys.executable, '-m', 'bench.ingest_worker', mode, source, out,
               '--workers', str(workers)]
    env = {**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2'}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f'{mode} failed:\n{result.stderr[-3000:]}')
    return json.loads(result.stdout.split('RESULT ', 1)[1])


def subset(images: str, root: str, count: int) -> str:
    """Hard links to the first `count` files (round-robin over classes) under root."""
    names = sorted(os.listdir(images))
    files = [sorted(os.listdir(os.path.join(images, n))) for n in names]
    for i in range(count):
        name, listing = names[i % len(names)], files[i % len(names)]
        os.makedirs(os.path.join(root, name), exist_ok=True)
        os.link(os.path.join(images, name, listing[i // len(names)]),
                os.path.join(root, name, listing[i // len(names)]))
    return root


CONFIGS = {'naive loop': ('naive', 1), 'Beam, 1 worker': ('beam', 1),
           'Beam, 2 workers': ('beam', 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--images', type=int, default=20_000)
    parser.add_argument('--size', type=int, default=32, help='image height and width')
    parser.add_argument('--repeats', type=int, default=2)
    args = parser.parse_args()
    sizes = (args.images // 5, args.images)
    best = {}

    def keep(key, result):
        if key not in best or result['seconds'] < best[key]['seconds']:
            best[key] = result

    with tempfile.TemporaryDirectory(prefix='bench-ingest-') as tmp:
        folders = {args.images: os.path.join(tmp, 'images')}
        total_bytes = make_images(folders[args.images], args.images, args.size)
        folders[sizes[0]] = subset(folders[args.images], os.path.join(tmp, 'small'), sizes[0])
        print(f'{args.images} PNGs of {args.size}x{args.size}, {total_bytes / 2**20:.1f} MB',
              flush=True)
        for repeat in range(args.repeats):
            for count in sizes:
                for name, (mode, workers) in CONFIGS.items():
                    result = run(mode, folders[count], os.path.join(tmp, 'out'), workers)
                    assert result['records'] == count, result
                    print(f'[{repeat + 1}/{args.repeats}] {name}, {count}: {json.dumps(result)}',
                          flush=True)
                    keep((name, count), result)
            if repeat == 0:  # keep one 2-worker output for StatisticsGen
                run('beam', folders[args.images], os.path.join(tmp, 'examples'), 2)
            result = run('stats', os.path.join(tmp, 'examples'), os.path.join(tmp, 'stats'), 2)
            print(f'[{repeat + 1}/{args.repeats}] StatisticsGen: {json.dumps(result)}', flush=True)
            keep('stats', result)
    print_table(best, sizes, total_bytes)


def print_table(best: dict, sizes, total_bytes: int) -> None:
    small, n = sizes
    mb = total_bytes / 2 ** 20

    def marginal(name):
        return (n - small) / max(1e-9, best[(name, n)]['seconds'] - best[(name, small)]['seconds'])

    naive_time, naive_marginal = best[('naive loop', n)]['seconds'], marginal('naive loop')
    print(f'\n{n} images, {mb:.1f} MB ({small} for the marginal rate and memory growth)\n')
    print('| Configuration | Time (s) | Images/s | MB/s | vs naive | Marginal images/s | '
          'Marginal vs naive | Peak RSS MB (N/5 -> N) | Target |')
    print('|---|---|---|---|---|---|---|---|---|')
    for name in CONFIGS:
        seconds = best[(name, n)]['seconds']
        target = '>= 1.6x' if name == 'Beam, 2 workers' else ''
        print(f'| {name} | {seconds:.2f} | {n / seconds:.0f} | {mb / seconds:.2f} | '
              f'{naive_time / seconds:.2f}x | {marginal(name):.0f} | '
              f'{marginal(name) / naive_marginal:.2f}x | '
              f'{best[(name, small)]["peak_rss_mb"]:.0f} -> {best[(name, n)]["peak_rss_mb"]:.0f} | '
              f'{target} |')
    stats = best['stats']
    print(f'| StatisticsGen on the output (2 workers) | {stats["seconds"]:.2f} | '
          f'{n / stats["seconds"]:.0f} | | | | | {stats["peak_rss_mb"]:.0f} | report |')


if __name__ == '__main__':
    main()
