"""The pipeline's typed configuration: one settings class per stage, validated at construction.

Each stage keeps its settings beside its code (core/settings.py): [ingest] is
components/ingest/graph/params.py, [train] training/params.py, [eval] components/evaluate/params.py,
[push] components/push/params.py, [drift] components/drift/params.py, [retention] and [notify]
pipeline/definition/config_retraining.py, [kubeflow] pipeline/definition/config_kubeflow.py.
PipelineConfig holds them and the top-level settings; ScoreConfig is runner.py --score's.
`default_config()` is what `python runner.py --local` runs; `smoke_config()` is a tiny variant for
tests. Only runner.py turns command-line flags into a config (pipeline/definition/presets.py).
"""
import dataclasses
import os
import re
from typing import ClassVar, Optional, Tuple

from core import storage, store_watch
from core.settings import Settings, setting
from components.drift.params import DriftParams
from components.evaluate.params import EvalParams
from components.ingest.graph.params import IngestParams
from components.push.params import PushParams
from pipeline.definition.config_kubeflow import KubeflowConfig
from pipeline.definition.config_retraining import NotifyConfig, RetentionConfig
from training.params import TrainParams

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DATA = os.path.join(REPO_ROOT, 'data', 'digits')
DEFAULT_CSV_DATA = os.path.join(REPO_ROOT, 'data', 'wine')
# Curated schemas for the embedded data (docs/data.md, "Schema"); other data infers one.
DIGITS_SCHEMA = os.path.join(REPO_ROOT, 'data', 'schema', 'digits.pbtxt')
WINE_SCHEMA = os.path.join(REPO_ROOT, 'data', 'schema', 'wine.pbtxt')
# Per source: the embedded data, its curated schema (None: none, --data is needed), and the
# default model builder.
SOURCE_DEFAULTS = {
    'images': (DEFAULT_DATA, DIGITS_SCHEMA, 'models.resnet.build_model'),
    'csv': (DEFAULT_CSV_DATA, WINE_SCHEMA, 'models.mlp.build_model'),
    'parquet': (None, None, 'models.mlp.build_model'),
}
# Naming our package for Beam's workers is what a remote runner needs, and it stops TFX from
# building a throw-away sdist of itself before every Beam stage when run locally
# (docs/scaling.md).
SETUP_FILE_ARG = '--setup_file=' + os.path.join(REPO_ROOT, 'setup.py')
PIPELINE_NAME = r'[a-z0-9][a-z0-9-]{0,127}'   # Kubeflow Pipelines' pipelineNamePattern
# The stores a run root or serving folder may be on besides a local disk (docs/storage.md).
STORAGE_SCHEMES = ('gs://',) + storage.SCHEMES


def is_uri(path: str) -> bool:
    """gs://, s3://, hdfs://...: a location for the cluster, never made absolute or checked here."""
    return '://' in path


def absolute(path: str) -> str:
    return path if is_uri(path) else os.path.abspath(path)


def _storage_uri(value: str) -> bool:
    return not is_uri(value) or value.startswith(STORAGE_SCHEMES)


_STORAGE_RULE = f"must be a folder or a {', '.join(STORAGE_SCHEMES)} URI"


@dataclasses.dataclass(frozen=True)
class ScoreConfig(Settings):
    """runner.py --score: what to score, with which version, where the result goes
    (pipeline/definition/scoring.py). Flags only: no table of the config file."""
    GROUP: ClassVar[str] = 'scoring'
    input_dir: str = setting(
        help='score the images directly in DIR, or its CSV or Parquet files (no label column '
        'needed), with a served model of <--output>/serving; predictions as JSON lines and CSV in '
        '<--output>/scores/, bad files quarantined with reasons. With --kubeflow: compile the '
        'scoring pipeline for DIR (a URI) instead', flag='--score', metavar='DIR')
    version: int = setting(  # resolved when the scoring runs
        0, 'the serving/ version that scores', '--version', metavar='N',
        default_text='the served one, the highest',
        check=(lambda version: version >= 0, 'must be >= 1 (0 = the served one)'))
    top_k: int = setting(3, 'classes listed per prediction', '--top-k', metavar='K',
                         check=(lambda k: k >= 1, 'must be >= 1'))
    output_dir: str = setting('', "the result folder; '' = ScoreWriter's artifact only")


@dataclasses.dataclass(frozen=True)
class PipelineConfig(Settings):
    GROUP: ClassVar[str] = 'execution'
    output_dir: str = setting(
        os.path.join('runs', 'default'), '--local: the run folder; --kubeflow: the compiled '
        'file', '--output', path=True, check=(bool, 'must not be empty'),
        default_text=f"{os.path.join('runs', 'default')}; with --kubeflow: "
        f"{KubeflowConfig.__dataclass_fields__['output_file'].default}")
    # The pipeline's name: its ML Metadata context locally; on Kubeflow the pipeline, its
    # versions and its recurring run, so a second --schedule under the same name (and
    # experiment) replaces that run, and another name adds one beside it
    # (pipeline/kubeflow/schedule.py). Kubeflow Pipelines' API server refuses any other
    # pipeline name (common/utils.go ValidatePipelineName); the same name serves locally.
    name: str = setting(
        'image-pipeline', 'pipeline name: its ML Metadata context; on Kubeflow the pipeline '
        'and its recurring run, which a second --schedule of the same name replaces', '--name',
        check=(lambda name: re.fullmatch(PIPELINE_NAME, name) is not None,
               'must be 1-128 lowercase letters, digits or -, starting with a letter or digit '
               "(Kubeflow Pipelines' API server refuses other pipeline names)"))
    # None infers the schema from the data (SchemaGen); a path imports a curated one.
    schema_path: Optional[str] = setting(
        DIGITS_SCHEMA, 'curated schema file, or "infer"', '--schema', group='data', path=True,
        default_text='curated for embedded data, else infer')
    ingest: IngestParams = IngestParams(data_dir=DEFAULT_DATA)
    train: TrainParams = TrainParams()
    eval: EvalParams = EvalParams()
    push: PushParams = PushParams()
    notify: NotifyConfig = NotifyConfig()   # who is told how a run ended
    retention: RetentionConfig = RetentionConfig()   # what a run keeps of older runs
    drift: DriftParams = DriftParams()
    # Empty: chosen by the input's size at run time (pipeline/definition/beam_mode.py), in-process
    # for small inputs, one DirectRunner worker per core for large ones; given args win.
    beam_args: Tuple[str, ...] = setting(
        (), 'Beam pipeline args as one quoted string, e.g. --beam-args="--direct_num_workers=1"',
        '--beam-args', parse='words',
        default_text='in-process for small inputs, one DirectRunner worker per core for large '
        'ones')
    # The bound of issue 39 (core/store_watch.py): a store that stops answering ends the run
    # (exit 75) this long after, rather than leaving it to each client's retry policy.
    store_timeout_minutes: float = setting(
        store_watch.DEFAULT_BOUND_SECONDS / 60, 'end the run (exit 75, one line naming the store, '
        'bucket and stage) once a bucket it uses has not answered for this long: 2, 90s, 5m '
        '(docs/storage.md, "When the store fails")', '--store-timeout', metavar='MIN',
        parse='minutes', check=(lambda minutes: minutes > 0, 'must be > 0'))
    enable_cache: bool = setting(True, 're-run every component (enable_cache = false)',
                                 '--no-cache', default_text=None)
    # False when paths name files inside the container image (pipeline/kubeflow/compiler.py): they
    # do not exist on the machine that compiles the pipeline, so they are not checked there.
    check_paths: bool = setting(True, 'check that local files exist', key=False)
    # A local run's TFX artifacts and pushed versions, when not under output_dir: a folder, or a
    # bucket (s3://, minio://, gs://; docs/storage.md). ML Metadata, the logs and the report stay
    # under output_dir. On Kubeflow both follow the run root, so these stay ''.
    pipeline_root_uri: str = setting(
        '', "--local: where TFX's artifacts go, a folder or an s3://, minio:// or gs:// bucket "
        'path (default: <output>/pipeline_root); --kubeflow: the run root the cluster writes, '
        'pipeline_root/ and serving/ under it (required); buckets: docs/storage.md',
        '--pipeline-root', metavar='URI', path=True, check=(_storage_uri, _STORAGE_RULE))
    serving_uri: str = setting(
        '', '--local: where pushed versions go, a folder or a bucket path as above',
        '--serving-dir', metavar='URI', path=True, default_text='<output>/serving',
        check=(_storage_uri, _STORAGE_RULE))

    def _checks(self):
        if self.schema_path is not None and self.check_paths and not is_uri(self.schema_path):
            yield os.path.isfile(self.schema_path), f'schema file not found: {self.schema_path}'
        weights = self.train.model_weights
        if weights and self.check_paths:  # a local file (TrainParams refuses URIs)
            yield os.path.isfile(weights), f'model weights file not found: {weights}'

    @classmethod
    def sections(cls):
        """{table: settings class} of the fields that are a stage's settings."""
        return {field.name: field.type for field in dataclasses.fields(cls)
                if isinstance(field.type, type) and issubclass(field.type, Settings)}

    @property
    def model_builder(self) -> str:
        return self.train.model_builder or SOURCE_DEFAULTS[self.ingest.source][2]

    @property
    def pipeline_root(self) -> str:
        if self.pipeline_root_uri:
            return storage.to_s3(absolute(self.pipeline_root_uri))
        return os.path.join(absolute(self.output_dir), 'pipeline_root')

    @property
    def metadata_path(self) -> Optional[str]:
        # None for a run root on cluster storage: there (KFP) the cluster keeps ML Metadata.
        if is_uri(self.output_dir):
            return None
        return os.path.join(os.path.abspath(self.output_dir), 'metadata.sqlite')

    @property
    def serving_dir(self) -> str:
        if self.serving_uri:
            return storage.to_s3(absolute(self.serving_uri))
        return os.path.join(absolute(self.output_dir), 'serving')


def default_config(**overrides) -> PipelineConfig:
    return dataclasses.replace(PipelineConfig(), **overrides)


def smoke_config(data_dir: str, output_dir: str, source: str = 'images',
                 **overrides) -> PipelineConfig:
    """A few training steps, a low bar: for tests on tiny samples (whose Beam runs in-process).
    No label smoothing: it slows the first few updates, and 30 are all there are."""
    base = PipelineConfig(
        name='smoke', output_dir=output_dir,
        ingest=IngestParams(data_dir=data_dir, num_shards=2, source=source),
        train=TrainParams(train_steps=30, global_batch_size=16, warmup_steps=0,
                          label_smoothing=0.0, checkpoint_interval=10),
        eval=EvalParams(min_accuracy=0.0, max_regression=1.0))
    return dataclasses.replace(base, **overrides)
