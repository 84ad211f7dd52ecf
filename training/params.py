"""TrainParams: every training hyper-parameter, spelled once and validated once.

Each field is one parameter, declared with core/settings.py's `setting`: its help, flag and
parser reach runner.py's --help and docs/cli.md, its name is the key of the config file's
[train] table, and `property` names the ImageTrainer execution property recording it in ML
Metadata when that is not the field's name (the stored names are part of the skip-unchanged
digest, so renaming one would make every served model look changed and retrain it).
components/trainer/component.py builds its spec from `property_types()`, the executor reads the
parameters back with `from_properties`, and the trainer's TrainJob and the loop's LoopOptions
carry this object. So a new parameter is one field here and the code that uses it.
No TFX, TensorFlow or pipeline imports: the config and the command line import this at once.
"""
import dataclasses
from typing import ClassVar, Optional, Tuple

from core.settings import Settings, setting
from training.choices import AUGMENTS, FLIP_CHOICES, OPTIMIZERS, POLICIES, XLA_CHOICES
from training import length
from training.length import (AUTO_BATCH, AUTO_EXAMPLES, AUTO_LARGE_BATCH,
                             AUTO_LARGE_BATCH_UPDATES, AUTO_MAX_EPOCHS, AUTO_MIN_EPOCHS,
                             AUTO_MIN_TIMED_EPOCHS, AUTO_MIN_UPDATES, AUTO_TRAIN_MINUTES,
                             MAX_HELD_OUT)

# --model short names: standard architectures (keras.applications, see models/applications.py).
NAMED_MODELS = {name: 'models.applications.' + name
                for name in ('resnet50', 'efficientnet_b0', 'mobilenet_v3_small')}


@dataclasses.dataclass(frozen=True)
class TrainParams(Settings):
    """How a model is trained. Defaults are what `runner.py --local` trains with."""
    GROUP: ClassVar[str] = 'training'   # runner.py's --help group of the flags
    model_builder: Optional[str] = setting(
        None, f'{"|".join(NAMED_MODELS)} (keras.applications), or a builder (input_shape, '
        'num_classes) -> keras.Model, as an import path', '--model',
        metavar='NAME|IMPORT.PATH', default_text='by --source')
    model_weights: Optional[str] = setting(
        None, 'local weights file the model builder loads, e.g. a backbone .weights.h5 for '
        '--model resnet50', '--weights', metavar='FILE', default_text='none, random init',
        path=True)
    # The model's input; None = from the data: the most common (height, width) of the valid
    # train images, and 3 channels when any valid image is colour, else 1.
    image_size: Optional[Tuple[int, int]] = setting(
        None, 'model input size', '--image-size', metavar='HxW', parse='size',
        default_text='the most common size among the train images',
        properties=('image_height', 'image_width'))
    channels: Optional[int] = setting(
        None, 'model input channels', '--channels', choices=(1, 3),
        default_text='3 when any image is colour, else 1')
    # The length: train_steps > 0 is exactly that many optimizer updates (no early stopping,
    # and train_epochs does not apply); 0 = up to train_epochs passes over the train split,
    # stopping early when the held-out slice's accuracy stops improving; train_epochs 0 = from
    # the data (training/length.py).
    train_epochs: float = setting(
        0.0, 'most passes over the train split; early stopping still applies', '--epochs',
        metavar='N',
        default_text=f'from the data: ~{AUTO_EXAMPLES:,} examples seen as '
        f'{AUTO_MIN_EPOCHS}-{AUTO_MAX_EPOCHS} passes, >= {AUTO_MIN_UPDATES} updates, cut from '
        f'epoch 2 on to fit {AUTO_TRAIN_MINUTES:g} min (>= {AUTO_MIN_TIMED_EPOCHS})')
    train_steps: int = setting(
        0, 'exactly N optimizer updates instead: no epochs, no early stopping', '--steps',
        metavar='N',
        default_text='0, by epochs')
    patience: int = setting(
        3, 'stop after N epochs without held-out improvement; 0 = run every epoch', '--patience',
        metavar='N')
    validation_percent: int = setting(
        10, f'share of the train split held out for early stopping, cut to about '
        f'{MAX_HELD_OUT:,} examples when it holds more; 0 = none', '--validation-percent',
        metavar='P')
    time_budget_minutes: float = setting(
        0.0, 'stop training once this much time is spent, keeping the best epoch: 30, 30m, '
        '1.5h', '--time-budget', metavar='MIN', parse='minutes', default_text='none')
    freeze_epochs: int = setting(
        0, "first N epochs train only the head of a model with a 'backbone' layer (--model "
        'resnet50 ...; with --weights), then all layers', '--freeze-epochs', metavar='N')
    global_batch_size: int = setting(
        0, 'global batch over all replicas', '--batch-size', metavar='N',
        default_text=f'from the data: {AUTO_BATCH}, or {AUTO_LARGE_BATCH} when an epoch has '
        f'>= {AUTO_LARGE_BATCH_UPDATES} updates of it')
    workers: int = setting(
        1, 'training processes on this machine, one MultiWorkerMirroredStrategy worker each; '
        '1 = in-process', '--workers', metavar='N', property='num_workers')
    accumulation_steps: int = setting(1, 'micro-batches per optimizer update',
                                     '--accumulation-steps', metavar='N')
    learning_rate: float = setting(3e-3, 'peak learning rate', '--learning-rate',
                                  metavar='LR')
    weight_decay: float = setting(
        0.004, 'adamw: decoupled weight decay, each update shrinks the weights by this x the '
        'learning rate', '--weight-decay', metavar='WD')
    mixed_precision: str = setting(
        'auto', 'auto = mixed_float16 on GPU; on a CPU with bfloat16 instructions, whichever of '
        'float32 and mixed_bfloat16 trains faster in a timed trial of the train step; else '
        'float32', '--mixed-precision', choices=POLICIES)
    xla: str = setting(
        'auto', 'XLA-compile the forward and backward pass: auto = when it trains faster in '
        'the same timed trial', '--xla', choices=XLA_CHOICES)
    warm_start: bool = setting(False, "start from the served model's weights (when the shapes "
                              'match)', '--warm-start')
    augment: str = setting(
        'light', 'random changes to train images: light = small shifts; standard = shifts, '
        'crops and contrast', '--augment', choices=AUGMENTS)
    label_smoothing: float = setting(
        0.1, 'train towards (1 - e) on the label and e / classes on every class; 0 = none',
        '--label-smoothing', metavar='E')
    flip: str = setting(
        'off', 'random horizontal flips of train images too: auto = once mirrored held-out '
        'images keep half the accuracy above chance (so mirroring keeps the labels: clothes, '
        'not digits or text) and the model scores train images 2 points above held-out ones; '
        '--flip alone = on', '--flip', choices=FLIP_CHOICES,
        nargs='?', const='on')
    # Config file only (no flag):
    optimizer: str = setting('adam', ' | '.join(OPTIMIZERS))
    warmup_steps: int = setting(20, 'linear learning-rate warm-up updates (shortened to fit a '
                               'shorter run)')
    checkpoint_interval: int = setting(100, 'updates between checkpoints')
    eval_steps: int = setting(0, 'eval batches after training; 0 = the whole eval split')
    seed: int = setting(42, 'random seed of initial weights, shuffling and augmentation')
    devices: Tuple[str, ...] = setting((), 'MirroredStrategy devices, e.g. ["/gpu:0"]',
                                      default_text='every visible GPU, or the CPU')
    skip_unchanged: bool = setting(
        True, "hand the served model on, untrained, when this run's input fingerprint, "
        'training parameters and model code equal the ones it was trained from')

    def __post_init__(self):
        if self.model_builder in NAMED_MODELS:  # recorded (and trained) as the full import path
            object.__setattr__(self, 'model_builder', NAMED_MODELS[self.model_builder])
        if self.flip in (True, False, '1', '0'):  # before auto, flip was a bool: a config's
            # true or false, or an older execution's property 1 or 0, still reads
            object.__setattr__(self, 'flip', 'on' if self.flip in (True, '1') else 'off')
        if self.train_steps > 0:  # a fixed length: epochs do not apply (and are not recorded)
            object.__setattr__(self, 'train_epochs', 0.0)
        super().__post_init__()

    def _checks(self):
        size, weights = self.image_size, self.model_weights
        yield (size is None or (len(size) == 2 and min(size) >= 1),
               f'image_size must be (height, width) >= 1, got {size}')
        yield self.channels in (None, 1, 3), f'channels must be 1 or 3, got {self.channels}'
        yield (self.train_steps >= 0,
               f'train_steps must be >= 0 (0 = by epochs), got {self.train_steps}')
        yield self.train_epochs >= 0, f'train_epochs must be >= 0, got {self.train_epochs}'
        yield (self.global_batch_size >= 0,
               f'global_batch_size must be >= 0 (0 = from the data), got '
               f'{self.global_batch_size}')
        yield self.learning_rate > 0, f'learning_rate must be > 0, got {self.learning_rate}'
        yield (0 <= self.label_smoothing < 1,
               f'label_smoothing must be in [0, 1), got {self.label_smoothing}')
        yield self.weight_decay >= 0, f'weight_decay must be >= 0, got {self.weight_decay}'
        yield (self.warmup_steps >= 0 and (not self.train_steps
                                           or self.warmup_steps < self.train_steps),
               f'warmup_steps must be in [0, train_steps), got {self.warmup_steps}')
        yield (self.model_builder is None or '.' in self.model_builder, 'model_builder must be '
               f'one of {", ".join(NAMED_MODELS)} or an import path like '
               f'"package.module.function", got {self.model_builder!r}')
        # Keras reads a .weights.h5 from local disk only (no gs://): in a cluster, a file of the
        # container image (pipeline/kubeflow/compiler.py maps a file of this checkout into it).
        yield (weights is None or (bool(weights) and '://' not in weights),
               f'model_weights must be a local file path, got {weights!r}')
        yield (self.accumulation_steps >= 1,
               f'accumulation_steps must be >= 1, got {self.accumulation_steps}')
        yield (self.mixed_precision in POLICIES,
               f'mixed_precision must be one of {POLICIES}, got {self.mixed_precision!r}')
        yield self.xla in XLA_CHOICES, f'xla must be one of {XLA_CHOICES}, got {self.xla!r}'
        yield (self.optimizer in OPTIMIZERS,
               f'optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}')
        yield (self.checkpoint_interval >= 1,
               f'checkpoint_interval must be >= 1, got {self.checkpoint_interval}')
        yield self.eval_steps >= 0, f'eval_steps must be >= 0, got {self.eval_steps}'
        yield self.patience >= 0, f'patience must be >= 0, got {self.patience}'
        yield (0 <= self.validation_percent <= 50,
               f'validation_percent must be in 0..50, got {self.validation_percent}')
        yield (self.freeze_epochs == 0 or (self.freeze_epochs > 0 and self.train_steps == 0 and (
            self.train_epochs == 0 or self.freeze_epochs < self.train_epochs)),
               'freeze_epochs must be fewer than train_epochs, and training must be by epochs '
               f'(not train_steps), got {self.freeze_epochs}')
        # Every worker process takes an equal share of each global batch.
        yield (length.splits(self.global_batch_size, self.workers),
               f'workers must be >= 1 and split global_batch_size ({self.global_batch_size}) '
               f'evenly, got {self.workers}')
        yield (self.time_budget_minutes >= 0,
               f'time_budget_minutes must be >= 0 (0 = none), got {self.time_budget_minutes}')
        yield self.augment in AUGMENTS, f'augment must be one of {AUGMENTS}, got {self.augment!r}'
        yield self.flip in FLIP_CHOICES, f'flip must be one of {FLIP_CHOICES}, got {self.flip!r}'
        yield (all(isinstance(d, str) and d for d in self.devices),
               f'devices must be device names, got {self.devices!r}')

    @property
    def examples_per_update(self) -> int:
        return self.global_batch_size * self.accumulation_steps

    @classmethod
    def bare(cls, **changes) -> 'TrainParams':
        """No warm-up, augmentation, held-out slice or early stopping, float32 without XLA,
        seed 0: the plain training the library's tests and benchmarks start from."""
        return cls(**dict(dict(global_batch_size=AUTO_BATCH, warmup_steps=0, augment='none',
                               flip='off', label_smoothing=0.0, validation_percent=0,
                               patience=0, mixed_precision='float32', xla='off', seed=0),
                          **changes))
