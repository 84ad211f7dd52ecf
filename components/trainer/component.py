"""ImageTrainer: the custom TFX Trainer component whose executor runs our own training loop.

Every hyper-parameter is an execution parameter, so ML Metadata records how each model was
trained. The image input (image_height, image_width, channels) is 0 = from the data: the
executor reads what ingestion recorded on the Examples, so the pipeline stays pure wiring and
every orchestrator (local or Kubeflow) infers it the same way; the Model records the result.
Outputs are the stock Model (SavedModel under Format-Serving, what Evaluator and Pusher read)
and ModelRun (TensorBoard logs and a metrics.json) artifacts. Values are validated here,
when the pipeline is built, by the same LoopOptions the loop uses.
"""
import json
from typing import Sequence, Tuple

from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from components.trainer import executor
from launch import tfjob
from training import choices, loop, precision


class ImageTrainerSpec(ComponentSpec):
    PARAMETERS = {
        'model_builder': ExecutionParameter(type=str),
        'image_height': ExecutionParameter(type=int),   # 0 = the most common in the data
        'image_width': ExecutionParameter(type=int),    # 0 with image_height
        'channels': ExecutionParameter(type=int),       # 1 | 3; 0 = 3 if any image is colour
        'train_steps': ExecutionParameter(type=int),    # > 0: exactly this many updates
        'train_epochs': ExecutionParameter(type=float),  # else up to this many epochs
        'patience': ExecutionParameter(type=int),       # epochs without improvement; 0 = off
        'validation_percent': ExecutionParameter(type=int),  # train split held out, 0-50
        'time_budget_minutes': ExecutionParameter(type=float),  # 0 = none
        'freeze_epochs': ExecutionParameter(type=int, optional=True),  # head-only epochs first
        'eval_steps': ExecutionParameter(type=int),     # eval batches; 0 = whole eval split
        'global_batch_size': ExecutionParameter(type=int),
        'accumulation_steps': ExecutionParameter(type=int),
        'mixed_precision': ExecutionParameter(type=str),
        'optimizer': ExecutionParameter(type=str),
        'learning_rate': ExecutionParameter(type=float),
        'warmup_steps': ExecutionParameter(type=int),
        'checkpoint_interval': ExecutionParameter(type=int),
        'seed': ExecutionParameter(type=int),
        'devices': ExecutionParameter(type=str),        # JSON list; [] = every visible GPU/CPU
        'warm_start_from': ExecutionParameter(type=str),  # serving folder, or '' for no warm start
        'augment': ExecutionParameter(type=str),        # none | light | standard (images, train)
        'flip': ExecutionParameter(type=int),           # 1 = random horizontal flips too
        'model_weights': ExecutionParameter(type=str),  # file the builder loads; '' = none
        # Training processes on this machine (launch/local.py); 1 = in the executor's process.
        'num_workers': ExecutionParameter(type=int, optional=True),
        # The serving folder, and 1 = hand its model on untrained when it was trained from the
        # same input fingerprint, parameters and model code (unchanged.py).
        'serving_dir': ExecutionParameter(type=str, optional=True),
        'skip_unchanged': ExecutionParameter(type=int, optional=True),
        # Kubeflow only (pipeline/kubeflow.py, with_tfjob): a TFJobSpec as JSON; the task then
        # trains in the Worker pods of a TFJob (tfjob.py). '' = in the task's own pod.
        'tfjob': ExecutionParameter(type=str, optional=True),
        # Where checkpoints outlive a failed attempt: <pipeline_root>/_checkpoints/ImageTrainer/
        # (components/common/stable_paths.py). Not a training parameter (unchanged.py).
        'pipeline_root': ExecutionParameter(type=str),
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

    def __init__(self, examples: Channel, model_builder: str, global_batch_size: int,
                 learning_rate: float, image_shape: Tuple[int, int, int] = (0, 0, 0),
                 train_steps: int = 0,
                 train_epochs: float = 0.0, eval_steps: int = 0, accumulation_steps: int = 1,
                 mixed_precision: str = 'auto', optimizer: str = 'adam', warmup_steps: int = 0,
                 checkpoint_interval: int = 100, seed: int = 0, devices: Sequence[str] = (),
                 warm_start_from: str = '', augment: str = 'none', flip: bool = False,
                 model_weights: str = '', patience: int = 0, validation_percent: int = 0,
                 time_budget_minutes: float = 0.0, freeze_epochs: int = 0, num_workers: int = 1,
                 serving_dir: str = '', skip_unchanged: bool = False, pipeline_root: str = ''):
        if not pipeline_root:  # the executor puts its checkpoints there
            raise ValueError('pipeline_root is required: checkpoints go under it')
        if train_steps > 0 and train_epochs > 0:  # both 0: epochs from the data
            raise ValueError('Give at most one of train_steps and train_epochs (> 0), got '
                             f'{train_steps} and {train_epochs}')
        precision.resolve_policy(mixed_precision, num_gpus=0, bf16_cpu=False)  # validates name
        if augment not in choices.AUGMENTS:
            raise ValueError(f'augment must be one of {choices.AUGMENTS}, got {augment!r}')
        loop.LoopOptions(  # validates the rest; warm-up is checked against steps when known
            train_steps=max(train_steps, warmup_steps + 1), global_batch_size=global_batch_size,
            learning_rate=learning_rate, accumulation_steps=accumulation_steps,
            warmup_steps=warmup_steps, optimizer=optimizer,
            checkpoint_interval=checkpoint_interval, eval_steps=eval_steps, patience=patience,
            time_budget_seconds=60 * time_budget_minutes)
        if freeze_epochs and (train_steps or 0 < train_epochs <= freeze_epochs):
            raise ValueError(f'freeze_epochs must be fewer than train_epochs (and training by '
                             f'epochs), got {freeze_epochs} of {train_epochs}')
        if num_workers < 1 or global_batch_size % num_workers:
            raise ValueError(f'num_workers must be >= 1 and split global_batch_size '
                             f'({global_batch_size}) evenly, got {num_workers}')
        if not 0 <= validation_percent <= 50:
            raise ValueError(f'validation_percent must be in 0..50, got {validation_percent}')
        height, width, channels = image_shape
        if (height > 0) != (width > 0) or min(image_shape) < 0 or channels not in (0, 1, 3):
            raise ValueError('image_shape is (height, width, channels), 0 = from the data, '
                             f'height and width both set or both 0, channels 1 or 3; got '
                             f'{tuple(image_shape)}')
        super().__init__(spec=ImageTrainerSpec(
            examples=examples, model_builder=model_builder, image_height=height,
            image_width=width, channels=channels, train_steps=train_steps,
            train_epochs=float(train_epochs), eval_steps=eval_steps,
            global_batch_size=global_batch_size, accumulation_steps=accumulation_steps,
            mixed_precision=mixed_precision, optimizer=optimizer, learning_rate=learning_rate,
            warmup_steps=warmup_steps, checkpoint_interval=checkpoint_interval, seed=seed,
            devices=json.dumps(list(devices)), warm_start_from=warm_start_from,
            augment=augment, flip=int(bool(flip)),
            model_weights=model_weights, patience=patience,
            validation_percent=validation_percent,
            time_budget_minutes=float(time_budget_minutes), freeze_epochs=freeze_epochs,
            num_workers=num_workers, serving_dir=serving_dir,
            skip_unchanged=int(bool(skip_unchanged and serving_dir)),
            pipeline_root=pipeline_root, model=Channel(type=standard_artifacts.Model),
            model_run=Channel(type=standard_artifacts.ModelRun)))

    def with_tfjob(self, spec: tfjob.TFJobSpec) -> 'ImageTrainer':
        """Trains in a TFJob of spec.workers pods instead (Kubeflow compile only)."""
        batch = self.exec_properties['global_batch_size']
        if spec.workers < 2 or batch % spec.workers:
            raise ValueError(f'trainer workers must be >= 2 and split global_batch_size '
                             f'({batch}) evenly, got {spec.workers}')
        if (self.exec_properties.get('num_workers') or 1) > 1:
            raise ValueError('give --workers (processes in one pod) or --trainer-workers (a '
                             'TFJob of pods), not both')
        self.exec_properties['tfjob'] = spec.to_json()
        return self
