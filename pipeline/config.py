"""The pipeline's typed configuration: small frozen dataclasses, validated at construction.

`default_config()` is what `python runner.py --local` runs; `smoke_config()` is a tiny variant for
tests. Only runner.py turns command-line flags into a config, via `dataclasses.replace`.
"""
import dataclasses
import os
from typing import Optional, Tuple

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(REPO_ROOT, 'data', 'digits')
# A curated schema for the embedded digits (see README, "Schema"); other data infers one.
DIGITS_SCHEMA = os.path.join(REPO_ROOT, 'data', 'schema', 'digits.pbtxt')
# Naming our package for Beam's workers is what a remote runner needs, and it stops TFX from
# building a throw-away sdist of itself (about 3 s) before every Beam stage when run locally.
SETUP_FILE_ARG = '--setup_file=' + os.path.join(REPO_ROOT, 'setup.py')


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def is_uri(path: str) -> bool:
    """gs://, s3://, hdfs://...: a location for the cluster, never made absolute or checked here."""
    return '://' in path


def _absolute(path: str) -> str:
    return path if is_uri(path) else os.path.abspath(path)


@dataclasses.dataclass(frozen=True)
class IngestConfig:
    data_dir: str = DEFAULT_DATA
    train_percent: int = 80
    num_shards: int = 2
    max_rejected_fraction: float = 0.01

    def __post_init__(self):
        _check(0 < self.train_percent < 100, f'train_percent must be in 1..99, got {self.train_percent}')
        _check(self.num_shards >= 1, f'num_shards must be >= 1, got {self.num_shards}')
        _check(0.0 <= self.max_rejected_fraction < 1.0,
               f'max_rejected_fraction must be in [0, 1), got {self.max_rejected_fraction}')


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    model_builder: str = 'models.resnet.build_model'
    image_shape: Tuple[int, int, int] = (8, 8, 1)
    train_steps: int = 400
    global_batch_size: int = 64
    learning_rate: float = 3e-3
    warmup_steps: int = 20
    seed: int = 42

    def __post_init__(self):
        _check(len(self.image_shape) == 3 and all(d >= 1 for d in self.image_shape),
               f'image_shape must be (height, width, channels) >= 1, got {self.image_shape}')
        _check(self.train_steps >= 1, f'train_steps must be >= 1, got {self.train_steps}')
        _check(self.global_batch_size >= 1,
               f'global_batch_size must be >= 1, got {self.global_batch_size}')
        _check(self.learning_rate > 0, f'learning_rate must be > 0, got {self.learning_rate}')
        _check(0 <= self.warmup_steps < self.train_steps,
               f'warmup_steps must be in [0, train_steps), got {self.warmup_steps}')
        _check('.' in self.model_builder, 'model_builder must be an import path like '
               f'"package.module.function", got {self.model_builder!r}')


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    min_accuracy: float = 0.90      # absolute bar a model must clear to be blessed
    max_regression: float = 0.0     # how much accuracy may drop against the last blessed model

    def __post_init__(self):
        _check(0.0 <= self.min_accuracy <= 1.0, f'min_accuracy must be in [0, 1], got {self.min_accuracy}')
        _check(0.0 <= self.max_regression <= 1.0,
               f'max_regression must be in [0, 1], got {self.max_regression}')


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    name: str = 'image-pipeline'
    output_dir: str = os.path.join('runs', 'default')
    # None infers the schema from the data (SchemaGen); a path imports a curated one.
    schema_path: Optional[str] = DIGITS_SCHEMA
    ingest: IngestConfig = IngestConfig()
    train: TrainConfig = TrainConfig()
    eval: EvalConfig = EvalConfig()
    # DirectRunner in multi-processing mode, one worker per core (0 = use all cores).
    beam_args: Tuple[str, ...] = ('--direct_running_mode=multi_processing',
                                  '--direct_num_workers=0', SETUP_FILE_ARG)
    enable_cache: bool = True
    # False when paths name files inside the container image (pipeline/kubeflow.py): they do not
    # exist on the machine that compiles the pipeline, so they are not checked there.
    check_paths: bool = True

    def __post_init__(self):
        _check(bool(self.name) and self.name.replace('-', '').replace('_', '').isalnum(),
               f'name must be letters, digits, - or _, got {self.name!r}')
        _check(bool(self.output_dir), 'output_dir must not be empty')
        if self.schema_path is not None and self.check_paths and not is_uri(self.schema_path):
            _check(os.path.isfile(self.schema_path), f'schema file not found: {self.schema_path}')

    @property
    def pipeline_root(self) -> str:
        return os.path.join(_absolute(self.output_dir), 'pipeline_root')

    @property
    def metadata_path(self) -> Optional[str]:
        # None for a run root on cluster storage: there (KFP) the cluster keeps ML Metadata.
        if is_uri(self.output_dir):
            return None
        return os.path.join(os.path.abspath(self.output_dir), 'metadata.sqlite')

    @property
    def serving_dir(self) -> str:
        return os.path.join(_absolute(self.output_dir), 'serving')


@dataclasses.dataclass(frozen=True)
class KubeflowConfig:
    """How the pipeline is compiled for, and scheduled on, Kubeflow Pipelines (pipeline/kubeflow.py).

    The pipeline itself is the same PipelineConfig; its output_dir is then the run root on storage
    the cluster reads (gs://...): TFX artifacts go under <output_dir>/pipeline_root, pushed models
    under <output_dir>/serving, as locally.
    """
    image: str
    output_file: str = 'pipeline.json'
    # Where the Dockerfile puts this checkout in the image: paths inside the checkout (the
    # embedded data and schema, setup.py in the Beam args) are rewritten to this folder.
    image_workdir: str = '/pipeline'
    trainer_cpu: float = 4.0           # cores requested and limited for the trainer's task
    trainer_memory_gb: float = 16.0
    trainer_gpus: int = 0
    gpu_type: str = 'nvidia.com/gpu'   # Kubernetes resource name (Vertex AI: e.g. NVIDIA_TESLA_T4)
    # Open-source KFP does not run TFX's pre-cache-check hook that fingerprints the input files,
    # so a cached ingestion task would never see new images there: it is compiled uncached.
    cache_ingestion: bool = False
    # Scheduling (only with an endpoint): KFP API URL, cron expression, experiment name.
    endpoint: Optional[str] = None
    schedule: Optional[str] = None
    experiment: str = 'Default'

    def __post_init__(self):
        _check(bool(self.image) and ' ' not in self.image, f'image must be set, got {self.image!r}')
        _check(self.image_workdir.startswith('/'),
               f'image_workdir must be absolute, got {self.image_workdir!r}')
        _check(self.trainer_cpu > 0, f'trainer_cpu must be > 0, got {self.trainer_cpu}')
        _check(self.trainer_memory_gb > 0,
               f'trainer_memory_gb must be > 0, got {self.trainer_memory_gb}')
        _check(self.trainer_gpus >= 0, f'trainer_gpus must be >= 0, got {self.trainer_gpus}')
        _check((self.endpoint is None) == (self.schedule is None),
               '--endpoint and --schedule go together')
        if self.schedule is not None:
            # KFP's cron has six fields (seconds first); five-field cron is a common mistake.
            _check(len(self.schedule.split()) == 6, 'schedule must be a six-field cron expression '
                   f'"sec min hour day month weekday", got {self.schedule!r}')
        _check(bool(self.experiment), 'experiment must not be empty')


def default_config(**overrides) -> PipelineConfig:
    return dataclasses.replace(PipelineConfig(), **overrides)


def smoke_config(data_dir: str, output_dir: str, **overrides) -> PipelineConfig:
    """A few training steps, one Beam worker in-process, a low bar: for tests on tiny samples."""
    base = PipelineConfig(
        name='smoke', output_dir=output_dir,
        ingest=IngestConfig(data_dir=data_dir, num_shards=2),
        train=TrainConfig(train_steps=30, global_batch_size=16, warmup_steps=0),
        eval=EvalConfig(min_accuracy=0.0, max_regression=1.0),
        beam_args=('--direct_running_mode=in_memory', '--direct_num_workers=1', SETUP_FILE_ARG))
    return dataclasses.replace(base, **overrides)
