"""Small real models and Examples for the baseline, Evaluator and Pusher tests.

The models are exported by the trainer's own export (components/trainer/export.py), so they have
its signatures and its model_signature.json. Their Keras model classifies an image by its mean
brightness: the class whose `centers` value is nearest wins (logits 2·c·x − c², the squared
distance without the x² that every class shares). With images of known brightness, a test
decides exactly which examples a model gets right, and so each class's accuracy.
"""
import io
import os
from typing import Dict, Sequence

import keras
import numpy as np
from PIL import Image
import tensorflow as tf
from tfx.components.util import examples_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_artifacts
from tfx.utils import path_utils

from components.common import features
from components.trainer import export


def brightness_model(image_shape: Sequence[int], centers: Sequence[float]) -> keras.Model:
    channels = image_shape[-1]
    images = keras.Input(tuple(image_shape))
    logits = keras.layers.Dense(len(centers))(keras.layers.GlobalAveragePooling2D()(images))
    model = keras.Model(images, logits)
    centers = np.asarray(centers, np.float32)
    # The mean over channels of the per-channel means is the image's mean brightness.
    kernel = np.tile(2.0 * centers / channels, (channels, 1))
    model.layers[-1].set_weights([kernel, -centers ** 2])
    return model


def exported_model(uri: str, class_names: Sequence[str], centers: Sequence[float] = None,
                   image_shape: Sequence[int] = (8, 8, 1)) -> standard_artifacts.Model:
    """A Model artifact at uri whose Format-Serving holds the exported brightness model."""
    centers = centers if centers is not None else np.linspace(0.1, 0.9, len(class_names))
    model = standard_artifacts.Model()
    model.uri = str(uri)
    export.export_serving_model(brightness_model(image_shape, centers),
                                path_utils.serving_model_dir(model.uri), tuple(image_shape),
                                tuple(class_names))
    return model


def serve(model: standard_artifacts.Model, serving_dir: str, version: int) -> str:
    """Copies a Model artifact's SavedModel to serving_dir/<version>, as a push would."""
    target = os.path.join(str(serving_dir), str(version))
    source = path_utils.serving_model_dir(model.uri)
    for root, _, files in os.walk(source):
        for name in files:
            relative = os.path.relpath(os.path.join(root, name), source)
            os.makedirs(os.path.dirname(os.path.join(target, relative)), exist_ok=True)
            with open(os.path.join(root, name), 'rb') as src, \
                    open(os.path.join(target, relative), 'wb') as dst:
                dst.write(src.read())
    return target


def png(brightness: float, size: int = 8) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((size, size), round(brightness * 255), np.uint8)).save(out, 'PNG')
    return out.getvalue()


def eval_examples(uri: str, brightness_by_class: Dict[str, Sequence[float]]
                  ) -> standard_artifacts.Examples:
    """An Examples artifact with only an eval split: one PNG per brightness, class by class,
    written as ingestion writes them (gzip TFRecords, tf.Example payload)."""
    examples = standard_artifacts.Examples()
    examples.uri = str(uri)
    examples.split_names = artifact_utils.encode_split_names(['eval'])
    examples_utils.set_payload_format(examples, example_gen_pb2.FORMAT_TF_EXAMPLE)
    examples_utils.set_file_format(examples, features.FILE_FORMAT)
    split = os.path.join(examples.uri, 'Split-eval')
    os.makedirs(split)
    with tf.io.TFRecordWriter(os.path.join(split, 'data_tfrecord-00000-of-00001.gz'),
                              options='GZIP') as writer:
        for label, (name, values) in enumerate(brightness_by_class.items()):
            for i, value in enumerate(values):
                writer.write(features.make_example(png(value), label, name, 8, 8,
                                                   f'{name}/{i}.png').SerializeToString())
    return examples
