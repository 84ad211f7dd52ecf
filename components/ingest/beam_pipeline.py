"""The Beam graph of ingestion: list the input, convert and validate, split, write shards.

No TFX imports: the executor builds a pipeline with TFX's Beam options and calls
`build_ingest`, and tests and the benchmark run the same graph on a plain `beam.Pipeline`.

Two sources share everything after conversion: image folders (one file = one record) and CSV
files (one line = one record). Every record found ends in exactly one place, a split's shard
or the quarantine, and is counted (Beam metrics in the `ingest` namespace): `found`,
`written_<split>`, `rejected` and `rejected_<reason>`, so `found == written + rejected` and the
rejections by reason add up to `rejected`.
"""
import dataclasses
import hashlib
import json
import os
from typing import Dict, Iterator, Optional, Tuple

import apache_beam as beam
from apache_beam.metrics import Metrics
import tensorflow as tf

from components.common import features
from components.ingest import images, records, stats, tabular, writer
from components.ingest.stats import read_counts  # noqa: F401 (callers read counts from here)

METRICS_NAMESPACE = stats.METRICS_NAMESPACE
QUARANTINE_TAG = 'quarantine'
NUMERIC_TAG = 'numeric'
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
    channels: int = 3               # channels of resized or raw images (1 or 3)
    table: Optional[tabular.Table] = None          # csv: columns, label and types
    csv_files: tuple = ()           # csv: the files, all with the table's header

    def __post_init__(self):
        checks = [
            (0 < self.train_percent < 100, f'train_percent must be in 1..99, got {self.train_percent}'),
            (self.num_shards >= 1 and self.eval_shards >= 0,
             f'num_shards must be >= 1, got {self.num_shards} (eval {self.eval_shards})'),
            (self.source in SOURCES, f'source must be one of {SOURCES}, got {self.source!r}'),
            (self.source != 'images' or bool(self.classes), 'classes must not be empty'),
            (self.source != 'csv' or (self.table is not None and bool(self.csv_files)),
             'a csv source needs a table and csv_files'),
            (self.image_storage in images.STORAGES,
             f'image_storage must be one of {images.STORAGES}, got {self.image_storage!r}'),
            (self.channels in (1, 3), f'channels must be 1 or 3, got {self.channels}'),
            (self.split_key in ('source', 'content') or (
                self.table is not None and self.split_key in self.table.columns),
             f'split_key must be "source", "content" or a CSV column, got {self.split_key!r}'),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def shards(self) -> Dict[str, int]:
        return {'train': self.num_shards, 'eval': self.eval_shards or self.num_shards}


def list_class_folder(class_name: str, root: str) -> Iterator[str]:
    """Yields every non-hidden entry of one class folder, sorted.

    Everything listed is counted downstream. A plain directory listing is used rather than a glob
    match because file-system matchers silently drop entries they cannot stat (a dangling
    symlink, for example); here such an entry is listed, fails to read, and is quarantined with
    the reason, so nothing disappears without a trace. tf.io.gfile also lists gs:// and hdfs://.
    """
    folder = os.path.join(root, class_name)
    for name in sorted(tf.io.gfile.listdir(folder)):
        name = name.rstrip('/')
        if not name.startswith('.'):  # .DS_Store and editor droppings are not data
            yield os.path.join(folder, name)


class _Convert(beam.DoFn):
    """Base of both sources: counting, quarantining and keying a record for its shard."""

    def __init__(self, options: IngestOptions):
        self._options = options
        self._shards = options.shards()

    def setup(self):
        self._counters = {}

    def _count(self, name: str) -> None:
        if name not in self._counters:
            self._counters[name] = Metrics.counter(METRICS_NAMESPACE, name)
        self._counters[name].inc()

    def _reject(self, source: str, error: records.BadRecord, raw: Optional[str] = None):
        self._count('rejected')
        self._count(f'rejected_{error.reason}')
        return beam.pvalue.TaggedOutput(QUARANTINE_TAG, records.quarantine_line(source, error, raw))

    def _keyed(self, key: str, example: tf.train.Example) -> Tuple[str, int, bytes]:
        split = records.split_of(key, self._options.train_percent)
        self._count(f'written_{split}')
        return split, records.shard_of(key, self._shards[split]), example.SerializeToString()


class _ImageToExample(_Convert):
    """Reads one listed file; emits its keyed Example, or a quarantine line."""

    def setup(self):
        super().setup()
        self._index = images.class_index(list(self._options.classes))
        self._base = self._options.input_base or self._options.root

    def process(self, path: str) -> Iterator:
        opts = self._options
        relative = images.relative_path(path, opts.root)
        self._count('found')
        try:
            data = images.read_file(path, self._base)
            stored = images.prepare(data, images.inspect_image(data), opts.image_size,
                                    opts.image_storage, opts.channels)
        except records.BadRecord as error:
            yield self._reject(path, error)
            return
        label_name = relative.split('/', 1)[0]
        example = features.make_example(
            encoded=stored.payload, label=self._index[label_name], label_name=label_name,
            height=stored.height, width=stored.width, source_path=relative,
            channels=stored.channels)
        key = hashlib.sha256(data).hexdigest() if opts.split_key == 'content' else relative
        yield self._keyed(key, example)


class _RowToExample(_Convert):
    """Converts one CSV line; emits its keyed Example (and its numbers, if train), or quarantine."""

    def process(self, element: Tuple[str, str], class_names) -> Iterator:
        path, line = element
        if not line.strip():
            return  # blank lines are not records (as for every CSV reader)
        opts = self._options
        relative = images.relative_path(path, opts.root)
        self._count('found')
        try:
            values, label = tabular.row_values(tabular.parse_line(line), opts.table)
        except records.BadRecord as error:
            yield self._reject(relative, error, raw=line)
            return
        example = features.make_tabular_example(
            values, label=class_names.index(label), label_name=label, source_path=relative)
        if opts.split_key == 'source':
            key = f'{relative}\n{line}'
        elif opts.split_key == 'content':
            key = line
        else:
            key = tabular.parse_line(line)[opts.table.columns.index(opts.split_key)]
        split, shard, record = self._keyed(key, example)
        if split == 'train':  # normalisation statistics come from the train split only
            yield beam.pvalue.TaggedOutput(NUMERIC_TAG, [
                values[c] for c, kind in opts.table.types if kind == tabular.NUMERIC])
        yield split, shard, record


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


def _valid_label(element: Tuple[str, str], table: tabular.Table) -> Iterator[str]:
    if element[1].strip():
        try:
            yield tabular.row_values(tabular.parse_line(element[1]), table)[1]
        except records.BadRecord:
            pass  # counted and quarantined by the conversion pass


def _read_lines(pipeline: beam.Pipeline, files: tuple, name: str) -> beam.PCollection:
    # ReadAllFromText splits big files over workers and streams them; the header is skipped.
    return (pipeline | f'{name}Files' >> beam.Create(list(files))
            | f'{name}Lines' >> beam.io.ReadAllFromText(skip_header_lines=1, with_filename=True))


def build_ingest(pipeline: beam.Pipeline, options: IngestOptions, output_dir: str) -> None:
    """Adds the ingestion graph to `pipeline`, writing `Split-<name>/` shards and the
    quarantine under output_dir."""
    if options.source == 'images':
        outputs = (
            pipeline
            | 'ClassFolders' >> beam.Create(list(options.classes))
            | 'ListFiles' >> beam.FlatMap(list_class_folder, options.root)
            # Spreads the files over workers; without it one worker would read a whole class.
            | 'Redistribute' >> beam.Reshuffle()
            | 'ToExample' >> beam.ParDo(_ImageToExample(options)).with_outputs(
                QUARANTINE_TAG, main='records'))
    else:
        # Labels are read in a pass of their own: feeding the same lines to both the label
        # side input and the conversion would make the runner hold every line in memory.
        class_names = (
            _read_lines(pipeline, options.csv_files, 'Label')
            | 'ValidLabels' >> beam.FlatMap(_valid_label, options.table)
            | 'DistinctLabels' >> beam.Distinct()
            | 'SortedLabels' >> beam.combiners.ToList() | beam.Map(sorted))
        outputs = (
            _read_lines(pipeline, options.csv_files, 'Csv')
            | 'ToExample' >> beam.ParDo(_RowToExample(options), beam.pvalue.AsSingleton(
                class_names)).with_outputs(QUARANTINE_TAG, NUMERIC_TAG, main='records'))
        numeric = [c for c, kind in options.table.types if kind == tabular.NUMERIC]
        _ = (outputs[NUMERIC_TAG]
             | 'Moments' >> beam.CombineGlobally(stats.Moments(len(numeric)))
             | 'TableJson' >> beam.Map(
                 lambda moments, names: json.dumps({'class_names': names, 'moments': dict(
                     zip(numeric, moments))}), names=beam.pvalue.AsSingleton(class_names))
             | 'WriteTable' >> beam.io.WriteToText(
                 os.path.join(output_dir, TEMP_DIR, TABLE_FILE), num_shards=1,
                 shard_name_template=''))
    writer.write_shards(outputs['records'], output_dir, os.path.join(output_dir, TEMP_DIR),
                        options.shards(), options.compress)
    _ = (outputs[QUARANTINE_TAG]
         | 'WriteQuarantine' >> beam.io.WriteToText(
             os.path.join(output_dir, records.QUARANTINE_DIR,
                          records.QUARANTINE_FILE.rsplit('.', 1)[0]),
             file_name_suffix='.jsonl', num_shards=1, shard_name_template=''))
