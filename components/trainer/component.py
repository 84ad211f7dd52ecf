"""ImageTrainer: the custom TFX Trainer component whose executor runs our own training loop.

Every hyper-parameter is an execution parameter, so ML Metadata records how each model was
trained. Outputs are the stock Model (SavedModel under Format-Serving, what Evaluator and Pusher
read) and ModelRun (TensorBoard logs and a metrics.json) artifacts.
"""
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from components.trainer import executor


class ImageTrainerSpec(ComponentSpec):
    PARAMETERS = {
        'model_builder': ExecutionParameter(type=str),
        'image_height': ExecutionParameter(type=int),
        'image_width': ExecutionParameter(type=int),
        'channels': ExecutionParameter(type=int),
        'train_steps': ExecutionParameter(type=int),
        'global_batch_size': ExecutionParameter(type=int),
        'learning_rate': ExecutionParameter(type=float),
        'warmup_steps': ExecutionParameter(type=int),
        'seed': ExecutionParameter(type=int),
    }
    INPUTS = {'examples': ChannelParameter(type=standard_artifacts.Examples)}
    OUTPUTS = {
        'model': ChannelParameter(type=standard_artifacts.Model),
        'model_run': ChannelParameter(type=standard_artifacts.ModelRun),
    }


class ImageTrainer(base_component.BaseComponent):
    """Trains the model named by `model_builder` (an import path) on the train split."""
    SPEC_CLASS = ImageTrainerSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, examples: Channel, model_builder: str, image_shape, train_steps: int,
                 global_batch_size: int, learning_rate: float, warmup_steps: int, seed: int):
        height, width, channels = image_shape
        super().__init__(spec=ImageTrainerSpec(
            examples=examples, model_builder=model_builder, image_height=height,
            image_width=width, channels=channels, train_steps=train_steps,
            global_batch_size=global_batch_size, learning_rate=learning_rate,
            warmup_steps=warmup_steps, seed=seed,
            model=Channel(type=standard_artifacts.Model),
            model_run=Channel(type=standard_artifacts.ModelRun)))
