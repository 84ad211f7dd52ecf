"""Settings as data: one frozen dataclass per stage, each field declared once with everything
that carries it to the user and to the pipeline.

A stage keeps its settings class beside its code (training/params.py, components/ingest/graph/
params.py, ...) as a subclass of `Settings`, every field made by `setting(...)`:
- `help` (every field): one line for --help and docs/cli.md; runner.py appends "(default: ...)"
  written from the field's default, or from `default_text` where that is a sentence
  (`default_text=None`: none in the help, docs/cli.md shows the value; '': none at all);
- `flag` (optional): runner.py's command-line flag, with argparse's `metavar` and `choices`;
  `parse` names a parser of runner.py's ('size', 'minutes', 'names', 'words'), else the
  field's type parses; `group` is the --help group it is listed in;
- the TOML key: the field's name, in the table the class has in the config (pipeline/
  config_file.py); `key=False` keeps a field out of the file; `path=True` makes a relative
  path in a file relative to the file's folder;
- the stored property: the execution property recording it in ML Metadata, under the field's
  name or `property`; `properties` spreads a (height, width) pair over two integer properties;
  `mapping=True` stores pairs as a JSON object; `property=False` records nothing;
- `check`: (predicate, rule), refused with "<name> <rule>, got <value>"; checks that need
  several fields are the class's `_checks()`, (ok, message) pairs.
A component builds its spec from `property_types()`, its properties with `to_properties()`,
and its executor reads them back with `from_properties()`, so a new setting is one field in
its class and the code that uses it. No TFX or pipeline imports: the config, the command line,
the training library and the stages all import this.
"""
import dataclasses
import json
import typing
from typing import Any, Callable, ClassVar, Dict, Iterator, List, Optional, Tuple


def setting(default=dataclasses.MISSING, help: str = '', flag: Optional[str] = None,
            check: Optional[Tuple[Callable[[Any], bool], str]] = None, **options):
    """A field with its metadata (see the module docstring); options: metavar, choices, parse,
    group, default_text, key, path, property, properties, mapping."""
    kind = 'default_factory' if isinstance(default, (list, dict)) else 'default'
    values = {} if default is dataclasses.MISSING else {kind: default}
    return dataclasses.field(**values, metadata=dict(help=help, flag=flag, check=check,
                                                     **options))


def require(condition: bool, message: str) -> None:
    """A check outside a settings class: ValueError(message) unless condition."""
    if not condition:
        raise ValueError(message)


def dest(flag: str) -> str:
    """argparse's attribute name of a flag: '--push-mode' -> 'push_mode'."""
    return flag.lstrip('-').replace('-', '_')


def hint(cls, name: str) -> Any:
    """The field's type, Optional[X] as X."""
    found = typing.get_type_hints(cls)[name]
    if typing.get_origin(found) is typing.Union:
        found = next(a for a in typing.get_args(found) if a is not type(None))
    return found


def default_text(field: dataclasses.Field) -> Optional[str]:
    """What --help and docs/cli.md say the default is, or None to say nothing: a field without
    a default, or whose default is None or '' (unset), says nothing unless it has a text."""
    if 'default_text' in field.metadata:
        return field.metadata['default_text']
    value = field.default
    if value is dataclasses.MISSING or value is None or value == '':
        return None
    if isinstance(value, bool):
        return 'on' if value else 'off'
    if isinstance(value, float):
        return f'{value:g}'
    return str(value)


def options(cls, field: dataclasses.Field, parsers: Dict[str, Callable[[str], Any]],
            text: Optional[str] = None) -> Dict[str, Any]:
    """argparse's keywords for the field's flag: type, metavar and choices from the field, help
    with "(default: ...)" from `text` or its default; a bool flag sets the opposite of the
    default, and a flag not given is None (the config file or the default decides)."""
    meta, kind, text = field.metadata, hint(cls, field.name), text or default_text(field)
    found = dict(default=None, help=(meta['help'] + (
        f' (default: {text})' if text else '')).replace('%', '%%'))
    if kind is bool:
        return dict(found, action='store_const', const=not field.default)
    return dict(found, type=parsers.get(meta.get('parse'), kind),
                **{key: meta[key] for key in ('metavar', 'choices', 'nargs', 'const')
                   if key in meta})


class Settings:
    """Base of the settings dataclasses: runs every field's check, then the class's own."""
    GROUP: ClassVar[str] = ''   # the --help group of the flags whose field names none

    @classmethod
    def group(cls, field: dataclasses.Field) -> str:
        return field.metadata.get('group') or cls.GROUP

    def __post_init__(self):
        for field in dataclasses.fields(self):
            check = field.metadata.get('check')
            value = getattr(self, field.name)
            if check and not check[0](value):
                raise ValueError(f'{field.name} {check[1]}, got {value!r}')
        for ok, message in self._checks():
            if not ok:
                raise ValueError(message)

    def _checks(self) -> Iterator[Tuple[bool, str]]:
        return iter(())

    @classmethod
    def flagged(cls) -> List[dataclasses.Field]:
        return [field for field in dataclasses.fields(cls) if field.metadata.get('flag')]

    @classmethod
    def file_keys(cls) -> Dict[str, Any]:
        """Config-file key -> its type, for the fields a file may set."""
        hints = typing.get_type_hints(cls)
        return {field.name: hints[field.name] for field in dataclasses.fields(cls)
                if field.metadata.get('key', True) and not _is_settings(hints[field.name])}

    # -- As execution properties (ML Metadata): int, float and str only.

    @classmethod
    def property_types(cls) -> Dict[str, type]:
        """Execution property name -> its type, for every recorded field."""
        return {name: kind for field in _recorded(cls)
                for name, kind in _codec(cls, field)[0].items()}

    def to_properties(self) -> Dict[str, Any]:
        return {name: value for field in _recorded(type(self))
                for name, value in _codec(type(self), field)[1](
                    getattr(self, field.name)).items()}

    @classmethod
    def from_properties(cls, properties: Dict[str, Any], **values):
        """The settings an execution recorded (and `values` for fields recorded elsewhere);
        a property absent (an execution stored by a pipeline that did not record the field) keeps
        the field's default, so stored runs stay readable."""
        for field in _recorded(cls):
            names, _, decode = _codec(cls, field)
            if all(properties.get(name) is not None for name in names):
                values.setdefault(field.name, decode([properties[name] for name in names]))
        return cls(**values)


def _is_settings(kind) -> bool:
    return isinstance(kind, type) and issubclass(kind, Settings)


def _recorded(cls) -> List[dataclasses.Field]:
    return [field for field in dataclasses.fields(cls)
            if field.metadata.get('property', True) is not False]


def _codec(cls, field):
    """({property: type}, encode(value) -> {property: value}, decode([values]) -> value)."""
    raw = typing.get_type_hints(cls)[field.name]
    optional = typing.get_origin(raw) is typing.Union
    kind = hint(cls, field.name)
    pair = field.metadata.get('properties')
    if pair:  # (height, width) as two ints, 0 = None
        return (dict.fromkeys(pair, int),
                lambda value: dict(zip(pair, value or (0, 0))),
                lambda values: tuple(int(v) for v in values) if any(values) else None)
    name = field.metadata.get('property') or field.name
    if field.metadata.get('mapping'):  # pairs as a JSON object, sorted by key
        return ({name: str}, lambda value: {name: json.dumps(dict(sorted(value)))},
                lambda values: tuple(json.loads(values[0] or '{}').items()))
    if typing.get_origin(kind) is tuple:  # a list as JSON; None (when optional) as ''
        return ({name: str},
                lambda value: {name: '' if value is None else json.dumps(list(value))},
                lambda values: (None if optional and not values[0]
                                else tuple(json.loads(values[0] or '[]'))))
    if kind is bool:
        return {name: int}, lambda value: {name: int(value)}, lambda v: bool(int(v[0]))
    empty = kind()  # None is recorded as 0 or ''
    return ({name: kind}, lambda value: {name: empty if value is None else kind(value)},
            lambda values: None if optional and values[0] == empty else kind(values[0]))
