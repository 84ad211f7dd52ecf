"""The pipeline's typed configuration: small frozen dataclasses, validated at construction.

`default_config()` is what `python runner.py --local` runs; `smoke_config()` is a tiny variant for
tests. Only runner.py turns command-line flags into a config, via `dataclasses.replace`.
"""
import dataclasses
import os
import re
from typing import Optional, Tuple

from components.common import serving_labels, storage
from components.ingest import csv_records, image_formats, registry
# Re-exported: the [kubeflow] settings and the retraining tables live in modules of their own.
from pipeline.config_kubeflow import (  # noqa: F401
    SCORE_SPEC_FILE, KubeflowConfig, check_kubeflow_root, spec_file)
from pipeline.config_retraining import DriftConfig, NotifyConfig, RetentionConfig, _check
from training.params import NAMED_MODELS, TrainParams  # noqa: F401 (NAMED_MODELS: re-exported)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(REPO_ROOT, 'data', 'digits')
DEFAULT_CSV_DATA = os.path.join(REPO_ROOT, 'data', 'wine')
# Curated schemas for the embedded data (docs/data.md, "Schema"); other data infers one.
DIGITS_SCHEMA = os.path.join(REPO_ROOT, 'data', 'schema', 'digits.pbtxt')
WINE_SCHEMA = os.path.join(REPO_ROOT, 'data', 'schema', 'wine.pbtxt')
SOURCES = registry.NAMES   # --source choices (components/ingest/registry.py)
# Per source: the embedded data, its curated schema (None: none, --data is needed), and the
# default model builder.
SOURCE_DEFAULTS = {
    'images': (DEFAULT_DATA, DIGITS_SCHEMA, 'models.resnet.build_model'),
    'csv': (DEFAULT_CSV_DATA, WINE_SCHEMA, 'models.mlp.build_model'),
    'parquet': (None, None, 'models.mlp.build_model'),
}
# Naming our package for Beam's workers is what a remote runner needs, and it stops TFX from
# building a throw-away sdist of itself (about 3 s) before every Beam stage when run locally.
SETUP_FILE_ARG = '--setup_file=' + os.path.join(REPO_ROOT, 'setup.py')
PIPELINE_NAME = r'[a-z0-9][a-z0-9-]{0,127}'   # Kubeflow Pipelines' pipelineNamePattern
# The stores a run root or serving folder may be on besides a local disk (docs/storage.md).
STORAGE_SCHEMES = ('gs://',) + storage.SCHEMES


def is_uri(path: str) -> bool:
    """gs://, s3://, hdfs://...: a location for the cluster, never made absolute or checked here."""
    return '://' in path


def _absolute(path: str) -> str:
    return path if is_uri(path) else os.path.abspath(path)


@dataclasses.dataclass(frozen=True)
class IngestConfig:
    """The source and how it becomes Examples. The input base may hold span-<N>/ folders; the
    latest span is ingested, and the model trains on the last `window` spans (docs/data.md,
    Spans and the training window)."""
    data_dir: str = DEFAULT_DATA
    source: str = 'images'           # images: <data>/<class>/<file>; csv: <data>/*.csv; parquet
    train_percent: int = 80
    num_shards: int = 2              # per split; 0 = automatic, ~128 MB per shard
    compress: bool = True            # GZIP'd TFRecords
    split_key: str = 'source'        # 'source' (path; CSV file + row), 'content', or a CSV column
    max_rejected_fraction: float = 0.01
    image_size: Optional[Tuple[int, int]] = None   # (height, width) to resize to at ingestion
    image_storage: str = 'encoded'   # 'encoded' keeps the file's bytes; 'raw' stores uint8 pixels
    label_column: str = 'label'      # csv, parquet: the column holding the class
    # csv: (column, 'numeric' | 'categorical') pairs; columns not given are inferred
    feature_types: Tuple[Tuple[str, str], ...] = ()
    drop_columns: Tuple[str, ...] = ()   # csv: columns that are neither features nor label
    # Spans trained and evaluated on: the newest and up to window - 1 before it (span-<N>/).
    window: int = 3
    # Hostile input (docs/data.md): limits that quarantine instead of crashing.
    max_image_pixels: int = image_formats.DEFAULT_MAX_IMAGE_PIXELS   # larger: too_large
    convert_formats: Tuple[str, ...] = ()  # e.g. ('TIFF',): convert to PNG even with loss
    encoding: str = csv_records.DEFAULT_ENCODING   # csv: of files without a BOM
    max_csv_record_bytes: int = csv_records.DEFAULT_MAX_RECORD_BYTES  # larger: too_large

    def __post_init__(self):
        _check(self.source in SOURCES, f'source must be one of {SOURCES}, got {self.source!r}')
        _check(0 < self.train_percent < 100,
               f'train_percent must be in 1..99, got {self.train_percent}')
        _check(self.num_shards >= 0,
               f'num_shards must be >= 0 (0 = automatic), got {self.num_shards}')
        _check(0.0 <= self.max_rejected_fraction < 1.0,
               f'max_rejected_fraction must be in [0, 1), got {self.max_rejected_fraction}')
        _check(self.image_size is None or (len(self.image_size) == 2 and min(self.image_size) >= 1),
               f'image_size must be None or (height, width) >= 1, got {self.image_size}')
        _check(self.image_storage in ('encoded', 'raw'),
               f'image_storage must be "encoded" or "raw", got {self.image_storage!r}')
        _check(all(t in ('numeric', 'categorical') for _, t in self.feature_types),
               f'feature_types must map columns to numeric|categorical, got {self.feature_types}')
        _check(bool(self.split_key), 'split_key must not be empty')
        _check(isinstance(self.window, int) and self.window >= 1,
               f'window must be >= 1 (the spans trained on), got {self.window}')
        _check(self.label_column not in self.drop_columns,
               f'label_column {self.label_column!r} cannot be in drop_columns')
        _check(self.max_image_pixels >= 1 and self.max_csv_record_bytes >= 1,
               'max_image_pixels and max_csv_record_bytes must be >= 1')
        unknown = set(self.convert_formats) - image_formats.CONVERTED_FORMATS
        _check(not unknown, f'convert_formats {sorted(unknown)} are not among the formats '
               f'converted to PNG: {sorted(image_formats.CONVERTED_FORMATS)}')
        _check(csv_records.known_encoding(self.encoding),
               f'encoding {self.encoding!r} is not a known codec; use a Python codec name such '
               'as utf-8, latin-1, cp1252, utf-16')


# The [train] table: every training hyper-parameter, with its flag and help (training/params.py).
TrainConfig = TrainParams


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    min_accuracy: float = 0.90      # absolute bar a model must clear to be blessed
    max_regression: float = 0.0     # how much accuracy may drop against the served model
    # Opt-in bar for every class's accuracy (the label_name slices); None = no per-class bar.
    min_class_accuracy: Optional[float] = None

    def __post_init__(self):
        _check(0.0 <= self.min_accuracy <= 1.0,
               f'min_accuracy must be in [0, 1], got {self.min_accuracy}')
        _check(0.0 <= self.max_regression <= 1.0,
               f'max_regression must be in [0, 1], got {self.max_regression}')
        _check(self.min_class_accuracy is None or 0.0 <= self.min_class_accuracy <= 1.0,
               f'min_class_accuracy must be in [0, 1], got {self.min_class_accuracy}')


@dataclasses.dataclass(frozen=True)
class PushConfig:
    keep_versions: int = 5   # serving/ keeps this many newest versions; labelled ones always
    # auto: every blessed model becomes stable; candidate: it becomes the canary, and a person
    # promotes or rejects it (components/common/serving_labels.py, docs/serving.md "Labels").
    mode: str = 'auto'

    def __post_init__(self):
        _check(self.keep_versions >= 1, f'keep_versions must be >= 1, got {self.keep_versions}')
        _check(self.mode in serving_labels.MODES,
               f'mode must be one of {", ".join(serving_labels.MODES)}, got {self.mode!r}')


@dataclasses.dataclass(frozen=True)
class ScoreConfig:
    """runner.py --score: what to score, with which version, where the result goes
    (pipeline/scoring.py)."""
    input_dir: str                 # a folder of images or CSV files (a URI on Kubeflow)
    version: int = 0               # 0 = the served version, resolved when the scoring runs
    top_k: int = 3
    output_dir: str = ''           # the result folder; '' = ScoreWriter's artifact only

    def __post_init__(self):
        if self.version < 0:
            raise ValueError(f'--version must be >= 1 (0 = the served one), got {self.version}')
        if self.top_k < 1:
            raise ValueError(f'top_k must be >= 1, got {self.top_k}')


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    # The pipeline's name (--name, or `name` at the top of the config file): its ML Metadata
    # context locally; on Kubeflow the pipeline, its versions and its recurring run, so a second
    # --schedule under the same name (and experiment) replaces that run, and another name adds
    # one beside it (pipeline/kubeflow_schedule.py).
    name: str = 'image-pipeline'
    output_dir: str = os.path.join('runs', 'default')
    # None infers the schema from the data (SchemaGen); a path imports a curated one.
    schema_path: Optional[str] = DIGITS_SCHEMA
    ingest: IngestConfig = IngestConfig()
    train: TrainParams = TrainParams()
    eval: EvalConfig = EvalConfig()
    push: PushConfig = PushConfig()
    drift: DriftConfig = DriftConfig()
    retention: RetentionConfig = RetentionConfig()   # what a run keeps of older runs
    notify: NotifyConfig = NotifyConfig()   # who is told how a run ended
    # Empty: chosen by the input's size at run time (pipeline/beam_mode.py), in-process for
    # small inputs, one DirectRunner worker per core for large ones; given args win.
    beam_args: Tuple[str, ...] = ()
    enable_cache: bool = True
    # False when paths name files inside the container image (pipeline/kubeflow.py): they do not
    # exist on the machine that compiles the pipeline, so they are not checked there.
    check_paths: bool = True
    # A local run's TFX artifacts and pushed versions, when not under output_dir: a folder, or a
    # bucket (s3://, minio://, gs://; docs/storage.md). ML Metadata, the logs and the report stay
    # under output_dir. On Kubeflow both follow the run root, so these stay ''.
    pipeline_root_uri: str = ''
    serving_uri: str = ''

    def __post_init__(self):
        # Kubeflow Pipelines' API server refuses any other pipeline name (common/utils.go
        # ValidatePipelineName); the same name serves locally, so it holds everywhere.
        _check(re.fullmatch(PIPELINE_NAME, self.name) is not None,
               'name must be 1-128 lowercase letters, digits or -, starting with a letter or '
               "digit (Kubeflow Pipelines' API server refuses other pipeline names), got "
               f'{self.name!r}')
        _check(bool(self.output_dir), 'output_dir must not be empty')
        if self.schema_path is not None and self.check_paths and not is_uri(self.schema_path):
            _check(os.path.isfile(self.schema_path), f'schema file not found: {self.schema_path}')
        for key in ('pipeline_root_uri', 'serving_uri'):
            value = getattr(self, key)
            _check(not is_uri(value) or value.startswith(STORAGE_SCHEMES),
                   f"{key} must be a folder or a {', '.join(STORAGE_SCHEMES)} URI, got {value!r}")
        weights = self.train.model_weights
        if weights and self.check_paths:  # a local file (TrainParams refuses URIs)
            _check(os.path.isfile(weights), f'model weights file not found: {weights}')

    @property
    def model_builder(self) -> str:
        return self.train.model_builder or SOURCE_DEFAULTS[self.ingest.source][2]

    @property
    def pipeline_root(self) -> str:
        if self.pipeline_root_uri:
            return storage.to_s3(_absolute(self.pipeline_root_uri))
        return os.path.join(_absolute(self.output_dir), 'pipeline_root')

    @property
    def metadata_path(self) -> Optional[str]:
        # None for a run root on cluster storage: there (KFP) the cluster keeps ML Metadata.
        if is_uri(self.output_dir):
            return None
        return os.path.join(os.path.abspath(self.output_dir), 'metadata.sqlite')

    @property
    def serving_dir(self) -> str:
        if self.serving_uri:
            return storage.to_s3(_absolute(self.serving_uri))
        return os.path.join(_absolute(self.output_dir), 'serving')


def default_config(**overrides) -> PipelineConfig:
    return dataclasses.replace(PipelineConfig(), **overrides)


def smoke_config(data_dir: str, output_dir: str, source: str = 'images',
                 **overrides) -> PipelineConfig:
    """A few training steps, a low bar: for tests on tiny samples (whose Beam runs in-process)."""
    base = PipelineConfig(
        name='smoke', output_dir=output_dir,
        ingest=IngestConfig(data_dir=data_dir, num_shards=2, source=source),
        train=TrainParams(train_steps=30, global_batch_size=16, warmup_steps=0,
                          checkpoint_interval=10),
        eval=EvalConfig(min_accuracy=0.0, max_regression=1.0))
    return dataclasses.replace(base, **overrides)
