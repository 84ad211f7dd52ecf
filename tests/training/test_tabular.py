"""The trainer's tabular path: input spec, tf.data parsing, the MLP, and its serving signature;
and raw-pixel images, which must predict exactly like the same images sent encoded."""
import io
import json
import os

import numpy as np
from PIL import Image
import tensorflow as tf

from core import features, inputs
from training import data, export
from models import mlp, resnet

SPEC = inputs.InputSpec(kind='tabular', numeric=(('width', 2.0, 0.5), ('height', 10.0, 4.0)),
                        categorical=('colour',))
CLASSES = ('a', 'b')


def _rows(n=12):
    return [features.make_tabular_example(
        {'width': 1.0 + i, 'height': 2.0 * i, 'colour': 'red' if i % 2 else 'blue'},
        label=i % 2, label_name=CLASSES[i % 2], source_path='t.csv').SerializeToString()
        for i in range(n)]


def _write(path, records, compress=True):
    options = tf.io.TFRecordOptions(compression_type='GZIP' if compress else '')
    with tf.io.TFRecordWriter(path, options) as writer:
        for record in records:
            writer.write(record)


def test_input_spec_round_trips_and_gives_the_builder_its_shapes():
    assert inputs.InputSpec.from_json(SPEC.to_json()) == SPEC
    assert inputs.InputSpec.from_json('') == inputs.InputSpec()  # Examples that record no spec
    assert inputs.builder_input_shape(SPEC, (8, 8, 1)) == {'numeric': (2,), 'categorical': (1,)}
    assert inputs.builder_input_shape(inputs.InputSpec(), (8, 8, 1)) == (8, 8, 1)


def test_tabular_batches_are_standardised_and_hashed(tmp_path):
    _write(str(tmp_path / 'a.gz'), _rows()[:4])
    _write(str(tmp_path / 'b'), _rows()[4:6], compress=False)  # the suffix picks compression
    (batch, labels), = data.eval_dataset(str(tmp_path / '*'), 8, (8, 8, 1), spec=SPEC).take(1)
    np.testing.assert_allclose(batch['numeric'][:, 0], (np.arange(1, 7) - 2.0) / 0.5)
    np.testing.assert_allclose(batch['numeric'][:, 1], (2.0 * np.arange(6) - 10.0) / 4.0)
    assert batch['categorical'].shape == (6, 1)
    assert len(set(batch['categorical'][:, 0].numpy())) == 2
    assert labels.numpy().tolist() == [0, 1, 0, 1, 0, 1]
    train = next(iter(data.train_dataset(str(tmp_path / '*'), 4, (8, 8, 1), seed=0, spec=SPEC)))
    assert train[0]['numeric'].shape == (4, 2)


def test_tabular_signature_equals_the_in_process_model(tmp_path):
    model = mlp.build_model(inputs.builder_input_shape(SPEC, (8, 8, 1)), len(CLASSES))
    loaded = tf.saved_model.load(
        export.export_serving_model(model, str(tmp_path / 'm'), (8, 8, 1), CLASSES, SPEC))
    assert set(loaded.signatures) == {'serving_default', export.CLASSIFY_SIGNATURE}
    rows = _rows(5)
    out = loaded.signatures['serving_default'](examples=tf.constant(rows))
    parsed = tf.io.parse_example(rows, inputs.tabular_parse_spec(SPEC))
    expected = tf.nn.softmax(model(inputs.tabular_inputs(parsed, SPEC), training=False)).numpy()
    np.testing.assert_allclose(out['probabilities'].numpy(), expected, rtol=1e-5, atol=1e-6)


# 'height' had empty values in the train split: it is imputed and has an indicator; 'width'
# had none, so a request without it is imputed but gets no indicator.
MISSING_SPEC = inputs.InputSpec(kind='tabular', numeric=SPEC.numeric, categorical=('colour',),
                                missing=('height',))


def _row(**values):
    return features.make_tabular_example(values, label=0, label_name='a',
                                         source_path='t.csv').SerializeToString()


def test_missing_values_are_imputed_with_the_mean_and_flagged(tmp_path):
    assert inputs.InputSpec.from_json(MISSING_SPEC.to_json()) == MISSING_SPEC
    assert inputs.builder_input_shape(MISSING_SPEC, (8, 8, 1)) == {
        'numeric': (3,), 'categorical': (1,)}
    rows = [_row(width=3.0, height=2.0, colour='red'), _row(width=1.0, colour='red'),
            _row(colour=''), _row(height=18.0, colour='blue')]
    path = str(tmp_path / 'rows.gz')
    _write(path, rows)
    (batch, _), = data.eval_dataset(path, 8, (8, 8, 1), spec=MISSING_SPEC).take(1)
    # Columns: width, height standardised (the mean where missing, so 0), then height's flag.
    np.testing.assert_allclose(batch['numeric'].numpy(), [
        [2.0, -2.0, 0.0], [-2.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    # A stored spec without the `missing` key (no indicators recorded) reads as having none.
    legacy = json.loads(SPEC.to_json())
    del legacy['missing']
    assert inputs.InputSpec.from_json(json.dumps(legacy)).missing == ()


def test_serving_imputes_and_flags_like_training_and_records_the_spec(tmp_path):
    model = mlp.build_model(inputs.builder_input_shape(MISSING_SPEC, (8, 8, 1)), len(CLASSES))
    export_dir = export.export_serving_model(model, str(tmp_path / 'm'), (8, 8, 1), CLASSES,
                                             MISSING_SPEC)
    with open(os.path.join(export_dir, export.INPUT_SPEC_FILE)) as handle:
        assert inputs.InputSpec.from_json(handle.read()) == MISSING_SPEC
    rows = [_row(width=3.0, colour='red'), _row(height=2.0, colour='blue'), _row(colour='x')]
    out = tf.saved_model.load(export_dir).signatures['serving_default'](
        examples=tf.constant(rows))
    parsed = tf.io.parse_example(rows, inputs.tabular_parse_spec(MISSING_SPEC))
    expected = tf.nn.softmax(model(inputs.tabular_inputs(parsed, MISSING_SPEC),
                                   training=False)).numpy()
    assert np.isfinite(out['probabilities'].numpy()).all()
    np.testing.assert_allclose(out['probabilities'].numpy(), expected, rtol=1e-5, atol=1e-6)
    # The flag reaches the model: a missing height is not the same input as its mean.
    filled = tf.io.parse_example([_row(width=3.0, height=10.0, colour='red')],
                                 inputs.tabular_parse_spec(MISSING_SPEC))
    assert not np.allclose(model(inputs.tabular_inputs(filled, MISSING_SPEC)).numpy(),
                           model(inputs.tabular_inputs(
                               {k: v[:1] for k, v in parsed.items()}, MISSING_SPEC)).numpy())


def test_mlp_takes_numeric_only_or_categorical_only():
    assert mlp.build_model({'numeric': (3,)}, 4)(
        {'numeric': tf.zeros([2, 3])}).shape == (2, 4)
    assert mlp.build_model({'categorical': (2,)}, 3)(
        {'categorical': tf.constant([[1, 99], [0, 5]], tf.int64)}).shape == (2, 3)


def test_raw_pixel_examples_predict_like_the_encoded_image(tmp_path, png_bytes):
    pixels = np.asarray(Image.open(io.BytesIO(png_bytes)).convert('RGB'))
    raw = features.make_example(pixels.tobytes(), 0, 'a', 8, 8, 'x.png', channels=3)
    spec = inputs.InputSpec(storage='raw', channels=3)
    model = resnet.build_model((8, 8, 1), 2)
    loaded = tf.saved_model.load(export.export_serving_model(
        model, str(tmp_path / 'm'), (8, 8, 1), CLASSES, spec))
    by_raw = loaded.signatures['serving_default'](examples=tf.constant([raw.SerializeToString()]))
    by_image = loaded.signatures[export.IMAGES_SIGNATURE](images=tf.constant([png_bytes]))
    np.testing.assert_allclose(by_raw['probabilities'], by_image['probabilities'], atol=1e-2)
    path = str(tmp_path / 'raw.gz')
    _write(path, [raw.SerializeToString()])
    (image, _), = data.eval_dataset(path, 1, (8, 8, 1), spec=spec).take(1)
    assert image.shape == (1, 8, 8, 1)
