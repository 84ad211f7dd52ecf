"""Quality benchmark: the whole pipeline on full Fashion-MNIST with default flags, next to the
published table.

    python -m bench.bench_quality [--runs 3] [--code DIR] [--compare-augment] [--limit N]
                                  [--work DIR] [--busy-after EPOCH]

Fashion-MNIST comes from Debian's `dataset-fashion-mnist` package (offline, IDX files under
/usr/share/datasets/fashion-mnist); the bench installs it with apt-get when it is missing. That
install belongs to the bench, not to the product's `make install`. The 60,000 training images
are written as class folders of PNGs, as a user would bring them, and `runner.py --local` runs
on them with no other flags: ingestion splits them by hash (about 48k train, 12k eval), and
everything else (input shape, model, training length, augmentation) is the default.

Printed: eval accuracy on the pipeline's eval split, accuracy of the pushed SavedModel on the
official 10,000-image test set (the figure the published table reports), the epochs training
ran and why it stopped, training and wall time; then rows of the package README's benchmark
table. --runs N repeats the whole run N times from scratch (ingestion included) and adds the
mean and range of each figure: one run proves little, test accuracy moves by about 0.5 points
between runs. --code DIR runs another checkout's runner.py on the same data (for example a
`git worktree` of the commit before a change), so "before" and "after" come from one bench.
--busy-after EPOCH starts a process spinning on one core when that epoch has ended, until the
run ends: the length must still fit its time with a neighbour arriving part way through.
--compare-augment reruns into the same output with `--augment none`: ingestion and statistics
are cached, so both trainings see the same split. Each row records the load average at its
start and end: on a shared machine the minutes move with it. Nothing here is asserted.
"""
import argparse
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import threading
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


def _busy_after(output: str, epoch: int, stop: threading.Event) -> None:
    """Once the run's log says `epoch` ended, a process spinning on one core until `stop`: a
    neighbour that arrives part way through training."""
    marker = f'epoch {epoch}/'
    while not stop.wait(2):
        logs = glob.glob(os.path.join(output, 'logs', '*.log'))
        if any(marker in open(path, errors='replace').read() for path in logs):
            break
    if stop.is_set():
        return
    busy = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
    print(f'busy loop (pid {busy.pid}) started after epoch {epoch}', flush=True)
    stop.wait()
    busy.kill()
    busy.wait()


def run_pipeline(data_dir: str, output: str, flags=(), code: str = REPO,
                 busy_after: int = 0) -> dict:
    """One `runner.py --local` run of the checkout `code` (busy_after > 0: with a 1-core busy
    loop beside it from that epoch's end on); returns its wall seconds, exit code and the load
    average before and after."""
    command = [sys.executable, 'runner.py', '--local', '--data', data_dir, '--output', output,
               *flags]
    print('$', ' '.join(command), f'(in {code})', flush=True)
    load = os.getloadavg()[0]
    stop = threading.Event()
    neighbour = threading.Thread(target=_busy_after, args=(output, busy_after, stop))
    if busy_after:
        neighbour.start()
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=code)  # that checkout's packages, not the installed ones
    try:
        done = subprocess.run(command, cwd=code, capture_output=True, text=True, env=env)
    finally:
        stop.set()
        if busy_after:
            neighbour.join()
    wall = time.perf_counter() - start
    print(done.stdout[-3000:], done.stderr[-2000:] if done.returncode else '', flush=True)
    return {'wall': wall, 'code': done.returncode, 'load': (load, os.getloadavg()[0])}


def read_result(output: str) -> dict:
    """The newest run's trained Model properties and stage seconds, from ML Metadata."""
    from ml_metadata import metadata_store
    from ml_metadata.proto import metadata_store_pb2
    from pipeline.runs import summary
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
        # One name per image, as a [batch, 1] column (training/export.py).
        names = predict(images=tf.constant(encoded))['class_names'].numpy().reshape(-1)
        expected = [quality_data.CLASS_NAMES[i] for i in labels[start:start + 500]]
        correct += sum(n.decode() == e for n, e in zip(names, expected))
    return correct / len(images)


NAN = float('nan')


def figures(result: dict, outcome: dict, test: float) -> dict:
    """One run's numbers: accuracies, epochs, minutes, images/s, and the load around it."""
    model = result['model']
    return {'eval': model.get('eval_accuracy', NAN), 'test': test,
            'epochs': model.get('epochs_run', NAN),
            'train_min': result['stages'].get('ImageTrainer', NAN) / 60,
            'wall_min': outcome['wall'] / 60,
            'img_s': model.get('examples_per_second', NAN),
            'load': '%.1f-%.1f' % outcome['load'],
            'stopped': str(model.get('stop_reason', '-'))}


COLUMNS = (('eval', 'eval (split)', '{:.4f}'), ('test', 'test (10k)', '{:.4f}'),
           ('epochs', 'epochs', '{:.1f}'), ('train_min', 'train min', '{:.1f}'),
           ('wall_min', 'wall min', '{:.1f}'), ('img_s', 'img/s', '{:,.0f}'))


def _cell(fmt: str, value: float) -> str:
    return '-' if value != value else fmt.format(value)  # NaN: not recorded by that version


def table_rows(name: str, runs: list) -> list:
    """A row per run, then (with several) the mean and the range of each figure."""
    rows = [[f'{name} #{i + 1}' if len(runs) > 1 else name]
            + [_cell(fmt, run[key]) for key, _, fmt in COLUMNS] + [run['load'], run['stopped']]
            for i, run in enumerate(runs)]
    if len(runs) > 1:
        cells = []
        for key, _, fmt in COLUMNS:
            values = [run[key] for run in runs]
            cells.append('-' if any(v != v for v in values) else
                         f'{fmt.format(sum(values) / len(values))} '
                         f'({fmt.format(min(values))}-{fmt.format(max(values))})')
        rows.append([f'**{name}: mean (range)**'] + cells + ['', ''])
    return rows


def print_table(rows, published) -> None:
    header = ['run'] + [title for _, title, _ in COLUMNS] + ['load', 'stopped']
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
    parser.add_argument('--runs', type=int, default=1,
                        help='whole runs from scratch, each into a folder of its own')
    parser.add_argument('--code', default=REPO,
                        help='the checkout whose runner.py runs (default: this one)')
    parser.add_argument('--name', default='default flags', help='the rows\' name')
    parser.add_argument('--busy-after', type=int, default=0, metavar='EPOCH',
                        help='a 1-core busy loop beside each run from the end of this epoch on '
                             '(0 = none): a neighbour arriving part way through training')
    parser.add_argument('--flag', action='append', default=[], metavar='FLAG',
                        help='a runner.py flag for every run, e.g. --flag=--batch-size=128 '
                             '(repeatable)')
    args = parser.parse_args()
    quality_data.ensure_installed()
    data_dir = quality_data.write_class_folders(os.path.join(args.work, 'data'), args.limit)
    configs = [(args.name, tuple(args.flag))] + (
        [('--augment none', (*args.flag, '--augment', 'none'))] if args.compare_augment else [])
    rows = []
    for name, flags in configs:
        runs = []
        for index in range(args.runs):
            output = os.path.join(args.work, 'run' if args.runs == 1 else f'run{index + 1}')
            if os.path.isdir(output) and not args.keep and (index or name == configs[0][0]):
                shutil.rmtree(output)
            outcome = run_pipeline(data_dir, output, flags, args.code, args.busy_after)
            if outcome['code']:
                sys.exit(f'{name}: runner.py exited {outcome["code"]}')
            result = read_result(output)
            runs.append(figures(result, outcome, test_accuracy(result['uri'])))
            print('stages (s):', {k: round(v) for k, v in result['stages'].items()},
                  json.dumps(runs[-1]), flush=True)
        rows += table_rows(name, runs)
    print_table(rows, published_rows())


if __name__ == '__main__':
    np.set_printoptions(precision=4)
    main()
