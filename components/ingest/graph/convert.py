"""The converting DoFns of ingestion: one listed file or table row in, one Example or rejection.

No TFX imports. Each DoFn counts what it sees (Beam counters in the `ingest` namespace), writes
every valid Example straight to its part file (writer.PartWriters) and emits only quarantine
lines, and when a bundle finishes, its part files (and for tables, its numeric moments).
"""
import hashlib
import os
import zlib
from typing import Iterable, Iterator, List, Optional, Tuple

from absl import logging
import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms import window
import tensorflow as tf

from core import features
from components.ingest.formats import files, images, rules, table_rows
from components.ingest.graph import stats, writer

QUARANTINE_TAG = 'quarantine'
NUMERIC_TAG = 'numeric'
# Files per call of the converting DoFn. Per-element overhead in Beam's Python runners is
# several times the cost of decoding a small image; chunks amortise it.
CHUNK = 100
# Listing units per class folder (see listing_units): enough to balance a few big classes over
# the workers; each part lists the folder once more, which is cheap next to reading the files.
LISTING_PARTS = 8


def listing_units(classes: Iterable[str],
                  parts: int = LISTING_PARTS) -> List[Tuple[str, int, int]]:
    """The work units of image ingestion: (class name, part, parts) for every class.

    Units, not files, are what the graph is built from and what Beam's runner holds and
    redistributes: the file names stay inside the worker that lists them, so the runner's
    memory does not grow with the file count. Several parts per class spread one big class
    over workers.
    """
    return [(name, part, parts) for name in classes for part in range(parts)]


def list_unit(unit: Tuple[str, int, int], root: str) -> Iterator[str]:
    """Yields the non-hidden entries of one class folder that belong to this unit's part.

    Which part an entry belongs to is a stable hash of its name, so every entry is in exactly
    one part, whichever worker lists it and when. Everything listed is counted downstream. A
    plain directory listing is used rather than a glob match because file-system matchers
    silently drop entries they cannot stat (a dangling symlink, for example); here such an
    entry is listed, fails to read, and is quarantined with the reason, so nothing disappears
    without a trace. Local folders are scanned as a stream; tf.io.gfile lists gs:// and
    hdfs:// ones.
    """
    class_name, part, parts = unit
    folder = os.path.join(root, class_name)
    if '://' in folder:
        names = (name.rstrip('/') for name in tf.io.gfile.listdir(folder))
    else:
        names = (entry.name for entry in os.scandir(folder))
    for name in names:
        # .DS_Store and editor droppings are not data
        # A name's bytes, whatever they are: undecodable ones were listed as surrogates.
        if not name.startswith('.') and zlib.crc32(rules.name_bytes(name)) % parts == part:
            yield files.to_beam(os.path.join(folder, name))


def chunks(paths: Iterable[str], size: int = CHUNK) -> Iterator[List[str]]:
    """Groups listed paths into lists of `size`: one call of the converting DoFn per chunk."""
    chunk = []
    for path in paths:
        chunk.append(path)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class _Convert(beam.DoFn):
    """Base of both sources: counting, quarantining, and writing each Example to its part file.

    Records are written here, not emitted (see writer.py); the outputs are the quarantine lines
    and, when a bundle finishes, its part files (and, for tables, its numeric moments).
    """

    def __init__(self, options, temp_dir: str):  # options: beam_pipeline.IngestOptions
        self._options = options
        self._shards = options.shards()
        self._temp_dir = temp_dir

    def setup(self):
        self._counters = {}

    def start_bundle(self):
        self._parts = writer.PartWriters(self._temp_dir)

    def finish_bundle(self) -> Iterator:
        yield from self._parts.finished()

    def _count(self, name: str, namespace: str = stats.METRICS_NAMESPACE) -> None:
        if (namespace, name) not in self._counters:
            self._counters[(namespace, name)] = Metrics.counter(namespace, name)
        self._counters[(namespace, name)].inc()

    def _reject(self, source: str, error: rules.BadRecord, raw: Optional[str] = None):
        self._count('rejected')
        self._count(f'rejected_{error.reason}')
        if error.column is not None:
            self._count(stats.rejected_column_key(error.reason, error.column),
                        stats.REJECTED_COLUMN_NAMESPACE)
        return beam.pvalue.TaggedOutput(QUARANTINE_TAG, rules.quarantine_line(source, error, raw))

    def _write(self, key: str, example: tf.train.Example) -> str:
        """Writes the Example to the split and shard its key hashes to; returns the split."""
        split = rules.split_of(key, self._options.train_percent)
        self._count(f'written_{split}')
        self._parts.write(split, rules.shard_of(key, self._shards[split]),
                          example.SerializeToString())
        return split


class ImagesToExamples(_Convert):
    """Reads a chunk of listed files; writes each one's Example, or emits a quarantine line."""

    def setup(self):
        super().setup()
        self._index = images.class_index(list(self._options.classes))
        self._base = self._options.input_base or self._options.root
        self._shape_counters = {}

    def _count_shape(self, info: images.ImageInfo, stored: images.Stored) -> None:
        """Counts a train image's stored size and mode, and what ingestion changed
        (stats.read_image_shapes reads them): counters aggregate the same whatever the
        runner's parallelism, and need no extra pass."""
        flags = {'color': stored.color, 'grayscaled': info.color and not stored.color,
                 'resized': (info.height, info.width) != (stored.height, stored.width)}
        names = [f'size_{stored.height}x{stored.width}', f'mode_{stored.mode}'] + [
            name for name, flag in flags.items() if flag]
        for name in names:
            if name not in self._shape_counters:
                self._shape_counters[name] = Metrics.counter(stats.IMAGES_NAMESPACE, name)
            self._shape_counters[name].inc()

    def process(self, paths: List[str]) -> Iterator:
        for path in paths:
            rejection = self._convert(files.from_beam(path))
            if rejection is not None:
                yield rejection

    def _convert(self, path: str):
        opts = self._options
        relative = images.relative_path(path, opts.root)
        self._count('found')
        try:
            data = images.read_file(path, self._base)
            info = images.inspect_image(data, opts.max_image_pixels, opts.convert_formats)
            stored = images.prepare(data, info, opts.image_size, opts.image_storage,
                                    opts.channels)
        except rules.BadRecord as error:
            return self._reject(path, error)
        if info.converted:  # counted on the Examples (num_converted), named in the log
            self._count('converted')
            logging.info('Converted %s from %s (mode %s) to PNG (mode %s)',
                         rules.display_name(relative), info.format, info.mode, stored.mode)
        label_name = None if opts.unlabelled else relative.split('/', 1)[0]
        example = features.make_example(
            encoded=stored.payload, label=None if label_name is None else self._index[label_name],
            label_name=label_name,
            height=stored.height, width=stored.width, source_path=relative,
            channels=stored.channels)
        split = self._write(hashlib.sha256(data).hexdigest() if opts.split_key == 'content'
                            else relative, example)
        if split == 'train':  # the trainer infers its input shape from the train split
            self._count_shape(info, stored)
        return None


class RowToExample(_Convert):
    """Converts one table row (csv_records.Record: a CSV line; a Parquet row arrives as one):
    writes its Example, or emits a quarantine line. Empty numeric values are counted per
    column; numeric values of train rows are accumulated per bundle and emitted with the part
    files."""

    def start_bundle(self):
        super().start_bundle()
        self._numeric = table_rows.numeric_columns(self._options.table)
        self._moments = stats.empty_moments(len(self._numeric))

    def finish_bundle(self) -> Iterator:
        yield from super().finish_bundle()
        yield beam.pvalue.TaggedOutput(
            NUMERIC_TAG, window.GlobalWindows.windowed_value(self._moments))

    def process(self, element: Tuple[str, Optional[str], Optional[Tuple[str, str]]],
                class_names) -> Iterator:
        path, line, problem = element  # csv_records.Record
        path = files.from_beam(path)
        # blank lines are not records (as for every CSV reader)
        if problem is not None or line.strip():
            rejection = self._convert(path, line, class_names, problem)
            if rejection is not None:
                yield rejection

    def _convert(self, path: str, line: Optional[str], class_names, problem=None):
        opts = self._options
        relative = images.relative_path(path, opts.root)
        self._count('found')
        try:
            if problem is not None:  # undecodable, too large, not a regular file
                raise rules.BadRecord(*problem)
            values, label = table_rows.row_values(table_rows.parse_line(line), opts.table)
        except rules.BadRecord as error:
            return self._reject(relative, error, raw=line)
        for column in self._numeric:
            if column not in values:
                self._count(column, stats.MISSING_NAMESPACE)
        example = features.make_tabular_example(
            values, label=None if label is None else class_names.index(label), label_name=label,
            source_path=relative)
        if opts.split_key == 'source':
            key = f'{relative}\n{line}'
        elif opts.split_key == 'content':
            key = line
        else:
            key = table_rows.parse_line(line)[opts.table.columns.index(opts.split_key)]
        if self._write(key, example) == 'train':  # normalisation uses the train split only
            self._moments = stats.add_row(self._moments, [values.get(c) for c in self._numeric])
        return None
