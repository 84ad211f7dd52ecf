"""IngestParams: every setting of ingestion, spelled once (core/settings.py).

The config file's [ingest] table, the data flags of runner.py, the ImageExampleGen's execution
properties (component.py builds its spec from `property_types()`) and what the executor reads
back (`from_properties`, spans/listing.py) are these fields. A few are the pipeline's to set,
not the user's (key=False): `channels` and `min_train_shards` follow the training settings,
`unlabelled` is the scoring pipeline's. `same_records=True` marks the settings that do not change
the records ingestion writes for the same files: every other one is part of the span index's key
(spans/span_index.py), so changing it ingests a span again. No TFX imports.
"""
import dataclasses
from typing import ClassVar, Optional, Tuple

from core.settings import Settings, setting
from components.ingest.formats import csv_records, image_formats
from components.ingest.graph import registry

STORAGES = ('encoded', 'raw')   # the file's bytes, or decoded uint8 pixels
_KINDS = ('numeric', 'categorical')


def _at_least(low: int, rule: str = ''):
    return lambda value: value >= low, rule or f'must be >= {low}'


@dataclasses.dataclass(frozen=True)
class IngestParams(Settings):
    """The source and how it becomes Examples. The input base may hold span-<N>/ folders; the
    latest span is ingested, and the model trains on the last `window` spans (docs/data.md,
    Spans and the training window)."""
    GROUP: ClassVar[str] = 'data'
    source: str = setting(
        'images', 'images: one sub-folder per class; csv: CSV files with a header and a label '
        'column; parquet: Parquet files with a label column (docs/data.md)', '--source',
        choices=registry.NAMES,
        check=(lambda source: source in registry.NAMES, f'must be one of {registry.NAMES}'))
    data_dir: str = setting(
        '', 'input base (a URI for Kubeflow); may hold span-<N>/ folders', '--data',
        default_text='the embedded digits, or the embedded wine table for --source csv; needed '
        'for parquet',
        path=True, property='input_base', same_records=True)
    label_column: str = setting('label', 'csv, parquet: the column holding the class',
                                '--label-column', metavar='NAME')
    # Spans trained and evaluated on: the newest and up to window - 1 before it (span-<N>/).
    window: int = setting(
        3, 'with span-<N>/ folders: train and evaluate on the last N spans; spans ingested '
        'before are not converted again', '--window', metavar='N',
        check=(lambda n: isinstance(n, int) and n >= 1, 'must be >= 1 (the spans trained on)'),
        same_records=True)
    # Checked with `unlabelled` (below): the scoring pipeline never stops, 1.0.
    max_rejected_fraction: float = setting(
        0.01, 'stop when more than this share of records is rejected', '--max-rejected-fraction',
        metavar='F', same_records=True)
    # Hostile input (docs/data.md): limits that quarantine instead of crashing.
    encoding: str = setting(
        csv_records.DEFAULT_ENCODING, 'csv: encoding of files without a byte-order mark, e.g. '
        'latin-1, cp1252', '--encoding', metavar='CODEC',
        default_text=f'{csv_records.DEFAULT_ENCODING}; UTF-8 and UTF-16 BOMs are honoured')
    max_image_pixels: int = setting(
        image_formats.DEFAULT_MAX_IMAGE_PIXELS, 'quarantine images with more pixels (as '
        'too_large), judged from the header', '--max-image-pixels', metavar='N',
        default_text=f'{image_formats.DEFAULT_MAX_IMAGE_PIXELS:,}', check=_at_least(1))
    convert_formats: Tuple[str, ...] = setting(
        (), 'image formats converted to PNG even when that loses something, e.g. TIFF,WEBP',
        '--convert-formats', metavar='FMT,...', parse='names',
        default_text='none; lossless conversions always happen')
    max_csv_record_bytes: int = setting(
        csv_records.DEFAULT_MAX_RECORD_BYTES, 'quarantine longer CSV records (as too_large)',
        '--max-csv-record-bytes', metavar='N',
        default_text=f'{csv_records.DEFAULT_MAX_RECORD_BYTES:,}', check=_at_least(1))
    # Config file only (no flag):
    # 0: the share is chosen per span from its record count (formats/rules.py train_share),
    # before Beam starts; spans/listing.py says what it chose and why. Not the default: in a
    # timed Fashion-MNIST run the 7,000 images it adds to training cost epochs and gained no
    # accuracy (docs/benchmarks.md, "An eval split sized from the data").
    train_percent: int = setting(
        80, 'the rest is the eval split, by a hash of the split key; 0 = from the data: 80, or '
        'more when 20% of the records is over max_eval_records',
        check=(lambda p: 0 <= p < 100, 'must be 0 (from the data) or in 1..99'))
    # A paired comparison of two models on 5,000 examples (the no-regression rule,
    # components/evaluate/noise.py) has a 95% interval of about +-0.6 points when they
    # disagree on one example in twenty; MNIST's own split holds out 5,000 of 60,000.
    max_eval_records: int = setting(
        5_000, 'with train_percent 0: the most records the eval split holds when 20% is more',
        check=_at_least(1))
    num_shards: int = setting(2, 'TFRecord files per split; 0 = about 128 MB each',
                              check=_at_least(0, 'must be >= 0 (0 = automatic)'))
    compress: bool = setting(True, 'GZIP the TFRecords')
    split_key: str = setting(
        'source', 'hashed to split: source (path, CSV row) | content | a column',
        check=(bool, 'must not be empty'))
    image_size: Optional[Tuple[int, int]] = setting(
        None, 'resize images to (height, width) at ingestion',
        check=(lambda size: size is None or (len(size) == 2 and min(size) >= 1),
               'must be None or (height, width) >= 1'))
    image_storage: str = setting(
        'encoded', 'encoded: the file\'s bytes; raw: decoded uint8 pixels',
        check=(lambda storage: storage in STORAGES, 'must be "encoded" or "raw"'))
    # csv: (column, 'numeric' | 'categorical') pairs; columns not given are inferred.
    feature_types: Tuple[Tuple[str, str], ...] = setting(
        (), 'csv: override the inferred numeric|categorical', mapping=True,
        check=(lambda pairs: all(kind in _KINDS for _, kind in pairs),
               'must map columns to numeric|categorical'))
    drop_columns: Tuple[str, ...] = setting(
        (), 'csv: columns that are neither features nor label')
    # The pipeline's (key=False): channels of resized or raw images, 1, 3 or 0 = each image its
    # own; 0 unless training asks for a number (the trainer infers its input from the data as
    # stored, core/image_shape.py), so that the component alone converts nothing.
    channels: int = setting(
        0, 'channels of resized or raw images; 0 = each its own', key=False,
        check=(lambda n: n in (0, 1, 3), 'must be 1, 3 or 0 (each image its own)'))
    # With num_shards 0: at least this many train shards (one per training worker).
    min_train_shards: int = setting(1, 'least train shards', key=False, check=_at_least(1))
    # Input to score (runner.py --score): images directly in the folder, or a CSV with no label
    # column; Examples without a label (pipeline/definition/scoring.py).
    unlabelled: bool = setting(False, 'input to score, not to train on', key=False,
                               same_records=True)

    def _checks(self):
        yield (0.0 <= self.max_rejected_fraction < 1.0 or (
            self.unlabelled and self.max_rejected_fraction == 1.0),
               f'max_rejected_fraction must be in [0, 1), got {self.max_rejected_fraction}')
        yield (self.label_column not in self.drop_columns,
               f'label_column {self.label_column!r} cannot be in drop_columns')
        unknown = set(self.convert_formats) - image_formats.CONVERTED_FORMATS
        yield (not unknown, f'convert_formats {sorted(unknown)} are not among the formats '
               f'converted to PNG: {sorted(image_formats.CONVERTED_FORMATS)}')
        yield (csv_records.known_encoding(self.encoding),
               f'encoding {self.encoding!r} is not a known codec; use a Python codec name such '
               'as utf-8, latin-1, cp1252, utf-16')



def record_parameters() -> Tuple[str, ...]:
    """The execution properties that change the records ingestion writes (spans/span_index.py)."""
    return tuple(field.metadata.get('property') or field.name
                 for field in dataclasses.fields(IngestParams)
                 if not field.metadata.get('same_records'))
