"""The Beam graph of ingestion: list the input, convert and validate, split, write shards.

No TFX imports: the executor builds a pipeline with TFX's Beam options and calls
`build_ingest`, and tests and the benchmark run the same graph on a plain `beam.Pipeline`.

Two sources share everything after conversion: image folders (one file = one record) and CSV
files (one row = one record; a quoted field may span lines). Every record found ends in
exactly one place, a split's shard or the quarantine, and is counted (Beam metrics in the
`ingest` namespace): `found`, `written_<split>`, `rejected` and `rejected_<reason>`, so
`found == written + rejected` and the rejections by reason add up to `rejected`. CSV columns
have counters of their own (stats.py): empty numeric values, which are kept and imputed, and
rejections by reason and column.
"""
import dataclasses
import json
import os
from typing import Dict, Iterator, Optional, Tuple

import apache_beam as beam
import tensorflow as tf

from components.ingest import (convert, csv_records, files, image_formats, images, records, stats,
                               tabular, writer)
from components.ingest.stats import read_counts  # noqa: F401 (callers read counts from here)

QUARANTINE_TAG = convert.QUARANTINE_TAG
NUMERIC_TAG = convert.NUMERIC_TAG
SOURCES = ('images', 'csv')
TEMP_DIR = '.ingest-tmp'          # per-bundle part files; removed when the shards are written
TABLE_FILE = 'table.json'        # CSV only: class names and numeric moments, read by the executor


@dataclasses.dataclass(frozen=True)
class IngestOptions:
    """What the Beam graph needs; validated here so a bad value fails before Beam starts."""
    root: str                       # images: the folder of class folders; csv: of CSV files
    classes: tuple = ()             # images: sorted class names; the label is the index
    source: str = 'images'
    input_base: str = ''            # symlinks must resolve inside it ('' = root)
    train_percent: int = 80
    num_shards: int = 2             # shards of the train split (and of eval unless eval_shards)
    eval_shards: int = 0            # 0: same as num_shards
    compress: bool = True           # GZIP'd TFRecords
    split_key: str = 'source'       # 'source' (path, or CSV file + line), 'content', a CSV column
    image_size: Optional[Tuple[int, int]] = None   # (height, width) to resize to; None keeps
    image_storage: str = 'encoded'  # or 'raw' uint8 pixels
    channels: int = 0               # channels of resized or raw images: 1, 3, 0 = each its own
    table: Optional[tabular.Table] = None          # csv: columns, label and types
    csv_files: tuple = ()           # csv: the files, all with the table's header
    max_image_pixels: int = image_formats.DEFAULT_MAX_IMAGE_PIXELS  # larger: too_large
    convert_formats: tuple = ()     # formats whose lossy conversion to PNG is allowed
    encoding: str = csv_records.DEFAULT_ENCODING    # csv: of files without a BOM
    max_csv_record_bytes: int = csv_records.DEFAULT_MAX_RECORD_BYTES  # larger: too_large
    # Input to score (runner.py --score), not to train on: images sit directly in `root` (no
    # class folders), a CSV needs no label column; Examples carry no label.
    unlabelled: bool = False

    def __post_init__(self):
        checks = [
            (0 < self.train_percent < 100,
             f'train_percent must be in 1..99, got {self.train_percent}'),
            (self.num_shards >= 1 and self.eval_shards >= 0,
             f'num_shards must be >= 1, got {self.num_shards} (eval {self.eval_shards})'),
            (self.source in SOURCES, f'source must be one of {SOURCES}, got {self.source!r}'),
            (self.source != 'images' or bool(self.classes) != self.unlabelled,
             'classes must not be empty (and are none for unlabelled images)'),
            (self.source != 'csv' or (self.table is not None and bool(self.csv_files)),
             'a csv source needs a table and csv_files'),
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
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def shards(self) -> Dict[str, int]:
        return {'train': self.num_shards, 'eval': self.eval_shards or self.num_shards}


def finalize(output_dir: str, options: IngestOptions) -> Optional[dict]:
    """After the run: removes the part files, gives every split its N shards (an empty file for
    a shard no record hashed to), and returns the CSV table summary (None for images)."""
    temp_dir = os.path.join(output_dir, TEMP_DIR)
    table = None
    if options.source == 'csv':
        with tf.io.gfile.GFile(os.path.join(temp_dir, TABLE_FILE)) as handle:
            table = json.load(handle)
    if tf.io.gfile.exists(temp_dir):
        tf.io.gfile.rmtree(temp_dir)
    writer.fill_empty_shards(output_dir, options.shards(), options.compress)
    return table


def _valid_label(element: csv_records.Record, table: tabular.Table) -> Iterator[str]:
    if element[2] is None and element[1].strip():
        try:
            yield tabular.row_values(tabular.parse_line(element[1]), table)[1]
        except records.BadRecord:
            pass  # counted and quarantined by the conversion pass


def _read_records(pipeline: beam.Pipeline, options: IngestOptions, name: str) -> beam.PCollection:
    """(path, record text, problem) of every CSV record but the headers. Big files are cut
    into ranges on record boundaries (csv_records.py), spread over workers and streamed."""
    paths = [files.to_beam(path) for path in options.csv_files]
    return (pipeline | f'{name}Files' >> beam.Create(paths)
            | f'{name}Ranges' >> beam.FlatMap(csv_records.plan_ranges, options.encoding)
            | f'{name}Spread' >> beam.Reshuffle()
            | f'{name}Records' >> beam.FlatMap(csv_records.read_range,
                                               options.max_csv_record_bytes))


def build_ingest(pipeline: beam.Pipeline, options: IngestOptions, output_dir: str) -> None:
    """Adds the ingestion graph to `pipeline`, writing `Split-<name>/` shards and the
    quarantine under output_dir."""
    temp_dir = os.path.join(output_dir, TEMP_DIR)
    if options.source == 'images':
        # The files are listed inside the graph, by unit of a class folder (Create
        # redistributes the units over workers), and fused with the conversion: file names are
        # never a collection that the runner would hold or ship between stages.
        outputs = (
            pipeline
            # Unlabelled: one unit, '' (the images sit directly in root).
            | 'ListingUnits' >> beam.Create(convert.listing_units(
                ('',) if options.unlabelled else options.classes))
            | 'ListFiles' >> beam.FlatMap(
                lambda unit: convert.chunks(convert.list_unit(unit, options.root)))
            | 'ToExamples' >> beam.ParDo(convert.ImagesToExamples(options, temp_dir)).with_outputs(
                QUARANTINE_TAG, main='parts'))
    else:
        # Labels are read in a pass of their own: feeding the same lines to both the label
        # side input and the conversion would make the runner hold every line in memory.
        if options.unlabelled:
            class_names = pipeline | 'NoLabels' >> beam.Create([[]])
        else:
            class_names = (
                _read_records(pipeline, options, 'Label')
                | 'ValidLabels' >> beam.FlatMap(_valid_label, options.table)
                | 'DistinctLabels' >> beam.Distinct()
                | 'SortedLabels' >> beam.combiners.ToList() | beam.Map(sorted))
        outputs = (
            _read_records(pipeline, options, 'Csv')
            | 'ToExample' >> beam.ParDo(
                convert.RowToExample(options, temp_dir), beam.pvalue.AsSingleton(class_names),
            ).with_outputs(QUARANTINE_TAG, NUMERIC_TAG, main='parts'))
        numeric = tabular.numeric_columns(options.table)
        _ = (outputs[NUMERIC_TAG]
             | 'Moments' >> beam.CombineGlobally(stats.Moments(len(numeric)))
             | 'TableJson' >> beam.Map(
                 lambda moments, names: json.dumps({'class_names': names, 'moments': dict(
                     zip(numeric, moments))}), names=beam.pvalue.AsSingleton(class_names))
             | 'WriteTable' >> beam.io.WriteToText(
                 os.path.join(output_dir, TEMP_DIR, TABLE_FILE), num_shards=1,
                 shard_name_template=''))
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
