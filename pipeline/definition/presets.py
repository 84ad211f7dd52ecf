"""From runner.py's flags to a PipelineConfig: a named preset, the config file, then the flags.

Which flag sets which field is read from the settings classes (core/settings.py):
FLAG_FIELDS and KUBEFLOW_FLAGS are made from the flags their fields declare.

runner.py only defines flags; this module decides what they mean (which data and schema are the
defaults for a source, how a shorter run shortens its warm-up, what wins over what), so the rules
are tested without a command line.
"""
import argparse
import os
import re
import shlex
from typing import Any, Dict, Optional, Tuple

from core import storage
from pipeline.definition import config_file as config_file_lib
from core import settings
from core.settings import require
from components.ingest.graph.params import IngestParams
from pipeline.definition.config import (SOURCE_DEFAULTS, PipelineConfig, ScoreConfig, absolute,
                                        default_config, is_uri, smoke_config)
from pipeline.definition.config_kubeflow import KubeflowConfig, check_kubeflow_root

CONFIG_NAMES = ('default', 'smoke')
# The settings classes whose fields' flags runner.py defines, in --help's order within a group.
SETTINGS = (PipelineConfig, *PipelineConfig.sections().values(), KubeflowConfig, ScoreConfig)


def _flag_fields() -> Dict[str, str]:
    """runner.py's flags that set one config field each: flag dest -> field path
    (config_file.py), from the flags the settings classes declare."""
    found = {settings.dest(field.metadata['flag']): field.name
             for field in PipelineConfig.flagged()}
    for section, cls in PipelineConfig.sections().items():
        found.update({settings.dest(field.metadata['flag']): f'{section}.{field.name}'
                      for field in cls.flagged()})
    return found


FLAG_FIELDS = _flag_fields()
# runner.py's Kubeflow flags: flag dest -> [kubeflow] key; refused without --kubeflow but those
# a local run has too (BOTH_MODES: --pipeline-root, the run root there).
KUBEFLOW_FLAGS = {settings.dest(field.metadata['flag']): field.name
                  for field in KubeflowConfig.flagged()}
BOTH_MODES = tuple(dest for dest in KUBEFLOW_FLAGS if dest in FLAG_FIELDS)


def default_schema(source: str, data_dir: str) -> Optional[str]:
    """The curated schema when data_dir is the source's embedded data; else None (inferred)."""
    embedded, schema, _ = SOURCE_DEFAULTS[source]
    return schema if embedded and os.path.abspath(data_dir) == os.path.abspath(embedded) else None


def named_config(name: str, data_dir: str, output_dir: str,
                 source: str = 'images') -> PipelineConfig:
    """The config that `runner.py --config NAME` starts from, for the given data and output."""
    require(name in CONFIG_NAMES, f'config must be one of {CONFIG_NAMES}, got {name!r}')
    if name == 'smoke':
        return smoke_config(data_dir, output_dir, source=source)
    return default_config(output_dir=output_dir,
                          ingest=IngestParams(data_dir=data_dir, source=source))


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


# Fields whose flag parses with one of these (their `parse`) instead of their type.
PARSERS = {'size': parse_size, 'minutes': parse_minutes, 'names': parse_names,
           'words': shlex.split}


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
    require(source in SOURCE_DEFAULTS, f'source must be one of {tuple(SOURCE_DEFAULTS)}')
    # minio:// is the same objects as s3:// at the configured endpoint (core/
    # storage.py); TensorFlow and Beam read the latter.
    data = overrides.pop('ingest.data_dir', None) or SOURCE_DEFAULTS[source][0] or score_dir
    if data is None:
        raise ValueError(f'--source {source} has no embedded sample data: name the input '
                         'folder with --data')
    data = storage.to_s3(absolute(data))
    if not is_uri(data) and not os.path.isdir(data):
        raise ValueError(f'--data folder does not exist: {data}')
    output = overrides.pop('output_dir', None) or os.path.join('runs', 'default')
    if not is_uri(output) and os.path.exists(output) and not os.path.isdir(output):
        raise ValueError(f'--output names a file, not a folder: {output}')
    schema = overrides.pop('schema_path', None)
    if schema is None:
        schema = None if is_uri(data) else default_schema(source, data)
    overrides['schema_path'] = None if schema == 'infer' else schema and absolute(schema)
    if overrides.get('train.model_weights'):
        overrides['train.model_weights'] = absolute(overrides['train.model_weights'])
    base = named_config(name, data, output, source)
    if overrides.get('train.train_steps'):
        overrides.setdefault('train.warmup_steps', max(0, min(
            base.train.warmup_steps, overrides['train.train_steps'] - 1)))
    return config_file_lib.apply(base, overrides, names)


def from_flags(name: str, config_file: Optional[str], given: Dict[str, Any],
               score_dir: Optional[str] = None) -> PipelineConfig:
    """from_command_line for runner.py's given flags (dest -> value, FLAG_FIELDS' dests)."""
    flags = {FLAG_FIELDS[dest]: value for dest, value in given.items()}
    names = {FLAG_FIELDS[dest]: '--' + dest.replace('_', '-') for dest in given}
    return from_command_line(name, config_file, flags, names, score_dir)


def mode_error(args: argparse.Namespace) -> Optional[str]:
    """What is wrong with runner.py's mode flags, or None: one mode is needed, --local,
    --kubeflow, --rollback, --promote, --reject or --score (which --kubeflow compiles)."""
    if not (args.local or args.kubeflow or args.score or any(
            getattr(args, name) is not None for name in ('rollback', 'promote', 'reject'))):
        return ('one of the arguments --local --kubeflow --rollback --promote --reject --score '
                'is required')
    if args.reason is not None and args.reject is None:
        return '--reason goes with --reject'
    if args.score and (args.local or args.rollback is not None):
        return '--score runs on its own, or with --kubeflow to compile the scoring pipeline'
    if args.version is not None and not args.score:
        return '--version goes with --score'
    return None


def check_mode(args: argparse.Namespace) -> None:
    """ValueError naming a Kubeflow-only flag given without --kubeflow (it would do nothing)."""
    if args.kubeflow:
        return
    given = [dest for dest in KUBEFLOW_FLAGS
             if getattr(args, dest) is not None and dest not in BOTH_MODES]
    if given:
        mode = next(f'--{name}' for name in ('local', 'score', 'promote', 'reject', 'rollback')
                    if getattr(args, name) not in (None, False))
        flag = '--' + given[0].replace('_', '-')
        raise ValueError(f'{flag} is a Kubeflow setting (Kubeflow and scheduling flags need '
                         f'--kubeflow); it does nothing with {mode}')


def _given(args: argparse.Namespace, dests) -> Dict[str, Any]:
    return {dest: getattr(args, dest) for dest in dests if getattr(args, dest) is not None}


def from_args(args: argparse.Namespace) -> Tuple[PipelineConfig, Optional[KubeflowConfig]]:
    """(PipelineConfig, KubeflowConfig or None) of runner.py's parsed flags; ValueError with a
    message on bad values."""
    check_mode(args)
    kubeflow, given = None, _given(args, FLAG_FIELDS)
    if args.kubeflow:  # --output names the compiled file; the run root is the cluster's
        root, kubeflow = kubeflow_from_flags(args.config_file, _given(args, KUBEFLOW_FLAGS),
                                             args.output)
        given.pop('pipeline_root', None)
        given['output'] = root   # pipeline_root/ and serving/ under it
    config = from_flags(args.config, args.config_file, given, args.score)
    if kubeflow is not None:
        refuse_local_roots(config)
    return config, kubeflow


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
    root = fields.get('pipeline_root')
    if not (fields.get('image') and root):
        raise ValueError('--kubeflow needs --image and --pipeline-root (or image and '
                         'pipeline_root in the config file\'s [kubeflow] table)')
    check_kubeflow_root(root, names['pipeline_root'])
    if output_file:
        fields['output_file'] = output_file
    return root, config_file_lib.make(KubeflowConfig, fields, names)


def score_config(input_dir: str, version: Optional[int], top_k: Optional[int]):
    """The ScoreConfig of runner.py --score DIR, --version and --top-k
    (pipeline/definition/scoring.py): a local folder made absolute, a URI as given, flags not given
    left to the defaults."""
    given = {name: value for name, value in (('version', version), ('top_k', top_k))
             if value is not None}
    return config_file_lib.make(ScoreConfig, dict(given, input_dir=absolute(input_dir)),
                                {name: '--' + name.replace('_', '-') for name in given})
