"""TF Serving warm-up requests in the export: deterministic, a fixed count per signature, and
each one answered by the SavedModel loaded in a process of its own (as TF Serving replays them)."""
import json
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

import saved_models
from core import features, inputs
from training import export, warmup
from models import mlp

from helpers import run_command

HERE = os.path.dirname(os.path.abspath(__file__))
CLASSES = ('dark', 'bright')
BRIGHTNESS = {'dark': [0.05, 0.1, 0.2, 0.3, 0.35], 'bright': [0.6, 0.7, 0.8, 0.9, 0.95]}


def _records(model_dir):
    path = os.path.join(model_dir, warmup.WARMUP_FILE)
    return [prediction_log_pb2.PredictionLog.FromString(r.numpy())
            for r in tf.data.TFRecordDataset(path)]


def _replay(model_dir):
    # A process of its own that loads only the SavedModel, as TF Serving does: a child of the
    # warm interpreter (TensorFlow imported once a session; no model, none of this process's
    # state), not a fresh `python` importing TensorFlow for each replay.
    out = run_command([sys.executable, os.path.join(HERE, 'warmup_replay.py'), model_dir],
                      timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith('{')]


def test_image_model_warmup_file_replays_in_a_fresh_process(tmp_path):
    examples = saved_models.eval_examples(tmp_path / 'examples', BRIGHTNESS)
    pattern = os.path.join(examples.uri, 'Split-eval', '*')
    first = warmup.first_examples(pattern)
    assert len(first) == warmup.WARMUP_EXAMPLES == 8
    assert first == warmup.first_examples(pattern)  # the same examples on every run
    sources = [tf.train.Example.FromString(e).features.feature[features.SOURCE_KEY]
               .bytes_list.value[0].decode() for e in first]
    assert sources == ([f'dark/{i}.png' for i in range(5)] + [f'bright/{i}.png' for i in range(3)])

    model_dir = export.export_serving_model(
        saved_models.brightness_model((8, 8, 1), [0.1, 0.9]), str(tmp_path / 'm'), (8, 8, 1),
        CLASSES, warmup_examples=first)
    records = _records(model_dir)
    assert len(records) == 3 * 8  # serving_default, classify and predict_images, 8 each
    kinds = [(r.WhichOneof('log_type'),
              getattr(r, r.WhichOneof('log_type')).request.model_spec.signature_name)
             for r in records]
    assert kinds.count(('predict_log', 'serving_default')) == 8
    assert kinds.count(('classify_log', export.CLASSIFY_SIGNATURE)) == 8
    assert kinds.count(('predict_log', export.IMAGES_SIGNATURE)) == 8

    replayed = _replay(model_dir)
    assert [(r['kind'], r['signature']) for r in replayed] == kinds
    assert all(r['rows'] == [1] for r in replayed)


def test_tabular_model_warmup_has_no_image_requests_and_no_file_without_examples(tmp_path):
    spec = inputs.InputSpec(kind='tabular', numeric=(('width', 2.0, 0.5),), categorical=())
    rows = [features.make_tabular_example({'width': float(i)}, label=i % 2,
                                          label_name=CLASSES[i % 2], source_path='t.csv')
            .SerializeToString() for i in range(3)]
    model = mlp.build_model(inputs.builder_input_shape(spec, (8, 8, 1)), len(CLASSES))
    model_dir = export.export_serving_model(model, str(tmp_path / 'm'), (8, 8, 1), CLASSES,
                                            spec, warmup_examples=rows)
    records = _records(model_dir)
    assert len(records) == 2 * 3  # fewer eval examples than WARMUP_EXAMPLES: all of them
    replayed = _replay(model_dir)
    assert {r['signature'] for r in replayed} == {'serving_default', export.CLASSIFY_SIGNATURE}
    assert all(r['rows'] == [1] for r in replayed)

    bare = export.export_serving_model(model, str(tmp_path / 'n'), (8, 8, 1), CLASSES, spec)
    assert not os.path.exists(os.path.join(bare, warmup.WARMUP_FILE))


def test_raw_pixel_examples_give_png_requests_for_predict_images():
    pixels = np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)
    raw = features.make_example(pixels.tobytes(), 0, 'dark', 8, 8, 'x.png', channels=3)
    spec = inputs.InputSpec(storage='raw', channels=3)
    logs = warmup.requests([raw.SerializeToString()], spec, (8, 8, 3),
                           predict=('serving_default', 'examples'), classify='classify',
                           images=('predict_images', 'images'))
    assert [log.WhichOneof('log_type') for log in logs] == ['predict_log', 'classify_log',
                                                            'predict_log']
    (encoded,) = tf.make_ndarray(logs[2].predict_log.request.inputs['images'])
    np.testing.assert_array_equal(tf.io.decode_png(encoded).numpy(), pixels)
