"""Worker-count benchmark: `runner.py --local` with 1 training process against N, side by side.

    python -m bench.bench_workers [--workers 1,2] [--steps 400] [--repeats 2]

Each configuration is a first run of the whole pipeline on the embedded digits into a fresh
output, with a fixed training length (--steps, so every run does the same updates with the same
global batch), taken in turns over the repeats so that machine noise hits each alike; the best
repeat is kept. ImageTrainer seconds come from ML Metadata; examples/s is steps x batch over
them, start-up included (N processes each import TensorFlow and join a collective). On one
machine more workers add no compute: the table shows the cost of the multi-worker path, not a
speed-up. Nothing here is asserted.
"""
import argparse
import os
import shutil

from bench import bench_quality

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 64


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--workers', default='1,2', help='comma-separated worker counts')
    parser.add_argument('--steps', type=int, default=400)
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--work', default='/tmp/bench_workers')
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(',')]
    data = os.path.join(REPO, 'data', 'digits')
    best = {}
    for _ in range(args.repeats):
        for count in counts:
            output = os.path.join(args.work, f'run-{count}')
            shutil.rmtree(output, ignore_errors=True)
            outcome = bench_quality.run_pipeline(data, output, (
                '--steps', str(args.steps), '--batch-size', str(BATCH), '--workers', str(count)))
            if outcome['code']:
                raise SystemExit(f'--workers {count}: runner.py exited {outcome["code"]}')
            result = bench_quality.read_result(output)
            seconds = result['stages']['ImageTrainer']
            if count not in best or seconds < best[count][0]:
                best[count] = (seconds, result['model'], outcome['wall'])
    reference = best[counts[0]][0]
    print(f'\n| workers | replicas | ImageTrainer s | examples/s | vs {counts[0]} worker(s) | '
          'eval accuracy | whole run s |\n|---|---|---|---|---|---|---|')
    for count in counts:
        seconds, model, wall = best[count]
        print(f'| {count} | {int(model.get("num_replicas", 0))} | {seconds:.1f} | '
              f'{args.steps * BATCH / seconds:.0f} | {reference / seconds:.2f}x | '
              f'{model.get("eval_accuracy", float("nan")):.4f} | {wall:.1f} |')


if __name__ == '__main__':
    main()
