"""The ingestion sources by name: which class reads each `--source` value, loaded on first use.

No TFX, Beam or TensorFlow imports: the config and runner.py take the names from here (flag
choices, checks) without loading any reader. A source is a class implementing
`source.Source` (source.py); adding one is its module and one line in `_IMPLEMENTATIONS`.
"""
import importlib
from typing import Dict

# name -> 'module:class'. The order is the order of the flag's choices.
_IMPLEMENTATIONS = {
    'images': 'components.ingest.graph.image_source:ImageSource',
    'csv': 'components.ingest.graph.csv_source:CsvSource',
    'parquet': 'components.ingest.graph.parquet_source:ParquetSource',
}
NAMES = tuple(_IMPLEMENTATIONS)
_LOADED: Dict[str, object] = {}


def get(name: str):
    """The Source reading `name` (one shared instance: sources hold no state)."""
    if name not in _IMPLEMENTATIONS:
        raise ValueError(f'source must be one of {NAMES}, got {name!r}')
    if name not in _LOADED:
        module, cls = _IMPLEMENTATIONS[name].split(':')
        _LOADED[name] = getattr(importlib.import_module(module), cls)()
    return _LOADED[name]
