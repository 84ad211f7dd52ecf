"""Executor of ImageTrainer: maps artifacts to a TrainJob, runs it, annotates the Model.

The image input shape is resolved here: configured values, or 0 = from what ingestion recorded
on the Examples (components/common/image_shape.py). The Model records the result as
`input_height`, `input_width`, `input_channels` and a sentence, `input_statement`. It also
records how long training ran and why it stopped (the loop's metrics): `steps_run`,
`stop_reason`, and with epochs `epochs_run`, `best_epoch`, `held_out_accuracy`,
`held_out_examples`, and how it was spread: `num_workers` (processes; `num_workers` > 1 runs
them on this machine through launch/local.py; with the `tfjob` property, set by the Kubeflow
compile, they are the Worker pods of a TFJob, tfjob.py) and `num_replicas`.

The data is the training window recorded on the Examples (components/common/window.py): the
train and eval splits of every span in it, read from their folders, and the step arithmetic
counts them all. The Model records the window (`window`, and `spans`, e.g. "2,3,4") and the
export carries it as `assets.extra/training_data.json`.

Crash safety: TFX gives every execution a fresh output folder, so checkpoints cannot live
there. They go to `<pipeline_root>/_checkpoints/ImageTrainer/<key>/`, computed from the
`pipeline_root` execution property (components/common/stable_paths.py, never climbed to from
the Model's URI, whose layout each orchestrator chooses), where the key hashes the window's
span fingerprints (with the ingestion parameters) and every other execution property: a retry
of the same training (same data, same settings) finds and resumes them; a different training
never does.
"""
import hashlib
import json
import math
from typing import Any, Dict, List, Optional

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import path_utils

from components.common import image_shape, inputs, stable_paths, versions, window
from components.trainer import unchanged
from launch import local, tfjob
from training import job as job_lib
from training import loop


NODE = 'ImageTrainer'  # names its checkpoint folder under <pipeline_root>/_checkpoints/


def data_keys(source: types.Artifact) -> List[str]:
    """What stands for the training data: per span of the window its input fingerprint (with
    the ingestion parameters that shaped its records), or its folder when it has none."""
    parameters = window.ingest_parameters(source)
    return [f'span {e.span}: {e.fingerprint} {parameters}' if e.fingerprint else e.uri
            for e in window.read(source)]


def checkpoint_dir(examples: List[types.Artifact], exec_properties: Dict[str, Any]) -> str:
    """The stable checkpoint folder of this training (stable_paths.checkpoint_dir)."""
    return stable_paths.checkpoint_dir(
        stable_paths.pipeline_root(exec_properties), NODE,
        [key for source in examples for key in data_keys(source)], exec_properties)


def record_metric(model: types.Artifact, name: str, value: Any) -> None:
    """A training metric on the Model. A non-finite number (a diverged loss) is recorded as
    its text: TFX's Kubeflow entry point writes the executor output as JSON, which has no NaN
    or Infinity, so the task would fail after training instead of reporting the value."""
    if isinstance(value, str) or not math.isfinite(float(value)):
        model.set_string_custom_property(name, str(value) if isinstance(value, str)
                                         else repr(float(value)))
    else:
        model.set_float_custom_property(name, float(value))


def resolve_input(examples: types.Artifact, spec: inputs.InputSpec,
                  exec_properties: Dict[str, Any]) -> Optional[image_shape.InputShape]:
    """The image input: configured values win, 0 = from the data. None for a table."""
    if spec.kind != 'image':
        return None
    # Typed getters: under Kubeflow, properties arrive as JSON, and TFX's untyped getter
    # returns None for a JSON 0 (it tests the value's truth), e.g. no colour image at all.
    recorded = {name: examples.get_int_custom_property(name) for name in (
        image_shape.COLOR_PROPERTY, image_shape.RESIZED_PROPERTY,
        image_shape.GRAYSCALED_PROPERTY) if examples.has_custom_property(name)}
    if examples.has_custom_property(image_shape.SIZES_PROPERTY):
        recorded[image_shape.SIZES_PROPERTY] = examples.get_string_custom_property(
            image_shape.SIZES_PROPERTY)
    return image_shape.resolve(
        image_shape.Recorded.from_properties(recorded),
        height=int(exec_properties['image_height']), width=int(exec_properties['image_width']),
        channels=int(exec_properties['channels']))


def resolve_train_steps(exec_properties: Dict[str, Any], num_train_examples: int) -> int:
    """train_steps as given, or an estimate of the most updates train_epochs can take.

    With epochs the trainer counts the held-in part of the train split itself and stops
    early; this estimate (the whole split, less the held-out share) is for people.
    """
    steps = int(exec_properties['train_steps'])
    if steps <= 0:
        per_update = (int(exec_properties['global_batch_size'])
                      * int(exec_properties['accumulation_steps']))
        held_in = num_train_examples * (100 - int(exec_properties.get('validation_percent') or 0))
        held_in //= 100
        epochs = float(exec_properties['train_epochs']) or job_lib.auto_epochs(held_in, per_update)
        steps = max(1, math.ceil(epochs * max(1, held_in // per_update)))
    return max(1, steps)


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        examples = input_dict['examples']
        source = artifact_utils.get_single_instance(examples)
        model = artifact_utils.get_single_instance(output_dict['model'])
        model_run = artifact_utils.get_single_instance(output_dict['model_run'])
        # The training window: the newest span and the older ones ingestion recorded with it.
        spans = window.read(source)
        num_train = sum(entry.num_train for entry in spans)
        logging.info('Training window: %s', window.describe(spans))
        props = exec_properties
        # Absent on Examples ingested before input specs existed: encoded images.
        spec = inputs.InputSpec.from_json(source.get_string_custom_property('input_spec')
                                          if source.has_custom_property('input_spec') else '')
        shape = resolve_input(source, spec, props)
        image = shape.shape if shape else (0, 0, 0)  # a table has no image shape
        steps, epochs = resolve_train_steps(props, num_train), 0.0
        if int(props['train_steps']) <= 0:  # the job plans the length (and warm-up) from the data
            epochs = float(props['train_epochs']) or job_lib.AUTO_EPOCHS
            steps = max(steps, int(props['warmup_steps']) + 1)
        job = job_lib.TrainJob(
            train_pattern=window.train_patterns(spans),
            eval_pattern=window.eval_patterns(spans),
            class_names=tuple(json.loads(source.get_string_custom_property('class_names'))),
            image_shape=image,
            input_statement=shape.statement if shape else '',
            cache_decoded=job_lib.fits_in_cache(num_train, image, spec),
            model_builder=props['model_builder'],
            mixed_precision=props['mixed_precision'],
            seed=int(props['seed']),
            devices=tuple(json.loads(props.get('devices') or '[]')),
            warm_start_from=props.get('warm_start_from') or '',
            model_weights=props.get('model_weights') or '',
            input_spec=spec,
            # Absent on executions recorded before augmentation existed: none.
            augment=props.get('augment') or 'none', flip=bool(int(props.get('flip') or 0)),
            epochs=epochs, held_out_percent=int(props.get('validation_percent') or 0),
            options=loop.LoopOptions(
                train_steps=steps,
                global_batch_size=int(props['global_batch_size']),
                accumulation_steps=int(props['accumulation_steps']),
                learning_rate=float(props['learning_rate']),
                warmup_steps=int(props['warmup_steps']),
                optimizer=props['optimizer'],
                checkpoint_interval=int(props['checkpoint_interval']),
                eval_steps=int(props['eval_steps']),
                # Absent on executions recorded before early stopping existed: none.
                patience=int(props.get('patience') or 0),
                time_budget_seconds=60 * float(props.get('time_budget_minutes') or 0),
                freeze_epochs=int(props.get('freeze_epochs') or 0)))
        paths = dict(serving_dir=path_utils.serving_model_dir(model.uri), log_dir=model_run.uri,
                     checkpoint_dir=checkpoint_dir(examples, exec_properties))
        record = unchanged.training_record(
            window.fingerprint(spans), props, data_parameters=window.ingest_parameters(source))
        served = props.get('serving_dir') or ''
        match = served and int(props.get('skip_unchanged') or 0) and unchanged.served_match(
            record, served, versions.served_version(served))
        num_workers = int(props.get('num_workers') or 1)
        if match:  # same data, settings and code as the served model: hand it on
            version, folder = match
            unchanged.copy_model(folder, paths['serving_dir'])
            metrics = dict(unchanged.read_record(folder)['metrics'], steps_run=0.0,
                           training_skipped=1.0, stop_reason=(
                               f'no new data: serving version {version} unchanged (same input '
                               'fingerprint, training parameters and model code; not trained)'))
            metrics.pop('epochs_run', None)
            logging.info('Training skipped: %s', metrics['stop_reason'])
        elif props.get('tfjob'):  # Kubeflow with --trainer-workers: the pods of a TFJob
            metrics = tfjob.run(job, spec=tfjob.TFJobSpec.from_json(props['tfjob']),
                                name='train-' + hashlib.sha256(
                                    model.uri.encode('utf-8')).hexdigest()[:12], **paths)
        elif num_workers > 1:  # processes on this machine, each with its TF_CONFIG
            metrics = local.run(job, num_workers=num_workers, **paths)
        else:
            metrics = job_lib.train_and_export(job, **paths)
        if not match:  # a handed-on model keeps its files: the same bytes, no new version
            unchanged.write_record(paths['serving_dir'], record, metrics)
            # What it learnt from, with the model: every pushed version says (no ML Metadata).
            window.write_training_data(paths['serving_dir'], spans)
        model.set_string_custom_property(window.PROPERTY, window.to_json(spans))
        model.set_string_custom_property(window.SPANS_PROPERTY, window.spans_text(spans))
        # Recorded on the artifact so ML Metadata (and the run summary) show how it went.
        if shape:
            for name, value in zip(('input_height', 'input_width', 'input_channels'),
                                   shape.shape):
                model.set_int_custom_property(name, value)
            model.set_string_custom_property('input_statement', shape.statement)
            model.set_string_custom_property('augment', job.augment)
            model.set_int_custom_property('flip', int(job.flip))
        for name, value in metrics.items():
            record_metric(model, name, value)
