"""Exports a trained Keras model as a SavedModel with its serving signatures.

- `serving_default` takes serialized tf.Examples (what TFMA and TF Serving's Predict API send);
- `predict_images` (image models only) takes raw encoded image bytes (PNG, JPEG, ...), so
  clients need no protobufs;
- `classify` (method `tensorflow/serving/classify`, input `inputs`: serialized tf.Examples)
  returns `classes` (string [batch, num_classes], the class names on every row) and `scores`
  (float [batch, num_classes], the probabilities), as TF Serving's Classify API and tfx_bsl's
  BulkInferrer (`_post_process_classify`) expect.
What the model predicts and takes (class names, input) is written beside it as
`assets.extra/model_signature.json`: the serving guard compares it with the served model's.
TF Serving's warm-up requests (training/warmup.py) are written inside it too.

Both turn their input into model inputs inside the graph with the same functions as training
(`core/inputs.py`: image decoding, or a table's standardisation and hashing), so
there is no train/serve skew, and the predict signatures return `probabilities` [batch,
num_classes], `class_ids` [batch] and `class_names` [batch, 1]. The name is a one-column matrix
because tfx_bsl's predict post-processing splits every output row by row and needs a numpy
value per row: a rank-1 string output splits into bare `bytes` and fails there.
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
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.saved_model import fingerprinting_utils

from core import features, inputs, model_signature, storage
from training import warmup

SIGNATURE_INPUT = 'examples'
INPUT_SPEC_FILE = os.path.join('assets.extra', 'input_spec.json')
IMAGES_SIGNATURE = 'predict_images'
IMAGES_INPUT = 'images'
CLASSIFY_SIGNATURE = 'classify'
CLASSIFY_INPUT = tf.saved_model.CLASSIFY_INPUTS  # 'inputs'


def export_serving_model(model: keras.Model, export_dir: str, image_shape: Sequence[int],
                         class_names: Sequence[str],
                         spec: inputs.InputSpec = inputs.InputSpec(),
                         warmup_examples: Sequence[bytes] = ()) -> str:
    """Writes the SavedModel to export_dir atomically and returns export_dir.

    `warmup_examples` (serialized eval tf.Examples) become TF Serving's warm-up requests in
    `assets.extra/tf_serving_warmup_requests` (training/warmup.py); none, no file."""
    height, width, channels = image_shape
    names = tf.constant(list(class_names))

    # The model's forward pass as one function that every signature calls: a signature that
    # traced the model itself stored its graph once more per signature (a slower export and a
    # larger SavedModel; tests/training/test_export.py counts the copies).
    forward = tf.function(lambda model_inputs: model(model_inputs, training=False))

    def predict(model_inputs):
        # The one prediction path that every signature goes through.
        probabilities = tf.nn.softmax(tf.cast(forward(model_inputs), tf.float32))
        class_ids = tf.argmax(probabilities, axis=-1)
        return {'probabilities': probabilities, 'class_ids': class_ids,
                'class_names': tf.gather(names, class_ids)[:, tf.newaxis]}

    def classify(probabilities):
        # TF Serving's Classify API: every row lists all classes with their scores.
        classes = tf.tile(names[tf.newaxis, :], [tf.shape(probabilities)[0], 1])
        return {tf.saved_model.CLASSIFY_OUTPUT_CLASSES: classes,
                tf.saved_model.CLASSIFY_OUTPUT_SCORES: probabilities}

    archive = keras.export.ExportArchive()
    archive.track(model)
    examples_input = tf.TensorSpec([None], tf.string, name=SIGNATURE_INPUT)
    if spec.kind == 'tabular':
        def from_examples(serialized):
            parsed = tf.io.parse_example(serialized, inputs.tabular_parse_spec(spec))
            return predict(inputs.tabular_inputs(parsed, spec))
    else:
        def from_examples(serialized):
            parsed = tf.io.parse_example(serialized, inputs.image_parse_spec(spec))
            return predict(tf.map_fn(
                lambda one: inputs.decode_parsed_image(one, spec, image_shape), parsed,
                fn_output_signature=tf.float32))

    @tf.function(input_signature=[examples_input])
    def serve_examples(serialized):
        return from_examples(serialized)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=CLASSIFY_INPUT)])
    def classify_examples(serialized):
        return classify(from_examples(serialized)['probabilities'])

    archive.add_endpoint('serving_default', serve_examples)
    archive.add_endpoint(CLASSIFY_SIGNATURE, classify_examples)
    if spec.kind != 'tabular':
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=IMAGES_INPUT)])
        def serve_images(encoded):
            return predict(tf.map_fn(lambda b: features.decode_image(b, height, width, channels),
                                     encoded, fn_output_signature=tf.float32))

        archive.add_endpoint(IMAGES_SIGNATURE, serve_images)
    tmp_dir = export_dir.rstrip('/') + '.tmp'
    if tf.io.gfile.exists(tmp_dir):
        tf.io.gfile.rmtree(tmp_dir)  # left over by an earlier crash; never visible as a model
    archive.write_out(tmp_dir)
    _mark_classify(tmp_dir)
    if warmup_examples:
        warmup.write(tmp_dir, warmup.requests(
            warmup_examples, spec, image_shape, predict=('serving_default', SIGNATURE_INPUT),
            classify=CLASSIFY_SIGNATURE,
            images=None if spec.kind == 'tabular' else (IMAGES_SIGNATURE, IMAGES_INPUT)))
    tf.io.gfile.makedirs(os.path.join(tmp_dir, os.path.dirname(INPUT_SPEC_FILE)))
    with tf.io.gfile.GFile(os.path.join(tmp_dir, INPUT_SPEC_FILE), 'w') as handle:
        handle.write(spec.to_json())
    tf.io.gfile.makedirs(os.path.dirname(export_dir.rstrip('/')))
    # What it predicts and takes, for the serving guard (core/model_signature.py).
    model_signature.write(tmp_dir, model_signature.describe(class_names, image_shape, spec))
    tf.io.gfile.rename(tmp_dir, export_dir, overwrite=False)
    return export_dir


def _mark_classify(saved_model_dir: str) -> None:
    """Gives the `classify` signature the method name TF Serving's Classify API and tfx_bsl
    look for. TF2's saved_model.save marks every signature `tensorflow/serving/predict` and has
    no option for it, so the SignatureDef is edited in saved_model.pb (before the rename) and
    the fingerprint is written again to match."""
    path = os.path.join(saved_model_dir, 'saved_model.pb')
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString(storage.read(path))
    for meta_graph in saved_model.meta_graphs:
        meta_graph.signature_def[CLASSIFY_SIGNATURE].method_name = (
            tf.saved_model.CLASSIFY_METHOD_NAME)
    with tf.io.gfile.GFile(path, 'wb') as handle:
        handle.write(saved_model.SerializeToString())
    fingerprinting_utils.write_fingerprint(saved_model_dir)
