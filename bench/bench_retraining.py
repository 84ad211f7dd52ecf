"""Scheduled-retraining benchmark: a run a day as spans land, one day drifted, two code versions.

    python -m bench.bench_retraining [--days 6] [--drifted-day 3] [--before REV] [--work DIR]
                                     [--flags "..."] [--before-flags "..."]

Each day a new Fashion-MNIST span lands (bench/retraining_data.py: four classes, 250 images
each, the drifted day mostly bags) and `runner.py --local --data BASE --output OUT` runs with
no other flags, as a nightly job would. With --before REV, the same days are also run with the
code of that revision (a git worktree under --work), into its own output, so the two columns of
the table come from one bench run on the same data.

Printed per day and code version: exit code, the version served after the run, that version's
accuracy on the held-out set (the official test images of the four classes, balanced, never
ingested), the size of pipeline_root, and the console lines about the window, drift, blessing,
push and retention. Then the size ratios (after / before). Nothing here is asserted.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

from bench import quality_data, retraining_data

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SHOWN = re.compile(r'(window|drift|bless|push|retention|skipp|served|stopped)', re.I)


def folder_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    return total


def served_version(output: str):
    serving = os.path.join(output, 'serving')
    versions = [int(n) for n in os.listdir(serving) if n.isdigit()] if os.path.isdir(
        serving) else []
    return max(versions, default=None)


def held_out_accuracy(model_dir: str, cache: dict) -> float:
    """Accuracy of a SavedModel on the held-out set through `predict_images`, as a client."""
    if model_dir in cache:
        return cache[model_dir]
    import tensorflow as tf
    predict = tf.saved_model.load(model_dir).signatures['predict_images']
    images, names = retraining_data.held_out()
    correct = 0
    for start in range(0, len(images), 500):
        encoded = [tf.io.encode_png(image[..., None]).numpy()
                   for image in images[start:start + 500]]
        predicted = predict(images=tf.constant(encoded))['class_names'].numpy()
        correct += sum(p.decode() == n for p, n in zip(predicted, names[start:start + 500]))
    cache[model_dir] = correct / len(images)
    return cache[model_dir]


def run_day(checkout: str, base: str, output: str, flags) -> dict:
    command = [sys.executable, 'runner.py', '--local', '--data', base, '--output', output, *flags]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, capture_output=True, text=True)
    lines = [line.strip() for line in done.stdout.splitlines() if _SHOWN.search(line)]
    return {'code': done.returncode, 'wall': time.perf_counter() - start, 'lines': lines,
            'tail': done.stdout[-1500:] + done.stderr[-1500:]}


def worktree(rev: str, work: str) -> str:
    path = os.path.join(work, f'checkout-{rev[:10]}')
    if not os.path.isdir(path):
        subprocess.run(['git', '-C', REPO, 'worktree', 'add', '--detach', path, rev], check=True)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--work', default='/tmp/bench_retraining')
    parser.add_argument('--days', type=int, default=6)
    parser.add_argument('--drifted-day', type=int, default=3)
    parser.add_argument('--before', metavar='REV', help='also run the code of this revision')
    parser.add_argument('--flags', type=shlex.split, default=[], help='extra runner flags')
    parser.add_argument('--before-flags', type=shlex.split, default=[])
    parser.add_argument('--no-after', action='store_true',
                        help='run only the --before revision (its column alone)')
    args = parser.parse_args()
    quality_data.ensure_installed()
    if os.path.isdir(args.work):
        for name in os.listdir(args.work):
            if not name.startswith('checkout-'):
                shutil.rmtree(os.path.join(args.work, name))
    versions = [] if args.no_after else [('after', REPO, args.flags)]
    if args.before:
        versions.insert(0, ('before', worktree(args.before, args.work), args.before_flags))
    cache, table = {}, {}
    for day in range(1, args.days + 1):
        for name, checkout, flags in versions:
            base = os.path.join(args.work, name, 'landing')
            _, counts = retraining_data.write_span(base, day, args.drifted_day)
            output = os.path.join(args.work, name, 'out')
            result = run_day(checkout, base, output, flags)
            served = served_version(output)
            accuracy = (held_out_accuracy(os.path.join(output, 'serving', str(served)), cache)
                        if served is not None else float('nan'))
            size = folder_bytes(os.path.join(output, 'pipeline_root'))
            table[(day, name)] = (result['code'], served, accuracy, size)
            print(f'day {day} [{name}] {counts}: exit {result["code"]}, served v{served} '
                  f'held-out {accuracy:.4f}, pipeline_root {size / 1e6:.1f} MB, '
                  f'{result["wall"]:.0f} s', flush=True)
            for line in result['lines']:
                print('    ' + line, flush=True)
            if result['code'] not in (0,):
                print(result['tail'], flush=True)
    names = [name for name, _, _ in versions]
    print('\n| day | ' + ' | '.join(f'{n}: exit, served, held-out acc, root MB' for n in names)
          + (' | root size after/before |' if len(names) == 2 else ' |'))
    print('|---|' + '---|' * (len(names) + (len(names) == 2)))
    for day in range(1, args.days + 1):
        cells = []
        for name in names:
            code, served, accuracy, size = table[(day, name)]
            cells.append(f'{code}, v{served}, {accuracy:.4f}, {size / 1e6:.1f}')
        if len(names) == 2:  # pylint: disable=consider-using-in
            cells.append(f'{table[(day, "after")][3] / max(table[(day, "before")][3], 1):.2f}')
        print(f'| {day} | ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    main()
