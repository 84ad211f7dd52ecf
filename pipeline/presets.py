"""From runner.py's flags to a PipelineConfig: a named preset, the config file, then the flags.

runner.py only defines flags; this module decides what they mean (which data and schema are the
defaults for a source, how a shorter run shortens its warm-up, what wins over what), so the rules
are tested without a command line.
"""
import argparse
import dataclasses
import os
import re
from typing import Any, Dict, Optional, Tuple

from components.common import storage
from pipeline import config_file as config_file_lib
from pipeline.config import (SOURCE_DEFAULTS, IngestConfig, KubeflowConfig, PipelineConfig,
                             ScoreConfig, _absolute, _check, check_kubeflow_root, default_config,
                             is_uri, smoke_config)
from training.params import TrainParams

CONFIG_NAMES = ('default', 'smoke')
# runner.py's flags that set one config field each: flag dest -> field path (config_file.py).
FLAG_FIELDS = {
    'source': 'ingest.source', 'data': 'ingest.data_dir', 'output': 'output_dir',
    'name': 'name', 'schema': 'schema_path', 'label_column': 'ingest.label_column',
    'max_rejected_fraction': 'ingest.max_rejected_fraction',
    'min_accuracy': 'eval.min_accuracy', 'beam_args': 'beam_args'}
# The training flags: one per TrainParams field that has one (training/params.py).
FLAG_FIELDS.update({field.metadata['flag'][2:].replace('-', '_'): 'train.' + field.name
                    for field in dataclasses.fields(TrainParams) if field.metadata['flag']})
# Scheduled retraining: who is told how a run ended (pipeline/notify.py).
FLAG_FIELDS.update({'notify': 'notify.url', 'on_finish': 'notify.on_finish'})
FLAG_FIELDS['keep_runs'] = 'retention.keep_runs'   # pipeline/retention.py
FLAG_FIELDS['window'] = 'ingest.window'   # the training window (components/common/window.py)
FLAG_FIELDS['max_label_drift'] = 'drift.max_label_drift'   # components/drift/
FLAG_FIELDS['push_mode'] = 'push.mode'   # components/common/serving_labels.py
# A local run's roots (docs/storage.md); with --kubeflow, --pipeline-root is the run root.
FLAG_FIELDS.update({'pipeline_root': 'pipeline_root_uri', 'serving_dir': 'serving_uri'})

# runner.py's Kubeflow flags: flag dest -> [kubeflow] key (a KubeflowConfig field, or the root).
KUBEFLOW_FLAGS = {
    'image': 'image', 'pipeline_root': 'pipeline_root', 'trainer_cpu': 'trainer_cpu',
    'trainer_memory': 'trainer_memory_gb', 'trainer_gpus': 'trainer_gpus',
    'trainer_workers': 'trainer_workers',
    'trainer_service_account': 'trainer_service_account', 'endpoint': 'endpoint',
    'schedule': 'schedule',
    'experiment': 'experiment', 'namespace': 'namespace', 'token_file': 'token_file',
    'token_env': 'token_env', 'service_account_token': 'service_account_token'}
# An s3:// or minio:// root: the object store's Secret, endpoint and region for every task.
KUBEFLOW_FLAGS.update({'s3_secret': 's3_secret', 's3_endpoint': 's3_endpoint',
                       's3_region': 's3_region'})

# Flags of both modes, with a meaning each (runner.py's help): not refused without --kubeflow.
BOTH_MODES = ('pipeline_root',)

# Hostile input (docs/data.md, landing folders): limits and encodings of ingestion.
FLAG_FIELDS.update({
    'encoding': 'ingest.encoding', 'max_image_pixels': 'ingest.max_image_pixels',
    'convert_formats': 'ingest.convert_formats',
    'max_csv_record_bytes': 'ingest.max_csv_record_bytes'})


def default_schema(source: str, data_dir: str) -> Optional[str]:
    """The curated schema when data_dir is the source's embedded data; else None (inferred)."""
    embedded, schema, _ = SOURCE_DEFAULTS[source]
    return schema if embedded and os.path.abspath(data_dir) == os.path.abspath(embedded) else None


def named_config(name: str, data_dir: str, output_dir: str,
                 source: str = 'images') -> PipelineConfig:
    """The config that `runner.py --config NAME` starts from, for the given data and output."""
    _check(name in CONFIG_NAMES, f'config must be one of {CONFIG_NAMES}, got {name!r}')
    if name == 'smoke':
        return smoke_config(data_dir, output_dir, source=source)
    return default_config(output_dir=output_dir,
                          ingest=IngestConfig(data_dir=data_dir, source=source))


def parse_size(text: str) -> Tuple[int, int]:
    """'28x28' (or '28×28', '28,28') as (height, width); argparse shows the message as is."""
    parts = re.split(r'[x×,]', text.strip().lower())
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(f'expected HEIGHTxWIDTH, e.g. 28x28, got {text!r}')
    return int(parts[0]), int(parts[1])


def parse_names(text: str) -> Tuple[str, ...]:
    """'tiff,webp' as ('TIFF', 'WEBP'): Pillow's format names, comma-separated."""
    return tuple(name.strip().upper() for name in text.split(',') if name.strip())


def parse_minutes(text: str) -> float:
    """'10' or '10m' (minutes), '90s', '1.5h' as minutes; argparse shows the message as is."""
    match = re.fullmatch(r'\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|m|min|h)?\s*', text.lower())
    if not match:
        raise argparse.ArgumentTypeError(f'expected minutes, e.g. 10, 10m, 90s or 1.5h, got '
                                         f'{text!r}')
    return float(match.group(1)) * {'s': 1 / 60, 'h': 60.0}.get(match.group(2), 1.0)


def from_command_line(name: str, config_file: Optional[str], flags: Dict[str, Any],
                      names: Dict[str, str], score_dir: Optional[str] = None) -> PipelineConfig:
    """The config for runner.py: a named preset, then the config file, then the flags given.

    `flags` are overrides by field path (see config_file.py) for the flags that were given;
    `names` says which flag set each, so errors name the flag. Data, source and schema
    depend on each other: data_dir None means the source's embedded data (for a source with
    none, `score_dir` when scoring, which reads no training data, else an error); schema_path None
    means the source's curated schema for its embedded data and inference for any other data,
    and 'infer' always infers. A shorter run keeps its warm-up shorter than itself, and
    --steps given on the command line wins over epochs from the file.
    """
    overrides = config_file_lib.without_kubeflow(
        config_file_lib.read(config_file) if config_file else {})
    names = dict({k: f'{config_file}: {config_file_lib.display_name(k)}' for k in overrides},
                 **names)
    # The length: train_steps > 0 is fixed and wins; 0 = up to train_epochs with early
    # stopping. --epochs (or epochs in the file, over the preset) means the epoch length.
    in_file = set(overrides)
    if flags.get('train.train_steps') and 'train.train_epochs' not in flags:
        overrides['train.train_epochs'] = 0.0  # irrelevant with steps; not shown as set
    overrides.update(config_file_lib.typed(flags, names))
    if 'train.train_steps' not in flags and ('train.train_epochs' in flags or (
            'train.train_epochs' in in_file and 'train.train_steps' not in in_file)):
        overrides['train.train_steps'] = 0
    source = overrides.pop('ingest.source', 'images')
    _check(source in SOURCE_DEFAULTS, f'source must be one of {tuple(SOURCE_DEFAULTS)}')
    # minio:// is the same objects as s3:// at the configured endpoint (components/common/
    # storage.py); TensorFlow and Beam read the latter.
    data = overrides.pop('ingest.data_dir', None) or SOURCE_DEFAULTS[source][0] or score_dir
    if data is None:
        raise ValueError(f'--source {source} has no embedded sample data: name the input '
                         'folder with --data')
    data = storage.to_s3(_absolute(data))
    if not is_uri(data) and not os.path.isdir(data):
        raise ValueError(f'--data folder does not exist: {data}')
    output = overrides.pop('output_dir', None) or os.path.join('runs', 'default')
    if not is_uri(output) and os.path.exists(output) and not os.path.isdir(output):
        raise ValueError(f'--output names a file, not a folder: {output}')
    schema = overrides.pop('schema_path', None)
    if schema is None:
        schema = None if is_uri(data) else default_schema(source, data)
    overrides['schema_path'] = None if schema == 'infer' else schema and _absolute(schema)
    if overrides.get('train.model_weights'):
        overrides['train.model_weights'] = _absolute(overrides['train.model_weights'])
    base = named_config(name, data, output, source)
    if overrides.get('train.train_steps'):
        overrides.setdefault('train.warmup_steps', max(0, min(
            base.train.warmup_steps, overrides['train.train_steps'] - 1)))
    return config_file_lib.apply(base, overrides, names)


def from_flags(name: str, config_file: Optional[str], given: Dict[str, Any],
               no_cache: bool = False, score_dir: Optional[str] = None) -> PipelineConfig:
    """from_command_line for runner.py's given flags (dest -> value, FLAG_FIELDS' dests)."""
    flags = {FLAG_FIELDS[dest]: value for dest, value in given.items()}
    if no_cache:
        flags['enable_cache'] = False
    names = {FLAG_FIELDS[dest]: '--' + dest.replace('_', '-') for dest in given}
    return from_command_line(name, config_file, flags, names, score_dir)


def refuse_local_roots(config: PipelineConfig) -> None:
    """With --kubeflow the run root holds pipeline_root/ and serving/ (kubeflow_from_flags):
    a local run's own roots (--serving-dir, the file's serving_uri, pipeline_root_uri) would be
    ignored, so they are refused."""
    if config.serving_uri or config.pipeline_root_uri:
        raise ValueError('--serving-dir (serving_uri) and pipeline_root_uri are for --local runs;'
                         ' on Kubeflow pushed versions go to <--pipeline-root>/serving and '
                         'artifacts to <--pipeline-root>/pipeline_root')


def kubeflow_from_flags(config_file: Optional[str], given: Dict[str, Any],
                        output_file: Optional[str]) -> Tuple[str, KubeflowConfig]:
    """(run root, KubeflowConfig) for runner.py --kubeflow: defaults, then the config file's
    [kubeflow] table, then the flags given (dest -> value, KUBEFLOW_FLAGS' dests)."""
    fields = config_file_lib.kubeflow_table(
        config_file_lib.read(config_file) if config_file else {})
    names = {key: f'{config_file}: [kubeflow] {key}' for key in fields}
    for dest, value in given.items():
        fields[KUBEFLOW_FLAGS[dest]] = value
        names[KUBEFLOW_FLAGS[dest]] = '--' + dest.replace('_', '-')
    root = fields.pop('pipeline_root', None)
    if not (fields.get('image') and root):
        raise ValueError('--kubeflow needs --image and --pipeline-root (or image and '
                         'pipeline_root in the config file\'s [kubeflow] table)')
    check_kubeflow_root(root, names['pipeline_root'])
    fields['output_file'] = output_file or 'pipeline.json'
    return root, config_file_lib.make(KubeflowConfig, fields, names)


def score_config(input_dir: str, version: Optional[int], top_k: Optional[int]):
    """The ScoreConfig of runner.py --score DIR, --version and --top-k (pipeline/scoring.py):
    a local folder made absolute, a URI as given, flags not given left to the defaults."""
    given = {'version': version, 'top_k': top_k}
    return ScoreConfig(input_dir=input_dir if is_uri(input_dir) else os.path.abspath(input_dir),
                       **{name: value for name, value in given.items() if value is not None})
