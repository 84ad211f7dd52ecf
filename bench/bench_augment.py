"""Augmentation benchmark: eval accuracy and training time of each --augment mode on the digits.

    python -m bench.bench_augment [--repeats 2] [--modes none light standard]

Ingests the embedded digits once (the real Beam ingestion graph, the pipeline's split), then
trains each mode with the default TrainParams's settings (epochs with early stopping, batch,
learning rate, warm-up, seed, cached decoded images) in its own fresh process, interleaved over
the repeats so machine noise hits every mode alike. Prints one table: mean eval accuracy, best
training time, and their ratios to `none`. Nothing here is asserted.
"""
import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train_once(data_dir: str, mode: str, seed: int) -> dict:
    """One training run in this process (the child's side); returns accuracy and seconds."""
    from training import job as job_lib, loop
    from training.params import TrainParams
    t = TrainParams()
    job = job_lib.TrainJob(
        train_pattern=os.path.join(data_dir, 'Split-train', '*'),
        eval_pattern=os.path.join(data_dir, 'Split-eval', '*'),
        class_names=tuple(str(i) for i in range(10)), image_shape=(8, 8, 1),
        cache_decoded=True,
        # The default length: epochs with early stopping (the job plans the steps from the data).
        epochs=t.train_epochs, held_out_percent=t.validation_percent,
        # The default parameters, but the builder, the seed and the augmentation compared.
        options=loop.LoopOptions(dataclasses.replace(
            t, model_builder='models.resnet.build_model', seed=seed, augment=mode),
            train_steps=t.warmup_steps + 1, log_every=10_000))
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        metrics = job_lib.train_and_export(job, os.path.join(out, 'serving'),
                                           os.path.join(out, 'logs'))
        seconds = time.perf_counter() - start
    return {'accuracy': metrics.eval_accuracy, 'seconds': seconds, 'epochs': metrics.epochs_run}


def run(data_dir: str, mode: str, seed: int) -> dict:
    env = {**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2'}
    output = subprocess.run([sys.executable, '-m', 'bench.bench_augment', '--child', data_dir,
                             mode, str(seed)], cwd=REPO, env=env, capture_output=True,
                            text=True, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--child':
        print(json.dumps(train_once(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--modes', nargs='+', default=['none', 'light', 'standard'])
    args = parser.parse_args()
    from bench.bench_trainer import ingest_digits
    from training.params import TrainParams
    with tempfile.TemporaryDirectory() as data_dir:
        ingest_digits(data_dir)
        results = {mode: [] for mode in args.modes}
        for repeat in range(args.repeats):
            for mode in args.modes:
                results[mode].append(run(data_dir, mode, TrainParams().seed + repeat))
                print(f'repeat {repeat} {mode}: {results[mode][-1]}', file=sys.stderr)
    base = results.get('none')
    print(f'{"augment":<10} {"eval acc (mean)":>16} {"min":>7} {"train s (best)":>15} '
          f'{"time / none":>12}')
    for mode, runs in results.items():
        accuracy = sum(r['accuracy'] for r in runs) / len(runs)
        seconds = min(r['seconds'] for r in runs)
        ratio = seconds / min(r['seconds'] for r in base) if base else float('nan')
        print(f'{mode:<10} {accuracy:>16.4f} {min(r["accuracy"] for r in runs):>7.4f} '
              f'{seconds:>15.1f} {ratio:>12.2f}')


if __name__ == '__main__':
    main()
