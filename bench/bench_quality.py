"""Quality benchmark: the whole pipeline on full Fashion-MNIST with default flags, next to the
published table.

    python -m bench.bench_quality [--compare-augment] [--limit N] [--work DIR]

Fashion-MNIST comes from Debian's `dataset-fashion-mnist` package (offline, IDX files under
/usr/share/datasets/fashion-mnist); the bench installs it with apt-get when it is missing. That
install belongs to the bench, not to the product's `make install`. The 60,000 training images
are written as class folders of PNGs, as a user would bring them, and `runner.py --local` runs
on them with no other flags: ingestion splits them by hash (about 48k train, 12k eval), and
everything else (input shape, model, training length, augmentation) is the default.

Printed: eval accuracy on the pipeline's eval split, accuracy of the pushed SavedModel on the
official 10,000-image test set (the figure the published table reports), the epochs training
ran and why it stopped, training and wall time; then rows of the package README's benchmark
table. --compare-augment reruns into the same output with `--augment none`: ingestion and
statistics are cached, so both trainings see the same split. Nothing here is asserted.
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')  # TensorFlow's start-up noise, for the table

from bench import quality_data

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Published rows shown next to ours: classifier name patterns in the package README's table.
PUBLISHED = (r'^2 Conv\+pooling$', r'^2 Conv <100K', r'^2 Conv ~113K', r'^5 Conv\+BN',
             r'^ResNet18', r'^WRN-28-10')


def published_rows(readme: str = quality_data.README):
    """(classifier, preprocessing, test accuracy) rows of the README's benchmark table."""
    rows = []
    with gzip.open(readme, 'rt', encoding='utf-8') as handle:
        for line in handle:
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) >= 3 and any(re.search(p, cells[0]) for p in PUBLISHED):
                rows.append((cells[0], cells[1], cells[2]))
    return rows


def run_pipeline(data_dir: str, output: str, flags=()) -> dict:
    """One `runner.py --local` run; returns its wall seconds, exit code and console tail."""
    command = [sys.executable, 'runner.py', '--local', '--data', data_dir, '--output', output,
               *flags]
    print('$', ' '.join(command), flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - start
    print(done.stdout[-3000:], done.stderr[-2000:] if done.returncode else '', flush=True)
    return {'wall': wall, 'code': done.returncode}


def read_result(output: str) -> dict:
    """The newest run's trained Model properties and stage seconds, from ML Metadata."""
    from ml_metadata import metadata_store
    from ml_metadata.proto import metadata_store_pb2
    from pipeline import summary
    store = metadata_store.MetadataStore(metadata_store_pb2.ConnectionConfig(
        sqlite=metadata_store_pb2.SqliteMetadataSourceConfig(
            filename_uri=os.path.join(output, 'metadata.sqlite'))))
    run = summary.read_latest_run(os.path.join(output, 'metadata.sqlite'), 'image-pipeline')
    model = run.trained_model()
    props = {key: summary.custom_property(model, key) for key in model.custom_properties}
    runs = store.get_contexts_by_type('pipeline_run')
    newest = max(runs, key=lambda c: c.create_time_since_epoch)
    types = {t.id: t.name.rsplit('.', 1)[-1] for t in store.get_execution_types()}
    stages = {types[e.type_id]: (e.last_update_time_since_epoch - e.create_time_since_epoch)
              / 1000 for e in store.get_executions_by_context(newest.id)}
    return {'model': props, 'stages': stages, 'states': run.states, 'uri': model.uri}


def test_accuracy(model_uri: str) -> float:
    """Accuracy of the run's trained SavedModel (pushed or not) on the official test set,
    through its `predict_images` signature (PNG bytes in, class names out), as a client would
    call it."""
    import tensorflow as tf
    from tfx.utils import path_utils
    predict = tf.saved_model.load(path_utils.serving_model_dir(model_uri)) \
        .signatures['predict_images']
    images, labels = quality_data.read_idx('t10k')
    correct = 0
    for start in range(0, len(images), 500):
        encoded = [tf.io.encode_png(image[..., None]).numpy()
                   for image in images[start:start + 500]]
        names = predict(images=tf.constant(encoded))['class_names'].numpy()
        expected = [quality_data.CLASS_NAMES[i] for i in labels[start:start + 500]]
        correct += sum(n.decode() == e for n, e in zip(names, expected))
    return correct / len(images)


def describe(name: str, result: dict, wall: float, test: float) -> list:
    model = result['model']
    train_s = result['stages'].get('ImageTrainer', float('nan'))
    return [name, f"{model.get('eval_accuracy', float('nan')):.4f}", f'{test:.4f}',
            f"{model.get('epochs_run', float('nan')):.1f}", f'{train_s:.0f}', f'{wall:.0f}',
            str(model.get('stop_reason', '-'))]


def print_table(rows, published) -> None:
    header = ['run', 'eval (split)', 'test (10k)', 'epochs', 'train s', 'wall s', 'stopped']
    print('\n| ' + ' | '.join(header) + ' |\n|' + '---|' * len(header))
    for row in rows:
        print('| ' + ' | '.join(row) + ' |')
    print('\nPublished (package README, "Fashion test accuracy"):\n| classifier | '
          'preprocessing | test |\n|---|---|---|')
    for row in published:
        print('| ' + ' | '.join(row) + ' |')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--work', default='/tmp/bench_quality', help='data and run folder')
    parser.add_argument('--limit', type=int, default=0,
                        help='use only the first N training images (a quick try; 0 = all)')
    parser.add_argument('--compare-augment', action='store_true',
                        help='also train with --augment none on the same split')
    parser.add_argument('--keep', action='store_true', help='keep an earlier run folder')
    args = parser.parse_args()
    quality_data.ensure_installed()
    data_dir = quality_data.write_class_folders(os.path.join(args.work, 'data'), args.limit)
    output = os.path.join(args.work, 'run')
    if os.path.isdir(output) and not args.keep:
        shutil.rmtree(output)
    rows = []
    runs = [('default flags', ())] + ([('--augment none', ('--augment', 'none'))]
                                      if args.compare_augment else [])
    for name, flags in runs:
        outcome = run_pipeline(data_dir, output, flags)
        if outcome['code']:
            sys.exit(f'{name}: runner.py exited {outcome["code"]}')
        result = read_result(output)
        rows.append(describe(name, result, outcome['wall'],
                             test_accuracy(result['uri'])))
        print('stages (s):', {k: round(v) for k, v in result['stages'].items()}, flush=True)
    print_table(rows, published_rows())


if __name__ == '__main__':
    np.set_printoptions(precision=4)
    main()
