"""The ingestion sources by name: which class reads each `--source` value, loaded on first use.

No TFX, Beam or TensorFlow imports: the config and runner.py take the names from here (flag
choices, checks) without loading any reader. A source is a class implementing
`source.Source` (source.py); adding one is its module and one line in `_SOURCES`.
"""
from core import plugins

# name -> 'module:class'. The order is the order of the flag's choices.
_SOURCES = plugins.Registry('source', {
    'images': 'components.ingest.graph.image_source:ImageSource',
    'csv': 'components.ingest.graph.csv_source:CsvSource',
    'parquet': 'components.ingest.graph.parquet_source:ParquetSource',
})
NAMES = _SOURCES.names


def get(name: str):
    """The Source reading `name` (one shared instance: sources hold no state)."""
    return _SOURCES.get(name)
