"""The tf.train.Example layout that ingestion writes and training, evaluation and serving read.

One place for the feature keys, so that the writer (ingestion) and the readers (trainer input
pipeline, serving signature, TFMA label key) cannot drift apart.
"""
from typing import Optional

import tensorflow as tf

IMAGE_KEY = 'image/encoded'   # the original encoded bytes (PNG, JPEG, ...), decoded in-graph
IMAGE_RAW_KEY = 'image/raw'   # or, when ingestion stores pixels: uint8, height x width x channels
CHANNELS_KEY = 'image/channels'  # present with image/raw only
HEIGHT_KEY = 'image/height'
WIDTH_KEY = 'image/width'
LABEL_KEY = 'label'           # class index, from the sorted class-folder names
LABEL_NAME_KEY = 'label_name'  # class-folder name
SOURCE_KEY = 'source_path'    # path relative to the input base: traceability, and the split key

# Written compressed, the same as TFX's own ExampleGen, so every stock component reads it as is.
FILE_FORMAT = 'tfrecords_gzip'
FILE_SUFFIX = '.gz'
FILE_PREFIX = 'data_tfrecord'
SPLITS = ('train', 'eval')


def _bytes(value: bytes) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int(value: int) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _float(value: float) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))


def _common(label: Optional[int], label_name: Optional[str], source_path: str) -> dict:
    # A file name's exact bytes, also when they are not UTF-8 (listed as surrogate escapes):
    # os.fsdecode(the feature) gives the name back.
    common = {SOURCE_KEY: _bytes(source_path.encode('utf-8', 'surrogateescape'))}
    if label is not None:  # None: unlabelled input, ingested to be scored (runner.py --score)
        common.update({LABEL_KEY: _int(label), LABEL_NAME_KEY: _bytes(label_name.encode('utf-8'))})
    return common


def make_example(encoded: bytes, label: Optional[int], label_name: Optional[str], height: int,
                 width: int, source_path: str, channels: int = 0) -> tf.train.Example:
    """Builds the Example for one image; every feature is present exactly once (label and
    label_name only when there is a label: None for input that is scored, not trained on).

    channels == 0: `encoded` is an encoded image (image/encoded); otherwise it is raw uint8
    pixels with that many channels (image/raw, image/channels).
    """
    feature = {HEIGHT_KEY: _int(height), WIDTH_KEY: _int(width),
               **_common(label, label_name, source_path)}
    if channels:
        feature.update({IMAGE_RAW_KEY: _bytes(encoded), CHANNELS_KEY: _int(channels)})
    else:
        feature[IMAGE_KEY] = _bytes(encoded)
    return tf.train.Example(features=tf.train.Features(feature=feature))


RESERVED_KEYS = frozenset({LABEL_KEY, LABEL_NAME_KEY, SOURCE_KEY})


def make_tabular_example(values: dict, label: Optional[int], label_name: Optional[str],
                         source_path: str) -> tf.train.Example:
    """One CSV row: numeric columns as floats, categorical ones as UTF-8 bytes, under the
    column's own name (so TFDV statistics and schemas speak the user's column names)."""
    feature = _common(label, label_name, source_path)
    for name, value in values.items():
        feature[name] = _float(value) if isinstance(value, float) else _bytes(value.encode('utf-8'))
    return tf.train.Example(features=tf.train.Features(feature=feature))


# What training and serving parse: only the image and the label are needed for the model.
PARSE_SPEC = {
    IMAGE_KEY: tf.io.FixedLenFeature([], tf.string),
    LABEL_KEY: tf.io.FixedLenFeature([], tf.int64),
}


def decode_image(encoded: tf.Tensor, height: int, width: int, channels: int) -> tf.Tensor:
    """Decodes one encoded image to float32 [height, width, channels] in [0, 1].

    The same function runs in the training input pipeline and inside the exported serving graph,
    so training and serving preprocess identically. Resizing is a no-op for images that already
    have the model's size.
    """
    image = tf.io.decode_image(encoded, channels=channels, expand_animations=False)
    image = tf.image.convert_image_dtype(image, tf.float32)
    image = tf.image.resize(image, [height, width])
    image.set_shape([height, width, channels])
    return image
