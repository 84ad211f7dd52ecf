"""From runner.py's flags to a PipelineConfig: named presets, then each flag that was given.

runner.py only defines flags; this module decides what they mean (which data and schema are the
defaults for a source, how a shorter run shortens its warm-up), so the rules are tested without
a command line.
"""
import dataclasses
import os
import shlex
from typing import Optional

from pipeline.config import (SOURCE_DEFAULTS, IngestConfig, PipelineConfig, _absolute, _check,
                             default_config, is_uri, smoke_config)

CONFIG_NAMES = ('default', 'smoke')


def default_schema(source: str, data_dir: str) -> Optional[str]:
    """The curated schema when data_dir is the source's embedded data; else None (inferred)."""
    embedded, schema, _ = SOURCE_DEFAULTS[source]
    return schema if os.path.abspath(data_dir) == os.path.abspath(embedded) else None


def named_config(name: str, data_dir: str, output_dir: str,
                 source: str = 'images') -> PipelineConfig:
    """The config that `runner.py --config NAME` starts from, for the given data and output."""
    _check(name in CONFIG_NAMES, f'config must be one of {CONFIG_NAMES}, got {name!r}')
    if name == 'smoke':
        return smoke_config(data_dir, output_dir, source=source)
    return default_config(output_dir=output_dir,
                          ingest=IngestConfig(data_dir=data_dir, source=source))


def from_command_line(name: str, source: str, data_dir: Optional[str], output_dir: str,
                      schema: Optional[str], train_overrides: dict, beam_args: Optional[str],
                      enable_cache: bool) -> PipelineConfig:
    """The config for runner.py's flags: named settings, then each flag that was given.

    data_dir None means the source's embedded data. schema None means the source's curated
    schema for its embedded data and inference for any other data; 'infer' always infers.
    train_overrides holds only the TrainConfig fields whose flags were given; a shorter run
    keeps its warm-up shorter than itself.
    """
    _check(source in SOURCE_DEFAULTS, f'source must be one of {tuple(SOURCE_DEFAULTS)}')
    data = _absolute(data_dir or SOURCE_DEFAULTS[source][0])
    if not is_uri(data) and not os.path.isdir(data):
        raise ValueError(f'--data folder does not exist: {data}')
    if not is_uri(output_dir) and os.path.isfile(output_dir):
        raise ValueError(f'--output names a file, not a folder: {output_dir}')
    if schema is None:
        schema = None if is_uri(data) else default_schema(source, data)
    elif schema == 'infer':
        schema = None
    else:
        schema = _absolute(schema)
    base = named_config(name, data, output_dir, source)
    train = dict(train_overrides)
    if 'train_steps' in train:
        train.setdefault('warmup_steps', max(0, min(base.train.warmup_steps,
                                                    train['train_steps'] - 1)))
    overrides = dict(schema_path=schema, train=dataclasses.replace(base.train, **train),
                     enable_cache=enable_cache)
    if beam_args is not None:
        overrides['beam_args'] = tuple(shlex.split(beam_args))
    return dataclasses.replace(base, **overrides)
