"""Executor of ImageTrainer: maps artifacts to a TrainJob, runs it, annotates the Model.

The training parameters are read back from the execution properties in one call,
`TrainParams.from_properties` (training/params.py), and travel in the job's LoopOptions.
The image input shape is resolved here: configured values, or 0 = from what ingestion recorded
on the Examples (core/image_shape.py). The Model records the result as
`input_height`, `input_width`, `input_channels` and a sentence, `input_statement`. It also
records how long training ran and why it stopped (its TrainResult, result_record.py): `steps_run`,
`stop_reason`, and with epochs `epochs_run`, `best_epoch`, `held_out_accuracy`,
`held_out_examples`, and how it was spread: `num_workers` (processes, run by the launcher the
component's `launcher` property names, launch/launchers.py: here, or on this machine beside
it; from the Kubeflow compile, the pods of a TrainJob or TFJob, which `training_api` records)
and `num_replicas`.

The data is the training window recorded on the Examples (core/window.py): the
train and eval splits of every span in it, read from their folders, and the step arithmetic
counts them all. The Model records the window (`window`, and `spans`, e.g. "2,3,4") and the
export carries it as `assets.extra/training_data.json`.

Crash safety: TFX gives every execution a fresh output folder, so checkpoints cannot live
there. They go to `<pipeline_root>/_checkpoints/ImageTrainer/<key>/`, computed from the
`pipeline_root` execution property (core/stable_paths.py, never climbed to from
the Model's URI, whose layout each orchestrator chooses), where the key hashes the window's
span fingerprints (with the ingestion parameters) and every other execution property: a retry
of the same training (same data, same settings) finds and resumes them; a different training
never does.
"""
import dataclasses
import hashlib
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import path_utils

from core import image_shape, inputs, properties, stable_paths, versions, window
from components.trainer import result_record, unchanged
from launch import launchers
from training import job as job_lib, plan
from training import loop
from training.params import TrainParams


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


def resolve_input(examples: types.Artifact, spec: inputs.InputSpec,
                  params: TrainParams) -> Optional[image_shape.InputShape]:
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
    height, width = params.image_size or (0, 0)
    return image_shape.resolve(image_shape.Recorded.from_properties(recorded), height=height,
                               width=width, channels=params.channels or 0)


def warm_start_source(serving_dir: str) -> Tuple[str, int]:
    """(the served SavedModel's folder, its version) to warm-start from; ('', -1) when
    nothing is served under serving_dir yet ('' = no warm start asked)."""
    version = versions.served_version(serving_dir) if serving_dir else None
    if version is None:
        if serving_dir:
            logging.info('Warm start: nothing is served under %s yet; training from scratch.',
                         serving_dir)
        return '', -1
    return os.path.join(serving_dir, str(version)), version


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
        # Examples without an input spec (e.g. cached ones from an earlier ingestion) hold
        # encoded images, so the empty spec's image default applies.
        spec = inputs.InputSpec.from_json(
            source.get_string_custom_property(properties.INPUT_SPEC)
            if source.has_custom_property(properties.INPUT_SPEC) else '')
        # Every training parameter, as the component recorded them (training/params.py).
        params = TrainParams.from_properties(props)
        shape = resolve_input(source, spec, params)
        image = shape.shape if shape else (0, 0, 0)  # a table has no image shape
        steps, epochs = plan.resolve_train_steps(props, num_train), 0.0
        if not params.train_steps:  # the job plans the length (and warm-up) from the data
            epochs = params.train_epochs or plan.AUTO_EPOCHS
        # The served model's weights, from the serving folder the run pushes to.
        warm_from, warm_version = warm_start_source(
            (props.get('serving_dir') or '') if params.warm_start else '')
        job = job_lib.TrainJob(
            train_pattern=window.train_patterns(spans),
            eval_pattern=window.eval_patterns(spans),
            class_names=tuple(json.loads(
                source.get_string_custom_property(properties.CLASS_NAMES))),
            image_shape=image,
            input_statement=shape.statement if shape else '',
            cache_decoded=plan.fits_in_cache(num_train, image, spec),
            warm_start_from=warm_from, warm_start_version=warm_version,
            input_spec=spec, epochs=epochs, held_out_percent=params.validation_percent,
            options=loop.LoopOptions(params, train_steps=steps))
        paths = dict(serving_dir=path_utils.serving_model_dir(model.uri), log_dir=model_run.uri,
                     checkpoint_dir=checkpoint_dir(examples, exec_properties))
        record = unchanged.training_record(
            window.fingerprint(spans), props, data_parameters=window.ingest_parameters(source))
        served = props.get('serving_dir') or ''
        match = served and params.skip_unchanged and unchanged.served_match(
            record, served, versions.served_version(served))
        if match:  # same data, settings and code as the served model: hand it on
            version, folder = match
            unchanged.copy_model(folder, paths['serving_dir'])
            metrics = unchanged.handed_on(folder, version)
            logging.info('Training skipped: %s', metrics.stop_reason)
        else:  # the launcher the component recorded (launch/launchers.py): here, or pods
            choice = launchers.Choice.from_json(props.get('launcher') or '')
            metrics = launchers.get(choice.name).train(
                job, choice.spec, name='train-' + hashlib.sha256(
                    model.uri.encode('utf-8')).hexdigest()[:12], **paths)
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
            model.set_string_custom_property(properties.INPUT_STATEMENT, shape.statement)
            model.set_string_custom_property(properties.AUGMENT, params.augment)
            if metrics.flip is None:  # a handed-on model's record of before flip auto
                metrics = dataclasses.replace(metrics, flip=params.flip == 'on')  # as asked
        result_record.record(model, metrics)
