"""The Evaluator's accuracy metric: TFMA-native (ours) against Keras' own, side by side.

    python -m bench.bench_evaluator [--run /tmp/docs-run] [--sizes 1,10] [--repeats 2]

Reads a finished `runner.py --local` output (--run): its served model and its newest eval split.
For each size k the split is written k times over into one file, and TFMA evaluates it as our
Evaluator does after the first run: the pipeline's eval config (`factory.make_eval_config`,
both slicings, jackknife intervals) with the served model as candidate and as baseline. The
accuracy metric is the pipeline's (components/evaluate/accuracy.py) or Keras'
SparseCategoricalAccuracy under the same name, in turns, so that machine noise hits both
alike; the best of --repeats is kept. Prints wall and CPU seconds, their ratio, and both
accuracies (which must agree). Nothing is asserted.
"""
import argparse
import glob
import os
import shutil
import tempfile
import time


def _examples(run: str, copies: int, folder: str):
    """(path, count): the newest eval split written `copies` times into one file."""
    import tensorflow as tf
    splits = sorted(glob.glob(os.path.join(run, 'pipeline_root', 'ImageExampleGen', 'examples',
                                           '*', 'Split-eval')), key=os.path.getmtime)
    if not splits:
        raise SystemExit(f'no eval split under {run}: run `runner.py --local --output {run}`')
    path = os.path.join(folder, f'eval-x{copies}.tfrecord')
    with tf.io.TFRecordWriter(path) as writer:
        records = list(tf.data.TFRecordDataset(sorted(glob.glob(splits[-1] + '/*')),
                                               compression_type='GZIP').as_numpy_iterator())
        for _ in range(copies):
            for record in records:
                writer.write(record)
    return path, len(records) * copies


def _evaluate(model: str, data: str, keras_metric: bool, folder: str):
    """(wall s, CPU s, accuracy) of one TFMA run against the served model."""
    import tensorflow_model_analysis as tfma
    from pipeline.definition import factory
    from components.evaluate.params import EvalParams
    config = factory.make_eval_config(EvalParams(min_accuracy=0.0))
    if keras_metric:   # the same class name without a module: TFMA takes Keras' metric
        config.metrics_specs[0].metrics[0].ClearField('module')
    config.model_specs[0].name = 'candidate'
    baseline = config.model_specs.add()
    baseline.CopyFrom(config.model_specs[0])
    baseline.name, baseline.is_baseline = 'baseline', True
    models = [tfma.default_eval_shared_model(model, eval_config=config, model_name=name)
              for name in ('candidate', 'baseline')]
    out = tempfile.mkdtemp(dir=folder)
    wall, cpu = time.perf_counter(), time.process_time()
    tfma.run_model_analysis(eval_shared_model=models, eval_config=config, data_location=data,
                            output_path=out)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    accuracy = next(kv.value.double_value.value for record in tfma.load_metrics(out)
                    if not record.slice_key.single_slice_keys
                    for kv in record.metric_keys_and_values
                    if kv.key.model_name == 'candidate' and not kv.key.is_diff
                    and kv.key.name == 'sparse_categorical_accuracy')
    return wall, cpu, accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--run', default='/tmp/docs-run', help='a finished local run output')
    parser.add_argument('--sizes', default='1,10', help='copies of the eval split, comma-separated')
    parser.add_argument('--repeats', type=int, default=2)
    args = parser.parse_args()
    served = sorted((v for v in os.listdir(os.path.join(args.run, 'serving')) if v.isdigit()),
                    key=int)
    model = os.path.join(args.run, 'serving', served[-1])
    folder = tempfile.mkdtemp(prefix='bench-evaluator-')
    print('| examples | metric | wall s | CPU s | accuracy |\n|---|---|---|---|---|')
    try:
        for copies in (int(size) for size in args.sizes.split(',')):
            data, count = _examples(args.run, copies, folder)
            best = {}
            for _ in range(args.repeats):
                for keras_metric in (True, False):
                    result = _evaluate(model, data, keras_metric, folder)
                    if keras_metric not in best or result[0] < best[keras_metric][0]:
                        best[keras_metric] = result
            for keras_metric, name in ((True, 'Keras'), (False, 'native')):
                wall, cpu, accuracy = best[keras_metric]
                ratio = '' if keras_metric else f' ({wall / best[True][0]:.2f}x Keras)'
                print(f'| {count:,} | {name} | {wall:.1f}{ratio} | {cpu:.1f} | {accuracy:.6f} |')
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == '__main__':
    main()
