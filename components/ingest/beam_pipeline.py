"""The Beam graph of ingestion: list the input, convert and validate, split, write shards.

No TFX imports: the executor builds a pipeline with TFX's Beam options and calls
`build_ingest`, and tests and the benchmark run the same graph on a plain `beam.Pipeline`.

Every source (registry.py: image folders, one file = one record; CSV and Parquet tables, one
row = one record) shares everything after its conversion. Every record found ends in exactly
one place, a split's shard or the quarantine, and is counted (Beam metrics in the `ingest`
namespace): `found`, `written_<split>`, `rejected` and `rejected_<reason>`, so
`found == written + rejected` and the rejections by reason add up to `rejected`. Table columns
have counters of their own (stats.py): empty numeric values, which are kept and imputed, and
rejections by reason and column.
"""
import dataclasses
import os
from typing import Dict, Optional, Tuple

import apache_beam as beam
import tensorflow as tf

from components.ingest import convert, csv_records, image_formats, images, records, registry
from components.ingest import tabular, writer
from components.ingest.stats import read_counts  # noqa: F401 (callers read counts from here)

QUARANTINE_TAG = convert.QUARANTINE_TAG
NUMERIC_TAG = convert.NUMERIC_TAG
TEMP_DIR = '.ingest-tmp'          # per-bundle part files; removed when the shards are written


@dataclasses.dataclass(frozen=True)
class IngestOptions:
    """What the Beam graph needs; validated here so a bad value fails before Beam starts."""
    root: str                       # images: the folder of class folders; tables: of the files
    classes: tuple = ()             # images: sorted class names; the label is the index
    source: str = 'images'
    input_base: str = ''            # symlinks must resolve inside it ('' = root)
    train_percent: int = 80
    num_shards: int = 2             # shards of the train split (and of eval unless eval_shards)
    eval_shards: int = 0            # 0: same as num_shards
    compress: bool = True           # GZIP'd TFRecords
    split_key: str = 'source'       # 'source' (path, or file + row), 'content', a table column
    image_size: Optional[Tuple[int, int]] = None   # (height, width) to resize to; None keeps
    image_storage: str = 'encoded'  # or 'raw' uint8 pixels
    channels: int = 0               # channels of resized or raw images: 1, 3, 0 = each its own
    table: Optional[tabular.Table] = None          # tables: columns, label and types
    files: tuple = ()               # tables: the files, all with the table's columns
    max_image_pixels: int = image_formats.DEFAULT_MAX_IMAGE_PIXELS  # larger: too_large
    convert_formats: tuple = ()     # formats whose lossy conversion to PNG is allowed
    encoding: str = csv_records.DEFAULT_ENCODING    # csv: of files without a BOM
    max_csv_record_bytes: int = csv_records.DEFAULT_MAX_RECORD_BYTES  # larger: too_large
    # Input to score (runner.py --score), not to train on: images sit directly in `root` (no
    # class folders), a table needs no label column; Examples carry no label.
    unlabelled: bool = False
    # `files`, by the name CSV callers give it.
    csv_files: dataclasses.InitVar[tuple] = ()

    def __post_init__(self, csv_files: tuple):
        if csv_files and not self.files:
            object.__setattr__(self, 'files', tuple(csv_files))
        checks = [
            (0 < self.train_percent < 100,
             f'train_percent must be in 1..99, got {self.train_percent}'),
            (self.num_shards >= 1 and self.eval_shards >= 0,
             f'num_shards must be >= 1, got {self.num_shards} (eval {self.eval_shards})'),
            (self.source in registry.NAMES,
             f'source must be one of {registry.NAMES}, got {self.source!r}'),
            (self.image_storage in images.STORAGES,
             f'image_storage must be one of {images.STORAGES}, got {self.image_storage!r}'),
            (self.max_image_pixels >= 1 and self.max_csv_record_bytes >= 1,
             'max_image_pixels and max_csv_record_bytes must be >= 1'),
            (self.channels in (0, 1, 3),
             f'channels must be 1, 3 or 0 (each image its own), got {self.channels}'),
            (self.split_key in ('source', 'content') or (
                self.table is not None and self.split_key in self.table.columns),
             f'split_key must be "source", "content" or a CSV column, got {self.split_key!r}'),
        ]
        if self.source in registry.NAMES:
            checks += registry.get(self.source).check(self)
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def shards(self) -> Dict[str, int]:
        return {'train': self.num_shards, 'eval': self.eval_shards or self.num_shards}


def finalize(output_dir: str, options: IngestOptions) -> Optional[dict]:
    """After the run: removes the part files, gives every split its N shards (an empty file for
    a shard no record hashed to), and returns what the source wrote for the executor (a
    table's class names and moments; None for images)."""
    temp_dir = os.path.join(output_dir, TEMP_DIR)
    summary = registry.get(options.source).finalize(temp_dir)
    if tf.io.gfile.exists(temp_dir):
        tf.io.gfile.rmtree(temp_dir)
    writer.fill_empty_shards(output_dir, options.shards(), options.compress)
    return summary


def build_ingest(pipeline: beam.Pipeline, options: IngestOptions, output_dir: str) -> None:
    """Adds the ingestion graph to `pipeline`, writing `Split-<name>/` shards and the
    quarantine under output_dir."""
    temp_dir = os.path.join(output_dir, TEMP_DIR)
    outputs = registry.get(options.source).read(pipeline, options, temp_dir)
    writer.write_shards(outputs['parts'], output_dir, options.shards(), options.compress)
    _ = (outputs[QUARANTINE_TAG]
         | 'WriteQuarantine' >> beam.io.WriteToText(
             os.path.join(output_dir, records.QUARANTINE_DIR,
                          records.QUARANTINE_FILE.rsplit('.', 1)[0]),
             file_name_suffix='.jsonl', num_shards=1, shard_name_template='',
             # No file for a clean input: Beam's S3 writer cannot write an empty one (it
             # completes a multipart upload without parts, which S3 refuses), and readers
             # take a missing quarantine as an empty one (checks.read_quarantine).
             skip_if_empty=True))
