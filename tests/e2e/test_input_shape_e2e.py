"""End-to-end: a user's own image folders, run without any shape setting (marked e2e).

Three classes cut from real photos (tests/support/photo_folders.py): PNG and JPEG, 28x28 (most),
32x32 and 40x40, a few RGB among grayscale. The real pipeline with the smoke config (trained
longer, with a bar on overall accuracy) and an inferred schema must train at the most common
size with 3 channels, record it on the Model, say so in the summary, and serve images of every
size and mode.
"""
import dataclasses
import json
import os

import pytest
import tensorflow as tf

from pipeline import config as config_lib
from pipeline import summary as summary_lib
from pipeline import summary_text

import photo_folders
from helpers import run_pipeline

pytestmark = pytest.mark.e2e
MIN_ACCURACY = 0.8


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp('shape_e2e')
    written = photo_folders.make_folders(str(base / 'data'), per_class=30)
    cfg = config_lib.smoke_config(str(base / 'data'), str(base / 'out'), schema_path=None)
    assert cfg.train.image_size is None and cfg.train.channels is None  # nothing configured
    # A real bar on overall accuracy (the smoke config has none), met by training long enough.
    cfg = dataclasses.replace(cfg, eval=config_lib.EvalConfig(min_accuracy=MIN_ACCURACY),
                              train=dataclasses.replace(cfg.train, train_steps=150))
    return cfg, written, run_pipeline(cfg)


def test_the_model_records_the_most_common_size_and_three_channels(run):
    _, written, summary = run
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
    cfg, written, summary = run
    (blessing,) = summary.outputs['ModelBlessing']
    assert summary_lib.custom_property(blessing, 'blessed') == 1
    assert summary_lib.custom_property(summary.trained_model(), 'eval_accuracy') >= MIN_ACCURACY
    [version] = os.listdir(cfg.serving_dir)
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
