"""Ingestion benchmark: the component's Beam graph with 1 and 2 workers against a naive loop.

    python -m bench.bench_ingest [--images 20000] [--size 32] [--repeats 2] [--keep DIR]
                                 [--no-stats]

The issue's memory and speed targets: `--images 100000 --size 8` (20k and 100k files).

Generates N synthetic PNGs (size x size RGB, 10 classes) once (under --keep DIR, reused by the
next run with the same N and size; else in a temporary folder), and a subset of N/5 of them
(hard links), then runs every measurement in its own fresh process (so each peak RSS is its
own), interleaved over the repeats so that machine noise hits every configuration alike; the
best run of each is reported. The naive loop and the Beam graph read the same files, apply the
same full decode and build the same tf.Example. StatisticsGen (the stock executor) then runs on
the 2-worker output.

Two sizes separate a fixed cost from a rate. Beam's DirectRunner starts its worker processes,
and each imports TensorFlow, before any file is read: seconds that do not depend on N. The
"marginal" rate, (N - N/5) / (time at N - time at N/5), is the throughput once running, and
peak RSS at both sizes shows whether memory grows with the data (its growth from N/5 to N is
printed as a percentage). "Beam, in-process" is the same graph without worker processes
(`--direct_running_mode=in_memory`), which small inputs use. Prints one markdown table with
the issue's targets. Nothing here is asserted.
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


def run(mode: str, source: str, out: str, workers: int = 1, in_process: bool = False) -> dict:
    if os.path.exists(out):
        shutil.rmtree(out)
    command = [sys.executable, '-m', 'bench.ingest_worker', mode, source, out,
               '--workers', str(workers)] + (['--in-process'] if in_process else [])
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


CONFIGS = {'naive loop': ('naive', 1, False), 'Beam, in-process': ('beam', 1, True),
           'Beam, 1 worker': ('beam', 1, False), 'Beam, 2 workers': ('beam', 2, False)}


def prepare(tmp: str, count: int, size: int) -> tuple:
    """({count: folder}, total bytes): the N images and their N/5 subset under tmp, made once."""
    folders = {count: os.path.join(tmp, 'images'), count // 5: os.path.join(tmp, 'small')}
    stamp = os.path.join(tmp, 'made.json')
    if os.path.exists(stamp):
        with open(stamp) as handle:
            made = json.load(handle)
        if made['count'] == count and made['size'] == size:
            return folders, made['bytes']
    for folder in folders.values():
        shutil.rmtree(folder, ignore_errors=True)
    total_bytes = make_images(folders[count], count, size)
    subset(folders[count], folders[count // 5], count // 5)
    with open(stamp, 'w') as handle:
        json.dump({'count': count, 'size': size, 'bytes': total_bytes}, handle)
    return folders, total_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--images', type=int, default=20_000)
    parser.add_argument('--size', type=int, default=32, help='image height and width')
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--keep', help='folder to keep the generated images in, for reuse')
    parser.add_argument('--no-stats', action='store_true', help='skip StatisticsGen')
    args = parser.parse_args()
    sizes = (args.images // 5, args.images)
    best = {}

    def keep(key, result):
        if key not in best or result['seconds'] < best[key]['seconds']:
            best[key] = result

    with tempfile.TemporaryDirectory(prefix='bench-ingest-') as tmp:
        data = args.keep or tmp
        os.makedirs(data, exist_ok=True)
        folders, total_bytes = prepare(data, args.images, args.size)
        print(f'{args.images} PNGs of {args.size}x{args.size}, {total_bytes / 2**20:.1f} MB',
              flush=True)
        for repeat in range(args.repeats):
            for count in sizes:
                for name, (mode, workers, in_process) in CONFIGS.items():
                    result = run(mode, folders[count], os.path.join(tmp, 'out'), workers,
                                 in_process)
                    assert result['records'] == count, result
                    print(f'[{repeat + 1}/{args.repeats}] {name}, {count}: {json.dumps(result)}',
                          flush=True)
                    keep((name, count), result)
            if args.no_stats:
                continue
            if repeat == 0:  # keep one 2-worker output for StatisticsGen
                run('beam', folders[args.images], os.path.join(tmp, 'examples'), 2)
            result = run('stats', os.path.join(tmp, 'examples'), os.path.join(tmp, 'stats'), 2)
            print(f'[{repeat + 1}/{args.repeats}] StatisticsGen: {json.dumps(result)}', flush=True)
            keep('stats', result)
    print_table(best, sizes, total_bytes)


def print_table(best: dict, sizes, total_bytes: int) -> None:
    small, n = sizes
    mb = total_bytes / 2 ** 20

    def seconds(name, count):
        return best[(name, count)]['seconds']

    def marginal(name):
        return (n - small) / max(1e-9, seconds(name, n) - seconds(name, small))

    def rss(name, count):
        return best[(name, count)]['peak_rss_mb']

    naive_marginal = marginal('naive loop')
    print(f'\n{n} images, {mb:.1f} MB ({small} for the marginal rate and memory growth)\n')
    print(f'| Configuration | Time at {small} (s) | vs naive at {small} | Time at {n} (s) | '
          f'Images/s at {n} | vs naive at {n} | Marginal images/s | Marginal vs naive | '
          f'Peak RSS MB {small} -> {n} | RSS growth | Target |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for name in CONFIGS:
        target = ('whole run >= 1.0x at 20k, marginal >= 1.6x, RSS growth <= 2%'
                  if name == 'Beam, 2 workers' else '')
        growth = rss(name, n) / rss(name, small) - 1
        print(f'| {name} | {seconds(name, small):.2f} | '
              f'{seconds("naive loop", small) / seconds(name, small):.2f}x | '
              f'{seconds(name, n):.2f} | {n / seconds(name, n):.0f} | '
              f'{seconds("naive loop", n) / seconds(name, n):.2f}x | {marginal(name):.0f} | '
              f'{marginal(name) / naive_marginal:.2f}x | '
              f'{rss(name, small):.0f} -> {rss(name, n):.0f} | {100 * growth:+.1f}% | {target} |')
    if 'stats' in best:
        stats = best['stats']
        print(f'| StatisticsGen on the output (2 workers) | | | {stats["seconds"]:.2f} | '
              f'{n / stats["seconds"]:.0f} | | | | {stats["peak_rss_mb"]:.0f} | | report |')


if __name__ == '__main__':
    main()
