"""A run on S3 against the same run on disk, and what sharing botocore's models between boto3
sessions saves (core/storage.py `_share_botocore_models`).

    python -m bench.bench_s3 [--pairs 3] [--per-class 30]

Starts a SeaweedFS of its own on the loopback (the tests' server, tests/support/seaweedfs.py),
then, in turns within each round so that machine noise hits every variant alike, runs
`runner.py --local --config smoke` on the same 10-class digits into a fresh output:
  disk     --pipeline-root and --serving-dir on local disk (the reference);
  s3       both on a bucket, as shipped;
  s3-own   both on a bucket, each boto3 session parsing botocore's models itself (what
           boto3 does unless told otherwise: the sharing switched off in that process).
Each stage's seconds are the console's (`StatisticsGen  complete  2.7 s`), the wall time this
process's. Prints each round, then the medians and the ratios to disk per column. Nothing here
is asserted.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'tests', 'support'))   # the tests' SeaweedFS server
import seaweedfs as seaweedfs_lib  # noqa: E402  pylint: disable=wrong-import-position
from helpers import copy_digits  # noqa: E402  pylint: disable=wrong-import-position

STAGES = ('ImageExampleGen', 'StatisticsGen', 'ImageTrainer', 'Evaluator')
VARIANTS = ('disk', 's3', 's3-own')
# runner.py in a fresh interpreter; for s3-own with the sharing switched off first.
_RUNNER = ("import runpy, sys\n"
           "if sys.argv[1] == 'own':\n"
           "    from core import storage\n"
           "    storage._share_botocore_models = lambda: None\n"
           "sys.argv = ['runner.py'] + sys.argv[2:]\n"
           "runpy.run_path('runner.py', run_name='__main__')\n")


def run_once(variant: str, data: str, output: str, bucket: str, env: dict) -> dict:
    shutil.rmtree(output, ignore_errors=True)
    command = [sys.executable, '-c', _RUNNER, 'own' if variant == 's3-own' else 'shipped',
               '--local', '--config', 'smoke', '--data', data, '--output', output]
    if variant != 'disk':
        command += ['--pipeline-root', f's3://{bucket}/{variant}-root',
                    '--serving-dir', f's3://{bucket}/{variant}-serving']
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f'{variant}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}')
    seconds = {}
    for line in done.stdout.splitlines():
        words = line.split()
        if len(words) >= 4 and words[0] in STAGES and words[1] == 'complete':
            seconds[words[0]] = float(words[2])
    return dict(seconds, wall=wall)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pairs', type=int, default=3, help='rounds of the three variants')
    parser.add_argument('--per-class', type=int, default=30, help='digits per class')
    parser.add_argument('--work', default='/tmp/bench_s3')
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    data = copy_digits(os.path.join(args.work, 'data'), per_class=args.per_class)
    server = seaweedfs_lib.Server()
    results = {variant: [] for variant in VARIANTS}
    try:
        env = dict(os.environ, **server.env())
        for round_ in range(args.pairs):
            for variant in VARIANTS:
                bucket = server.new_bucket()
                result = run_once(variant, data, os.path.join(args.work, 'out'), bucket, env)
                results[variant].append(result)
                print(f'round {round_ + 1} {variant}: ' + ', '.join(
                    f'{name} {result.get(name, 0.0):.1f} s' for name in STAGES + ('wall',)),
                    flush=True)
    finally:
        server.stop()
    columns = STAGES + ('wall',)
    medians = {v: {c: statistics.median(r.get(c, 0.0) for r in results[v]) for c in columns}
               for v in VARIANTS}
    print('\n| variant | ' + ' | '.join(columns) + ' |\n|' + '---|' * (len(columns) + 1))
    for variant in VARIANTS:
        cells = [f'{medians[variant][c]:.1f} ({medians[variant][c] / medians["disk"][c]:.2f}×)'
                 if medians['disk'][c] else f'{medians[variant][c]:.1f}' for c in columns]
        print(f'| {variant} | ' + ' | '.join(cells) + ' |')
    print(f'\nmedians of {args.pairs} rounds, seconds (× the same column on disk)')


if __name__ == '__main__':
    main()
