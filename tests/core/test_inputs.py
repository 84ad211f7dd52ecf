"""Raw pixels stored with each image's own channels (ingestion's channels 0): training input and
the serving signature read every Example's image/channels and convert it to the model's."""
import io

import numpy as np
from PIL import Image
import tensorflow as tf
from sklearn.datasets import load_sample_images

from core import features, inputs
from training import data, export
from models import resnet

SPEC = inputs.InputSpec(storage='raw', channels=0)


def _photo_patches():
    """A colour and a grey 6x5 patch of a real photo, as (pixels, encoded PNG) pairs."""
    patch = Image.fromarray(load_sample_images().images[0][100:106, 300:305])
    out = []
    for mode in ('RGB', 'L'):
        image = patch.convert(mode)
        buffer = io.BytesIO()
        image.save(buffer, 'PNG')
        out.append((np.asarray(image), buffer.getvalue()))
    return out


def _raw_examples():
    records = []
    for label, (pixels, _) in enumerate(_photo_patches()):
        channels = 1 if pixels.ndim == 2 else 3
        records.append(features.make_example(pixels.tobytes(), label, 'ab'[label], 6, 5,
                                             f'{label}.png', channels=channels))
    return records


def test_each_example_is_decoded_with_its_own_channels(tmp_path):
    path = str(tmp_path / 'raw')
    with tf.io.TFRecordWriter(path) as writer:
        for example in _raw_examples():
            writer.write(example.SerializeToString())
    patches = _photo_patches()
    for channels in (1, 3):
        (images, labels), = data.eval_dataset(path, 2, (6, 5, channels), spec=SPEC).take(1)
        assert images.shape == (2, 6, 5, channels) and labels.numpy().tolist() == [0, 1]
        for image, (_, png) in zip(images, patches):
            # The same as decoding the encoded file to that many channels.
            expected = features.decode_image(tf.constant(png), 6, 5, channels)
            np.testing.assert_allclose(image, expected, atol=1 / 255)


def test_the_serving_signature_reads_per_example_channels(tmp_path):
    model = resnet.build_model((6, 5, 3), 2)
    loaded = tf.saved_model.load(export.export_serving_model(
        model, str(tmp_path / 'm'), (6, 5, 3), ('a', 'b'), SPEC))
    by_raw = loaded.signatures['serving_default'](
        examples=tf.constant([e.SerializeToString() for e in _raw_examples()]))
    by_image = loaded.signatures[export.IMAGES_SIGNATURE](
        images=tf.constant([png for _, png in _photo_patches()]))
    np.testing.assert_allclose(by_raw['probabilities'], by_image['probabilities'], atol=1e-3)
