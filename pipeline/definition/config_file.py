"""Settings as data: a TOML config file, and overrides applied to a PipelineConfig by field path.

A config file's tables mirror the typed config (pipeline/definition/config.py): top-level keys are
PipelineConfig fields, and each table (`[ingest]`, `[train]`, `[eval]`, ...) holds the fields of
the stage's settings class under the same names (core/settings.py; a field with
`key=False` is the pipeline's, not a key). Values are
checked against the fields' types here, so a typo in a key or a string where a number belongs
is an error naming the key, before anything runs. Relative paths in a file are relative to the
file's folder, so a file and its data can move together and a scheduled run does not depend
on the current directory.

A `[kubeflow]` table holds the KubeflowConfig fields (image, the run root, resources, endpoint,
schedule, namespace, credentials...), so a cluster's settings can live in version control too;
runner.py builds the KubeflowConfig from it (`kubeflow_table`, `make`).

Overrides are flat: {'train.train_steps': 800, 'output_dir': 'runs/x'}. `apply` replaces those
fields and re-validates; a validation message names what the user wrote (`--steps`, or
`[train] train_steps` in the file), not only the dataclass field.
"""
import dataclasses
import os
import re
import tomllib
import typing
from typing import Any, Dict, Mapping

from pipeline.definition.config import PipelineConfig, is_uri
from pipeline.definition.config_kubeflow import KubeflowConfig

# The tables: a stage's settings each (PipelineConfig's fields), and [kubeflow].
SECTIONS = PipelineConfig.sections()
KUBEFLOW = 'kubeflow'
TABLES = dict(SECTIONS, **{KUBEFLOW: KubeflowConfig})
# Keys whose relative paths are relative to the file's folder (the fields' `path`).
PATH_KEYS = tuple(path for path, field in (
    [(field.name, field) for field in dataclasses.fields(PipelineConfig)]
    + [(f'{table}.{field.name}', field) for table, cls in TABLES.items()
       for field in dataclasses.fields(cls)]) if field.metadata.get('path'))
_TYPE_NAMES = {int: 'an integer', float: 'a number', str: 'a string', bool: 'true or false'}


def display_name(path: str) -> str:
    """How a file key is shown: 'train.train_steps' -> '[train] train_steps'."""
    section, _, field = path.rpartition('.')
    return f'[{section}] {field}' if section else field


def field_types() -> Dict[str, Any]:
    """Key path -> its type, for every key a file may set: the tables', then the top level's."""
    types = {f'{table}.{name}': hint for table, cls in SECTIONS.items()
             for name, hint in cls.file_keys().items()}
    types.update(PipelineConfig.file_keys())
    types.update({f'{KUBEFLOW}.{name}': hint
                  for name, hint in KubeflowConfig.file_keys().items()})
    return types


def coerce(value: Any, hint: Any, key: str) -> Any:
    """`value` (as TOML or argparse gives it) as the field type `hint`; ValueError naming key."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:  # Optional[X]: TOML has no null, so a value is always an X
        return coerce(value, next(a for a in args if a is not type(None)), key)
    if origin is tuple:
        variadic = len(args) == 2 and args[1] is Ellipsis
        if variadic and isinstance(value, Mapping):  # feature_types as a table: {col = "type"}
            value = list(value.items())
        if not isinstance(value, (list, tuple)) or (not variadic and len(value) != len(args)):
            size = 'a list' if variadic else f'a list of {len(args)}'
            raise ValueError(f'{key} must be {size}, got {value!r}')
        items = args[:1] * len(value) if variadic else args
        return tuple(coerce(v, a, key) for v, a in zip(value, items))
    if isinstance(value, bool) != (hint is bool):
        raise ValueError(f'{key} must be {_TYPE_NAMES.get(hint, hint)}, got {value!r}')
    if hint is float and isinstance(value, int):
        return float(value)
    if not isinstance(value, hint):
        raise ValueError(f'{key} must be {_TYPE_NAMES.get(hint, hint)}, got {value!r}')
    return value


def read(path: str) -> Dict[str, Any]:
    """The file's settings as flat overrides, type-checked; ValueError naming the file and key."""
    try:
        with open(path, 'rb') as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ValueError(f'--config-file {path}: {error.strerror}') from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f'--config-file {path}: not valid TOML: {error}') from None
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict) and key not in TABLES:
            raise ValueError(f'{path}: unknown table [{key}] (known: '
                             + ', '.join(f'[{s}]' for s in TABLES) + ')')
        if key in TABLES and isinstance(value, dict):
            flat.update({f'{key}.{name}': v for name, v in value.items()})
        else:
            flat[key] = value
    types = field_types()
    for key in flat:
        if key not in types:
            section = key.rpartition('.')[0]
            known = [k.rpartition('.')[2] for k in types if k.rpartition('.')[0] == section]
            raise ValueError(f'{path}: unknown key {display_name(key)} (known'
                             f'{f" in [{section}]" if section else " at the top"}: '
                             f'{", ".join(known)}; see config.example.toml)')
    overrides = typed(flat, {key: f'{path}: {display_name(key)}' for key in flat})
    folder = os.path.dirname(os.path.abspath(path))
    for key in PATH_KEYS:
        value = overrides.get(key)
        if value is not None and value != 'infer' and not is_uri(value):
            overrides[key] = os.path.join(folder, os.path.expanduser(value))
    return overrides


def kubeflow_table(overrides: Mapping[str, Any]) -> Dict[str, Any]:
    """The [kubeflow] settings of read()'s overrides, by bare key."""
    prefix = KUBEFLOW + '.'
    return {key[len(prefix):]: value for key, value in overrides.items()
            if key.startswith(prefix)}


def without_kubeflow(overrides: Mapping[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in overrides.items()
            if not key.startswith(KUBEFLOW + '.')}


def make(cls, fields: Mapping[str, Any], names: Mapping[str, str] = None):
    """cls(**fields), a validation message naming each field as the user wrote it."""
    try:
        return cls(**fields)
    except ValueError as error:
        raise ValueError(_rename(str(error), names or {})) from None


def typed(overrides: Mapping[str, Any], names: Mapping[str, str]) -> Dict[str, Any]:
    """Each override as its field's type (lists become tuples, ints floats where due)."""
    types = field_types()
    return {key: coerce(value, types[key], names.get(key, key))
            for key, value in overrides.items()}


def _rename(message: str, names: Mapping[str, str]) -> str:
    """The validation message with each overridden field called what the user wrote."""
    for path, name in names.items():
        field = path.rpartition('.')[2]
        message = re.sub(rf'(?<![\w-]){re.escape(field)}(?!\w)', name, message)
    return message


def apply(base: PipelineConfig, overrides: Mapping[str, Any],
          names: Mapping[str, str] = None) -> PipelineConfig:
    """`base` with the overridden fields replaced; ValueError in the user's own terms."""
    names = names or {}
    by_section: Dict[str, Dict[str, Any]] = {}
    for path, value in overrides.items():
        section, _, field = path.rpartition('.')
        by_section.setdefault(section, {})[field] = value
    try:
        changes = {section: dataclasses.replace(getattr(base, section), **fields)
                   for section, fields in by_section.items() if section}
        return dataclasses.replace(base, **by_section.get('', {}), **changes)
    except ValueError as error:
        raise ValueError(_rename(str(error), names)) from None
