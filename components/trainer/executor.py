"""Executor of ImageTrainer: maps artifacts to a TrainJob, runs it, annotates the Model."""
import json
import os
from typing import Any, Dict, List

from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import path_utils

from components.trainer import job as job_lib
from components.trainer import loop


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        examples = input_dict['examples']
        class_names = json.loads(
            artifact_utils.get_single_instance(examples).get_string_custom_property('class_names'))
        model = artifact_utils.get_single_instance(output_dict['model'])
        model_run = artifact_utils.get_single_instance(output_dict['model_run'])
        job = job_lib.TrainJob(
            train_pattern=os.path.join(artifact_utils.get_split_uri(examples, 'train'), '*'),
            eval_pattern=os.path.join(artifact_utils.get_split_uri(examples, 'eval'), '*'),
            class_names=tuple(class_names),
            image_shape=(int(exec_properties['image_height']),
                         int(exec_properties['image_width']), int(exec_properties['channels'])),
            model_builder=exec_properties['model_builder'],
            options=loop.LoopOptions(
                train_steps=int(exec_properties['train_steps']),
                global_batch_size=int(exec_properties['global_batch_size']),
                learning_rate=float(exec_properties['learning_rate']),
                warmup_steps=int(exec_properties['warmup_steps'])),
            seed=int(exec_properties['seed']))
        metrics = job_lib.train_and_export(
            job, serving_dir=path_utils.serving_model_dir(model.uri), log_dir=model_run.uri)
        # Recorded on the artifact so ML Metadata (and the run summary) show how it did.
        for name, value in metrics.items():
            model.set_float_custom_property(name, float(value))
