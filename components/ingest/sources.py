"""From the component's execution properties to the Beam graph's options, per source.

No TFX imports. This is where the input is listed before Beam starts (class folders, or CSV
files and their header), where CSV feature types are inferred, and where the shard count is
chosen when it is automatic. A missing or empty input base fails here, with the path, and so
does an empty `span-<N>/` folder (checked by the component's driver before it picks a span).
"""
import dataclasses
import json
import os
import re
from typing import Any, Dict, Optional, Tuple

from apache_beam.io.filesystems import FileSystems
import tensorflow as tf

from components.ingest import beam_pipeline, images, records, tabular
from components.ingest.checks import IngestionError

# tf.Example framing, float encoding and feature names make a CSV row a few times its text.
_CSV_EXAMPLE_GROWTH = 3
# Raw pixels of an image we do not resize: typical PNG/JPEG compress about this much.
_RAW_GROWTH = 8
SPAN_FOLDER = re.compile(r'^span-(\d+)$')
_EXPECTED = {'images': 'one sub-folder per class holding its images',
             'csv': 'one or more *.csv files'}


def span_folders(input_base: str) -> Dict[int, str]:
    """{span number: folder} of the `span-<N>/` folders directly under the input base."""
    if not tf.io.gfile.isdir(input_base):
        return {}
    found = {}
    for name in tf.io.gfile.listdir(input_base):
        match = SPAN_FOLDER.match(name.rstrip('/'))
        if match and tf.io.gfile.isdir(os.path.join(input_base, match.group(0))):
            found[int(match.group(1))] = os.path.join(input_base, match.group(0))
    return found


def holds_input(folder: str, source: str) -> bool:
    """Whether the folder holds something to ingest; stops at the first class folder with a
    file in it."""
    if source == 'csv':
        return bool(tf.io.gfile.glob(os.path.join(folder, '*.csv')))
    for name in tf.io.gfile.listdir(folder):
        sub = os.path.join(folder, name.rstrip('/'))
        if not name.startswith('.') and tf.io.gfile.isdir(sub) and any(
                not entry.startswith('.') for entry in tf.io.gfile.listdir(sub)):
            return True
    return False


def check_latest_span(input_base: str, source: str) -> None:
    """Raises IngestionError naming the latest `span-<N>/` folder when it holds no input.

    TFX's span resolution matches files, so an empty latest span would otherwise be skipped
    without a word (the previous span ingested again) or, when no span has files, fail with a
    pattern-matching error that names no folder.
    """
    spans = span_folders(input_base)
    if spans and not holds_input(spans[max(spans)], source):
        raise IngestionError(f'Span folder {spans[max(spans)]} is empty: expected '
                             f'{_EXPECTED[source]} (the latest span-<N>/ folder is ingested).')


def _image_size(text: str) -> Optional[Tuple[int, int]]:
    return tuple(json.loads(text)) if text else None


def _total_bytes(pattern: str) -> Tuple[int, int]:
    """(number of files, bytes) matched: one listing call, with sizes, on any file system."""
    matched = FileSystems.match([pattern])[0].metadata_list
    return len(matched), sum(m.size_in_bytes for m in matched)


def estimated_output_bytes(options: beam_pipeline.IngestOptions) -> int:
    if options.source == 'csv':
        return sum(_total_bytes(f)[1] for f in options.csv_files) * _CSV_EXAMPLE_GROWTH
    # One class folder at a time: only the largest folder's listing is ever held.
    totals = [_total_bytes(os.path.join(options.root, name, '*')) for name in options.classes]
    count, size = sum(t[0] for t in totals), sum(t[1] for t in totals)
    if options.image_storage == 'raw':
        if options.image_size:
            return (count * options.image_size[0] * options.image_size[1]
                    * (options.channels or 3))  # 0 = each its own: at most 3
        return size * _RAW_GROWTH
    return size


def _list_csv(root: str, label_column: str, feature_types: Dict[str, str],
              drop_columns: Tuple[str, ...] = ()) -> Dict[str, Any]:
    files = sorted(tf.io.gfile.glob(os.path.join(root, '*.csv')))
    if not files:
        raise IngestionError(f'Input is empty: no *.csv file in {root}.')
    header = tabular.read_header(files[0])
    for path in files[1:]:
        if tabular.read_header(path) != header:
            raise IngestionError(f'{path} has another header than {files[0]}: '
                                 f'{tabular.read_header(path)} != {header}')
    try:
        table = tabular.infer_table(header, label_column, tabular.sample_rows(files[0]),
                                    feature_types, drop_columns)
    except ValueError as error:
        raise IngestionError(f'{files[0]}: {error}') from None
    return {'csv_files': tuple(files), 'table': table}


def options_from_properties(root: str, input_base: str,
                            props: Dict[str, Any]) -> beam_pipeline.IngestOptions:
    """The Beam options for this execution; lists the input and may raise IngestionError."""
    if not tf.io.gfile.isdir(input_base):
        raise IngestionError(f'Input base does not exist: {input_base}')
    source = props.get('source', 'images')
    if SPAN_FOLDER.match(os.path.basename(root)) and tf.io.gfile.isdir(root) and not holds_input(
            root, source):
        raise IngestionError(f'Span folder {root} is empty: expected {_EXPECTED[source]}.')
    if source == 'csv':
        listed = _list_csv(root, props.get('label_column', 'label'),
                           json.loads(props.get('feature_types') or '{}'),
                           tuple(json.loads(props.get('drop_columns') or '[]')))
    else:
        try:
            listed = {'classes': tuple(images.list_classes(root))}
        except (FileNotFoundError, ValueError) as error:
            raise IngestionError(f'Input is empty or missing: {error}') from None
    options = beam_pipeline.IngestOptions(
        root=root, input_base=input_base, source=source,
        train_percent=int(props['train_percent']),
        compress=bool(int(props.get('compress', 1))),
        split_key=props.get('split_key', 'source'),
        image_size=_image_size(props.get('image_size', '')),
        image_storage=props.get('image_storage', 'encoded'),
        channels=int(props.get('channels', 0)), **listed)
    num_shards = int(props['num_shards'])
    if num_shards > 0:
        return dataclasses.replace(options, num_shards=num_shards)
    total = estimated_output_bytes(options)  # 0 = automatic: ~128 MB per shard
    train = options.train_percent / 100
    # At least one train shard per training worker, so each can read files of its own
    # (FILE sharding, components/trainer/data.py).
    return dataclasses.replace(
        options, num_shards=max(records.auto_shards(total, train),
                                int(props.get('min_train_shards') or 1)),
        eval_shards=records.auto_shards(total, 1 - train))
