"""ImageTrainer: the custom TFX Trainer component whose executor runs our own training loop.

Every training parameter (TrainParams, training/params.py) is an execution parameter, so ML
Metadata records how each model was trained: the spec's parameters are generated from the
TrainParams fields, and the executor reads them back with `TrainParams.from_properties`. The
image input (image_height, image_width, channels) is 0 = from the data: the executor reads what
ingestion recorded on the Examples, so the pipeline stays pure wiring and every orchestrator
(local or Kubeflow) infers it the same way; the Model records the result. Outputs are the stock
Model (SavedModel under Format-Serving, what Evaluator and Pusher read) and ModelRun
(TensorBoard logs and a metrics.json) artifacts. The parameters were validated once, when the
TrainParams was made.
"""
import dataclasses

from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from components.trainer import executor
from launch import tfjob
from training import length
from training.params import TrainParams


class ImageTrainerSpec(ComponentSpec):
    PARAMETERS = {
        **{name: ExecutionParameter(type=kind)
           for name, kind in TrainParams.property_types().items()},
        # Not training parameters: where things are (unchanged.py leaves them out of its digest).
        # The serving folder: where skip_unchanged finds the served model and warm_start its
        # weights.
        'serving_dir': ExecutionParameter(type=str, optional=True),
        # Kubeflow only (pipeline/kubeflow/compiler.py, with_tfjob): a TFJobSpec as JSON; the task
        # then trains in the Worker pods of a TFJob (launch/tfjob.py). '' = in the task's own pod.
        'tfjob': ExecutionParameter(type=str, optional=True),
        # Where checkpoints outlive a failed attempt: <pipeline_root>/_checkpoints/ImageTrainer/
        # (core/stable_paths.py).
        'pipeline_root': ExecutionParameter(type=str),
    }
    INPUTS = {'examples': ChannelParameter(type=standard_artifacts.Examples)}
    OUTPUTS = {
        'model': ChannelParameter(type=standard_artifacts.Model),
        'model_run': ChannelParameter(type=standard_artifacts.ModelRun),
    }


class ImageTrainer(base_component.BaseComponent):
    """Trains params.model_builder (an import path) on the train split, as `params` say."""
    SPEC_CLASS = ImageTrainerSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, examples: Channel, params: TrainParams, pipeline_root: str,
                 serving_dir: str = ''):
        if not pipeline_root:  # the executor puts its checkpoints there
            raise ValueError('pipeline_root is required: checkpoints go under it')
        if not params.model_builder:  # the config names the source's (PipelineConfig)
            raise ValueError('model_builder is required: an import path')
        # Without a serving folder there is no served model to hand on.
        params = dataclasses.replace(params,
                                     skip_unchanged=params.skip_unchanged and bool(serving_dir))
        super().__init__(spec=ImageTrainerSpec(
            examples=examples, **params.to_properties(), serving_dir=serving_dir,
            pipeline_root=pipeline_root, model=Channel(type=standard_artifacts.Model),
            model_run=Channel(type=standard_artifacts.ModelRun)))

    def with_tfjob(self, spec: tfjob.TFJobSpec) -> 'ImageTrainer':
        """Trains in a TFJob of spec.workers pods instead (Kubeflow compile only)."""
        params = TrainParams.from_properties(self.exec_properties)
        if spec.workers < 2 or not length.splits(params.global_batch_size, spec.workers):
            raise ValueError(f'trainer workers must be >= 2 and split global_batch_size '
                             f'({params.global_batch_size}) evenly, got {spec.workers}')
        if params.workers > 1:
            raise ValueError('give --workers (processes in one pod) or --trainer-workers (a '
                             'TFJob of pods), not both')
        self.exec_properties['tfjob'] = spec.to_json()
        return self
