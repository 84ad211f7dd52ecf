"""Small real models, Examples and evaluations for the baseline, Evaluator, Pusher and report
tests.

The models are exported by the trainer's own export (training/export.py), so they have
its signatures and its model_signature.json. Their Keras model classifies an image by its mean
brightness: the class whose `centers` value is nearest wins (logits 2·c·x − c², the squared
distance without the x² that every class shares). With images of known brightness, a test
decides exactly which examples a model gets right, and so each class's accuracy.
"""
import io
import json
import os
import shutil
import tempfile
from typing import Dict, Sequence

import keras
import numpy as np
from PIL import Image
import tensorflow as tf
from tfx.components.util import examples_utils
from tfx.dsl.components.base import base_beam_executor
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils, standard_artifacts
from tfx.types import standard_component_specs as specs
from tfx.utils import path_utils, proto_utils

from core import features
from components.evaluate import executor as evaluate_executor
from training import export
from pipeline.definition import factory
from helpers import IN_PROCESS_BEAM

_EXPORT_CACHE = tempfile.TemporaryDirectory(prefix='brightness-models-')  # removed at exit
_EXPORTS: Dict[tuple, str] = {}   # (classes, centers, shape) -> its export in the cache


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
    """A Model artifact at uri whose Format-Serving holds the exported brightness model.

    Each distinct model is exported once per process and copied into every artifact asking for
    it: the export (tracing three signatures) was most of an Evaluator test's time, and each
    artifact still gets a folder of its own."""
    centers = centers if centers is not None else np.linspace(0.1, 0.9, len(class_names))
    key = (tuple(class_names), tuple(float(c) for c in centers), tuple(image_shape))
    if key not in _EXPORTS:
        _EXPORTS[key] = export.export_serving_model(
            brightness_model(image_shape, centers),
            os.path.join(_EXPORT_CACHE.name, str(len(_EXPORTS))), tuple(image_shape),
            tuple(class_names))
    model = standard_artifacts.Model()
    model.uri = str(uri)
    shutil.copytree(_EXPORTS[key], path_utils.serving_model_dir(model.uri))
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


def evaluate(tmp_path, config, class_names, brightness_by_class, centers, baseline=None,
             examples=None, drift=None):
    """Runs our Evaluator executor (TFMA on Beam, in-process) on brightness examples (or the
    given Examples artifact) and a brightness model; baseline None is the empty baseline of a
    first run. `drift`: DriftCheck's output artifact, or None for no drift input.
    Returns (blessing, evaluation) artifacts."""
    examples = examples or eval_examples(tmp_path / 'examples', brightness_by_class)
    model = exported_model(tmp_path / 'model', class_names, centers)
    if baseline is None:  # what ServedModelBaseline gives when nothing is served
        baseline = standard_artifacts.Model()
        baseline.uri = str(tmp_path / 'empty-baseline')
        baseline.set_int_custom_property('served_version', -1)
    evaluation, blessing = standard_artifacts.ModelEvaluation(), standard_artifacts.ModelBlessing()
    evaluation.uri, blessing.uri = str(tmp_path / 'evaluation'), str(tmp_path / 'blessing')
    context = base_beam_executor.BaseBeamExecutor.Context(
        beam_pipeline_args=IN_PROCESS_BEAM)
    evaluate_executor.Executor(context).Do(
        dict({specs.EXAMPLES_KEY: [examples], specs.MODEL_KEY: [model],
              specs.BASELINE_MODEL_KEY: [baseline]}, **({'drift': [drift]} if drift else {})),
        {specs.EVALUATION_KEY: [evaluation], specs.BLESSING_KEY: [blessing]},
        {specs.EVAL_CONFIG_KEY: proto_utils.proto_to_json(factory.make_eval_config(config)),
         specs.EXAMPLE_SPLITS_KEY: json.dumps(['eval']), 'max_regression': config.max_regression})
    return blessing, evaluation
