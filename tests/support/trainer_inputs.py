"""Small ImageTrainer inputs for the trainer's executor tests: a digits Examples artifact, the
execution properties ImageTrainer records, one Do call, and a window of spans."""
import json
import os

import tensorflow as tf
from tfx.types import artifact_utils, standard_artifacts

from core import features
from components.trainer import executor
from training.params import TrainParams
from helpers import DIGITS

CLASSES = ('0', '1', '2')


def examples(tmp_path):
    """A digits Examples artifact at tmp_path/examples: 20 train and 5 eval images per class."""
    artifact = standard_artifacts.Examples()
    artifact.uri = str(tmp_path / 'examples')
    artifact.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    counts = {}
    for split, (offset, per_class) in {'train': (0, 20), 'eval': (20, 5)}.items():
        os.makedirs(os.path.join(artifact.uri, f'Split-{split}'))
        path = os.path.join(artifact.uri, f'Split-{split}', 'data_tfrecord-00000-of-00001.gz')
        with tf.io.TFRecordWriter(path, options='GZIP') as writer:
            for label, name in enumerate(CLASSES):
                for file_name in sorted(os.listdir(os.path.join(DIGITS, name)))[
                        offset:offset + per_class]:
                    with open(os.path.join(DIGITS, name, file_name), 'rb') as handle:
                        writer.write(features.make_example(
                            handle.read(), label, name, 8, 8, file_name).SerializeToString())
        counts[split] = per_class * len(CLASSES)
    artifact.set_string_custom_property('class_names', json.dumps(CLASSES))
    artifact.set_int_custom_property('num_written_train', counts['train'])
    return artifact


def properties(**overrides):
    """The execution properties ImageTrainer records (TrainParams), and overrides by name."""
    props = TrainParams.bare(
        model_builder='models.resnet.build_model', image_size=(8, 8), channels=1,
        train_epochs=2.0, global_batch_size=16, accumulation_steps=2, learning_rate=3e-3,
        checkpoint_interval=1, seed=1, skip_unchanged=False).to_properties()
    props['pipeline_root'] = '/root'
    props.update(overrides)
    return props


def do(tmp_path, examples, run, **overrides):
    """ImageTrainer's Do as run `run` of a pipeline rooted at tmp_path/root: 3 steps, the skip of
    unchanged input on, serving at tmp_path/serving; returns the Model and ModelRun."""
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / run)
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / run)
    props = properties(**dict(dict(
        train_steps=3, train_epochs=0.0, accumulation_steps=1,
        serving_dir=str(tmp_path / 'serving'), skip_unchanged=1,
        pipeline_root=str(tmp_path / 'root')), **overrides))
    executor.Executor().Do({'examples': [examples]},
                           {'model': [model], 'model_run': [model_run]}, props)
    return model, model_run


def window_examples(tmp_path, spans):
    """An Examples artifact of the last span whose window holds `spans` ({span: folder}, each
    folder holding a span made by examples(), made when missing)."""
    from core import window
    entries = []
    for span, folder in spans.items():
        if not (tmp_path / folder).exists():
            examples(tmp_path / folder)
        entries.append(window.SpanEntry(span=span, uri=str(tmp_path / folder / 'examples'),
                                        fingerprint=f'fp-{span}', num_train=60, num_eval=15))
    artifact = standard_artifacts.Examples()
    artifact.uri = entries[-1].uri
    artifact.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    artifact.set_string_custom_property('class_names', json.dumps(CLASSES))
    artifact.set_int_custom_property('num_written_train', 60)
    artifact.set_string_custom_property('window', window.to_json(entries))
    artifact.set_string_custom_property('ingest_parameters', '{"train_percent": 80}')
    return artifact
