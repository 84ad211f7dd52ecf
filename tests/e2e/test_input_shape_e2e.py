"""End-to-end: a user's own landing folder, run with flags alone and no shape setting, on two
local workers (e2e).

Three classes cut from real photos (tests/support/photo_folders.py): PNG and JPEG, 28x28 (most),
32x32 and 40x40, a few RGB among grayscale. Into them land one hostile file of each kind (issue
21): a FIFO named pipe.png, a 30000x30000 PNG decompression bomb, a photo named with the bytes
b'\\xff\\xfe.png' and a lossless WebP. One `runner.py --local` run (the smoke config trained
longer, with a bar on overall accuracy, an inferred schema) must:
- complete within the rejected fraction the flag allows: the FIFO and the bomb quarantined with
  their reasons, the WebP converted and counted, nothing hanging (a timeout fails the test), and
  the non-UTF-8 name read (the local runner's driver fingerprints the input; tf.io.gfile could
  not list it);
- train at the most common size with 3 channels, record it on the Model and say so in the
  summary, and serve images of every size and mode;
- train with two local worker processes (--workers 2) under MultiWorkerMirroredStrategy, one
  replica each, and push the chief's export. At these sizes the default (light) augmentation
  shifts images and the train split has a file per worker, so FILE sharding meets the augmented
  stream, which crashed ("unshardable source dataset") on any image over 8 px while the tests
  used the 8x8 digits, which light leaves as they are.
"""
import glob
import io
import json
import os

from PIL import Image
import pytest
import tensorflow as tf

from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text

import photo_folders
from helpers import run_command, run_log, runner_command, version_folders
from ingest_helpers import bomb_png

pytestmark = pytest.mark.e2e
MIN_ACCURACY = 0.8


def _land_hostile_files(data: str, written: dict) -> None:
    """One of each kind, among the photos (found 94 = 90 photos + 4, written 92)."""
    os.mkfifo(os.path.join(data, 'flower', 'pipe.png'))
    with open(os.path.join(data, 'roofs', 'bomb.png'), 'wb') as handle:
        handle.write(bomb_png())
    png = next(path for path, info in sorted(written.items())
               if path.startswith('sky/') and info['format'] == 'PNG')
    with open(os.path.join(data, png), 'rb') as source, open(
            os.path.join(os.fsencode(data), b'sky', b'\xff\xfe.png'), 'wb') as handle:
        handle.write(source.read())
    buffer = io.BytesIO()
    Image.open(os.path.join(data, 'roofs', '000.png')).save(buffer, 'WEBP', lossless=True)
    with open(os.path.join(data, 'roofs', 'photo.webp'), 'wb') as handle:
        handle.write(buffer.getvalue())


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    import runner
    from pipeline.definition import presets
    base = tmp_path_factory.mktemp('shape_e2e')
    data, out = str(base / 'data'), str(base / 'out')
    written = photo_folders.make_folders(data, per_class=30)
    _land_hostile_files(data, written)
    # A real bar on overall accuracy (the smoke config has none), met by training long enough.
    flags = ('--config', 'smoke', '--workers', '2', '--steps', '150',
             '--min-accuracy', str(MIN_ACCURACY), '--max-rejected-fraction', '0.05')
    argv = runner_command(data, out, *flags, digits_schema=False)
    cfg, _ = presets.from_args(runner.build_parser().parse_args(argv[2:]))
    assert cfg.train.image_size is None and cfg.train.channels is None  # nothing configured
    result = run_command(argv)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return cfg, written, result, summary_lib.read_latest_run(cfg.metadata_path, cfg.name)


def test_the_hostile_files_are_quarantined_or_converted_and_the_run_completes(run):
    cfg, _, result, _ = run
    assert 'Traceback' not in result.stdout and 'Traceback' not in result.stderr
    log = run_log(result.stdout)
    assert 'found 94, written 92' in log and 'converted 1 to PNG' in log
    assert 'Converted roofs/photo.webp from WEBP' in log
    [quarantine] = glob.glob(os.path.join(cfg.output_dir, '**', 'Quarantine', 'quarantine.jsonl'),
                             recursive=True)
    with open(quarantine) as handle:
        reasons = {os.path.basename(e['source']): e['reason'] for e in map(json.loads, handle)}
    assert reasons == {'pipe.png': 'not_a_file', 'bomb.png': 'too_large'}


def test_the_model_records_the_most_common_size_and_three_channels(run):
    _, _, _, summary = run
    assert set(summary.states.values()) == {'COMPLETE'}, summary.states
    (examples,) = summary.outputs['Examples']
    sizes = json.loads(summary_lib.custom_property(examples, 'image_sizes'))
    assert set(sizes) == {'28x28', '32x32', '40x40'}
    assert sum(sizes.values()) == summary_lib.custom_property(examples, 'num_written_train')
    assert summary_lib.custom_property(examples, 'color_images') > 0
    model = summary.trained_model()
    shape = [summary_lib.custom_property(model, f'input_{n}')
             for n in ('height', 'width', 'channels')]
    assert shape == [28, 28, 3]
    statement = summary_lib.custom_property(model, 'input_statement')
    share = 100 * sizes['28x28'] / sum(sizes.values())
    assert statement.startswith(f'trained at 28×28×3; {share:.0f}% of images 28×28, ')
    assert f'  input: {statement}' in summary_text.format_summary(summary)


def test_the_pushed_model_is_blessed_and_serves_every_size_and_mode(run):
    cfg, written, _, summary = run
    (blessing,) = summary.outputs['ModelBlessing']
    assert summary_lib.custom_property(blessing, 'blessed') == 1
    assert summary_lib.custom_property(summary.trained_model(), 'eval_accuracy') >= MIN_ACCURACY
    [version] = version_folders(cfg.serving_dir)
    served = tf.saved_model.load(os.path.join(cfg.serving_dir, version))
    picks = {}
    for path, info in sorted(written.items()):  # one file per (size, mode, format)
        picks.setdefault((info['size'], info['mode'], info['format']), path)
    payloads = []
    for path in picks.values():
        with open(os.path.join(cfg.ingest.data_dir, path), 'rb') as handle:
            payloads.append(handle.read())
    out = served.signatures['predict_images'](images=tf.constant(payloads))
    assert out['probabilities'].shape == (len(payloads), 3)
    assert set(out['class_names'].numpy()[:, 0].astype(str)) <= {'flower', 'roofs', 'sky'}


def test_two_local_workers_trained_the_pushed_model(run):
    cfg, _, _, summary = run
    recorded = {key: summary_lib.custom_property(summary.trained_model(), key)
                for key in ('num_workers', 'num_replicas', 'steps_run', 'input_sharding',
                            'augment', 'input_height', 'input_width')}
    assert recorded == {'num_workers': 2.0, 'num_replicas': 2.0, 'steps_run': 150.0,
                        'input_sharding': 'FILE', 'augment': 'light', 'input_height': 28,
                        'input_width': 28}
    # Both workers ran the job on the 2-replica cluster, each on its own files (worker 0 and
    # 1 of 2); only the chief wrote metrics.
    trainer = os.path.join(cfg.output_dir, 'pipeline_root', 'ImageTrainer')
    found = {name: os.path.join(root, name) for root, _, names in os.walk(trainer)
             for name in names if name.startswith('worker-') or name == 'metrics.json'}
    assert sorted(found) == ['metrics.json', 'worker-0.log', 'worker-1.log'], found
    for index in range(2):
        log = open(found[f'worker-{index}.log']).read()
        assert 'Training models.resnet.build_model on 2 replica(s)' in log
        assert ', augment light: ' in log
        assert 'Input over 2 workers: FILE sharding of the train split' in log
        assert f'this is worker {index}\n' in log
    assert json.load(open(found['metrics.json']))['num_workers'] == 2
