"""Executor of ImageTrainer: maps artifacts to a TrainJob, runs it, annotates the Model.

Crash safety: TFX gives every execution a fresh output folder, so checkpoints cannot live
there. They go to `<pipeline_root>/<trainer node>/checkpoints/<key>/`, where the key hashes the
input Examples and every execution property: a retry of the same training (same data, same
settings) finds and resumes them; a different training never does.
"""
import hashlib
import json
import math
import os
from typing import Any, Dict, List

from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import path_utils

from components.common import inputs
from components.trainer import job as job_lib
from components.trainer import loop


def checkpoint_dir(model_uri: str, examples: List[types.Artifact],
                   exec_properties: Dict[str, Any]) -> str:
    """The stable checkpoint folder of this training, next to the node's output folders."""
    identity = json.dumps({'examples': sorted(a.uri for a in examples),
                           'properties': {k: exec_properties[k] for k in sorted(exec_properties)}},
                          sort_keys=True, default=str)
    key = hashlib.sha256(identity.encode('utf-8')).hexdigest()[:16]
    node_dir = os.path.dirname(os.path.dirname(model_uri.rstrip('/')))
    return os.path.join(node_dir, 'checkpoints', key)


def resolve_train_steps(exec_properties: Dict[str, Any], num_train_examples: int) -> int:
    """train_steps as given, or enough updates for train_epochs passes over the train split."""
    steps = int(exec_properties['train_steps'])
    epochs = float(exec_properties['train_epochs'])
    if epochs > 0:
        per_update = (int(exec_properties['global_batch_size'])
                      * int(exec_properties['accumulation_steps']))
        steps = max(1, math.ceil(epochs * num_train_examples / per_update))
    return steps


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        examples = input_dict['examples']
        source = artifact_utils.get_single_instance(examples)
        model = artifact_utils.get_single_instance(output_dict['model'])
        model_run = artifact_utils.get_single_instance(output_dict['model_run'])
        num_train = (source.get_int_custom_property('num_written_train')
                     if source.has_custom_property('num_written_train') else 0)
        props = exec_properties
        image_shape = (int(props['image_height']), int(props['image_width']),
                       int(props['channels']))
        job = job_lib.TrainJob(
            train_pattern=os.path.join(artifact_utils.get_split_uri(examples, 'train'), '*'),
            eval_pattern=os.path.join(artifact_utils.get_split_uri(examples, 'eval'), '*'),
            class_names=tuple(json.loads(source.get_string_custom_property('class_names'))),
            image_shape=image_shape,
            cache_decoded=job_lib.fits_in_cache(num_train, image_shape),
            model_builder=props['model_builder'],
            mixed_precision=props['mixed_precision'],
            seed=int(props['seed']),
            devices=tuple(json.loads(props.get('devices') or '[]')),
            warm_start_from=props.get('warm_start_from') or '',
            # Absent on Examples ingested before input specs existed: encoded images.
            input_spec=inputs.InputSpec.from_json(
                source.get_string_custom_property('input_spec')
                if source.has_custom_property('input_spec') else ''),
            options=loop.LoopOptions(
                train_steps=resolve_train_steps(props, num_train),
                global_batch_size=int(props['global_batch_size']),
                accumulation_steps=int(props['accumulation_steps']),
                learning_rate=float(props['learning_rate']),
                warmup_steps=int(props['warmup_steps']),
                optimizer=props['optimizer'],
                checkpoint_interval=int(props['checkpoint_interval']),
                eval_steps=int(props['eval_steps'])))
        metrics = job_lib.train_and_export(
            job, serving_dir=path_utils.serving_model_dir(model.uri), log_dir=model_run.uri,
            checkpoint_dir=checkpoint_dir(model.uri, examples, exec_properties))
        # Recorded on the artifact so ML Metadata (and the run summary) show how it went.
        for name, value in metrics.items():
            if isinstance(value, str):
                model.set_string_custom_property(name, value)
            else:
                model.set_float_custom_property(name, float(value))
