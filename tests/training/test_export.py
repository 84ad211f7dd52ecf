"""Tests of the SavedModel export: both signatures, and that they agree on the same images."""
import os

import numpy as np
import tensorflow as tf
from tensorflow.python.tools import saved_model_utils

from core import features
from training import export
from models import resnet

from helpers import DIGITS

CLASSES = ('0', '1', '2')


def _pngs(per_class=4):
    encoded, labels = [], []
    for label, name in enumerate(CLASSES):
        folder = os.path.join(DIGITS, name)
        for file_name in sorted(os.listdir(folder))[:per_class]:
            with open(os.path.join(folder, file_name), 'rb') as handle:
                encoded.append(handle.read())
            labels.append(label)
    return encoded, labels


def test_raw_image_signature_matches_the_example_signature_and_in_process_model(tmp_path):
    model = resnet.build_model((8, 8, 1), len(CLASSES))
    export_dir = export.export_serving_model(model, str(tmp_path / 'm'), (8, 8, 1), CLASSES)
    loaded = tf.saved_model.load(export_dir)
    assert set(loaded.signatures) == {'serving_default', export.IMAGES_SIGNATURE,
                                     export.CLASSIFY_SIGNATURE}

    encoded, labels = _pngs()
    examples = [features.make_example(e, y, CLASSES[y], 8, 8, f'{i}.png').SerializeToString()
                for i, (e, y) in enumerate(zip(encoded, labels))]
    by_example = loaded.signatures['serving_default'](examples=tf.constant(examples))
    by_image = loaded.signatures[export.IMAGES_SIGNATURE](images=tf.constant(encoded))
    for key in ('probabilities', 'class_ids', 'class_names'):
        np.testing.assert_array_equal(by_example[key].numpy(), by_image[key].numpy())

    # The same decoding as training, then the in-process Keras model: identical probabilities.
    images = tf.stack([features.decode_image(e, 8, 8, 1) for e in encoded])
    expected = tf.nn.softmax(model(images, training=False)).numpy()
    np.testing.assert_allclose(by_image['probabilities'].numpy(), expected, rtol=1e-5, atol=1e-6)
    names = [n.decode() for n in by_image['class_names'].numpy()[:, 0]]
    assert names == [CLASSES[i] for i in expected.argmax(axis=1)]


def test_the_models_graph_is_stored_once_for_all_signatures_not_once_each(tmp_path):
    """Every signature calls one traced forward pass (export.py `forward`): the SavedModel holds
    the model's ops in that function's traces (TF's save traces it once more), however many
    signatures there are; tracing the model in each signature stored it once per signature."""
    model = resnet.build_model((8, 8, 1), len(CLASSES))
    export_dir = export.export_serving_model(model, str(tmp_path / 'm'), (8, 8, 1), CLASSES)
    convolutions = sum('Conv' in type(layer).__name__ for layer in model.layers)
    library = saved_model_utils.read_saved_model(export_dir).meta_graphs[0].graph_def.library
    stored = sum(node.op == 'Conv2D' for function in library.function
                 for node in function.node_def)
    signatures = len(tf.saved_model.load(export_dir).signatures)
    assert convolutions > 0 and signatures == 3
    assert stored == 2 * convolutions < signatures * convolutions

def test_raw_image_signature_resizes_other_sizes_in_the_graph(tmp_path, png_bytes):
    model = resnet.build_model((4, 4, 1), len(CLASSES))  # the 8x8 digit must be resized to 4x4
    loaded = tf.saved_model.load(
        export.export_serving_model(model, str(tmp_path / 'm'), (4, 4, 1), CLASSES))
    out = loaded.signatures[export.IMAGES_SIGNATURE](images=tf.constant([png_bytes, png_bytes]))
    assert out['probabilities'].shape == (2, 3)
    np.testing.assert_allclose(out['probabilities'].numpy().sum(axis=1), 1.0, rtol=1e-5)


def test_classify_signature_is_tf_servings_classify_api(tmp_path):
    model = resnet.build_model((8, 8, 1), len(CLASSES))
    export_dir = export.export_serving_model(model, str(tmp_path / 'm'), (8, 8, 1), CLASSES)
    # TF Serving's :classify endpoint and tfx_bsl choose the signature by its method name.
    signature = tf.saved_model.load(export_dir).signatures[export.CLASSIFY_SIGNATURE]
    meta_graph = saved_model_utils.get_meta_graph_def(export_dir, 'serve')
    signature_def = meta_graph.signature_def[export.CLASSIFY_SIGNATURE]
    assert signature_def.method_name == 'tensorflow/serving/classify'
    assert list(signature_def.inputs) == ['inputs']
    assert meta_graph.signature_def['serving_default'].method_name == 'tensorflow/serving/predict'

    encoded, labels = _pngs(per_class=2)
    examples = [features.make_example(e, y, CLASSES[y], 8, 8, f'{i}.png').SerializeToString()
                for i, (e, y) in enumerate(zip(encoded, labels))]
    out = signature(inputs=tf.constant(examples))
    assert out['classes'].dtype == tf.string and out['scores'].dtype == tf.float32
    assert out['classes'].numpy().tolist() == [[c.encode() for c in CLASSES]] * len(examples)
    predicted = tf.saved_model.load(export_dir).signatures['serving_default'](
        examples=tf.constant(examples))
    np.testing.assert_array_equal(out['scores'].numpy(), predicted['probabilities'].numpy())
    assert predicted['class_names'].shape == (len(examples), 1)
