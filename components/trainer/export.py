"""Exports a trained Keras model as a SavedModel with its serving signatures.

- `serving_default` takes serialized tf.Examples (what TFMA and TF Serving's Predict API send);
- `predict_images` (image models only) takes raw encoded image bytes (PNG, JPEG, ...), so
  clients need no protobufs.
What the model predicts and takes (class names, input) is written beside it as
`assets.extra/model_signature.json`: the serving guard compares it with the served model's.

Both turn their input into model inputs inside the graph with the same functions as training
(`components/common/inputs.py`: image decoding, or a table's standardisation and hashing), so
there is no train/serve skew, and both return `probabilities`, `class_ids` and `class_names`.
A table model's `serving_default` parses the table's columns by name; a numeric column left
out of an Example is imputed and flagged exactly as in training. The input spec (for a table:
the means imputed, the deviations, the columns with a missing-value indicator) is written
beside the model as `assets.extra/input_spec.json`, so a served model says how it preprocesses.
The export is written to a temporary sibling folder and renamed into place, so a crash never
leaves a half-written model at the final path.
"""
import os
from typing import Sequence

import keras
import tensorflow as tf

from components.common import features, inputs, model_signature

SIGNATURE_INPUT = 'examples'
INPUT_SPEC_FILE = os.path.join('assets.extra', 'input_spec.json')
IMAGES_SIGNATURE = 'predict_images'
IMAGES_INPUT = 'images'


def export_serving_model(model: keras.Model, export_dir: str, image_shape: Sequence[int],
                         class_names: Sequence[str],
                         spec: inputs.InputSpec = inputs.InputSpec()) -> str:
    """Writes the SavedModel to export_dir atomically and returns export_dir."""
    height, width, channels = image_shape
    names = tf.constant(list(class_names))

    def predict(model_inputs):
        # The one prediction path that every signature goes through.
        probabilities = tf.nn.softmax(tf.cast(model(model_inputs, training=False), tf.float32))
        class_ids = tf.argmax(probabilities, axis=-1)
        return {'probabilities': probabilities, 'class_ids': class_ids,
                'class_names': tf.gather(names, class_ids)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    examples_input = tf.TensorSpec([None], tf.string, name=SIGNATURE_INPUT)
    if spec.kind == 'tabular':
        @tf.function(input_signature=[examples_input])
        def serve_rows(serialized):
            parsed = tf.io.parse_example(serialized, inputs.tabular_parse_spec(spec))
            return predict(inputs.tabular_inputs(parsed, spec))

        archive.add_endpoint('serving_default', serve_rows)
    else:
        @tf.function(input_signature=[examples_input])
        def serve_examples(serialized):
            parsed = tf.io.parse_example(serialized, inputs.image_parse_spec(spec))
            return predict(tf.map_fn(
                lambda one: inputs.decode_parsed_image(one, spec, image_shape), parsed,
                fn_output_signature=tf.float32))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=IMAGES_INPUT)])
        def serve_images(encoded):
            return predict(tf.map_fn(lambda b: features.decode_image(b, height, width, channels),
                                     encoded, fn_output_signature=tf.float32))

        archive.add_endpoint('serving_default', serve_examples)
        archive.add_endpoint(IMAGES_SIGNATURE, serve_images)
    tmp_dir = export_dir.rstrip('/') + '.tmp'
    if tf.io.gfile.exists(tmp_dir):
        tf.io.gfile.rmtree(tmp_dir)  # left over by an earlier crash; never visible as a model
    archive.write_out(tmp_dir)
    tf.io.gfile.makedirs(os.path.join(tmp_dir, os.path.dirname(INPUT_SPEC_FILE)))
    with tf.io.gfile.GFile(os.path.join(tmp_dir, INPUT_SPEC_FILE), 'w') as handle:
        handle.write(spec.to_json())
    tf.io.gfile.makedirs(os.path.dirname(export_dir.rstrip('/')))
    # What it predicts and takes, for the serving guard (components/common/model_signature.py).
    model_signature.write(tmp_dir, model_signature.describe(class_names, image_shape, spec))
    tf.io.gfile.rename(tmp_dir, export_dir, overwrite=False)
    return export_dir
