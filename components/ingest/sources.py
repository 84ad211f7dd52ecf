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

from components.ingest import beam_pipeline, csv_records, images, records, tabular
from components.ingest import files as files_
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
    for name in files_.listdir(input_base):
        match = SPAN_FOLDER.match(name)
        if match and tf.io.gfile.isdir(os.path.join(input_base, match.group(0))):
            found[int(match.group(1))] = os.path.join(input_base, match.group(0))
    return found


def holds_input(folder: str, source: str) -> bool:
    """Whether the folder holds something to ingest; stops at the first class folder with a
    file in it."""
    if source == 'csv':
        return bool(files_.glob_files(folder, '*.csv'))
    for name in files_.listdir(folder):  # names that are not UTF-8 too
        sub = os.path.join(folder, name)
        if not name.startswith('.') and files_.isdir(sub) and any(
                not entry.startswith('.') for entry in files_.listdir(sub)):
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
              drop_columns: Tuple[str, ...] = (), encoding: str = 'utf-8',
              ignored: str = '') -> Dict[str, Any]:
    """The CSV files and their table. `ignored`: a column that is not a feature when the
    header has it (the label column of rows to score, which need none)."""
    files = sorted(files_.glob_files(root, '*.csv'))
    # A FIFO, socket, ... named *.csv is never opened here: the graph rejects it, with its type.
    regular = [path for path in files if csv_records.is_regular(path)]
    if not regular:
        raise IngestionError(f'Input is empty: no *.csv file in {root}.')
    header = tabular.read_header(regular[0], encoding)
    for path in regular[1:]:
        if tabular.read_header(path, encoding) != header:
            raise IngestionError(f'{path} has another header than {regular[0]}: '
                                 f'{tabular.read_header(path, encoding)} != {header}')
    if ignored and ignored in header:
        drop_columns += (ignored,)
    try:
        table = tabular.infer_table(header, label_column,
                                    tabular.sample_rows(regular[0], encoding=encoding),
                                    feature_types, drop_columns)
    except ValueError as error:
        raise IngestionError(f'{files[0]}: {error}') from None
    return {'csv_files': tuple(files), 'table': table}


def _limits(props: Dict[str, Any]) -> Dict[str, Any]:
    """The hostile-input settings (images.py, csv_records.py); absent ones keep their default."""
    limits = {'encoding': props.get('encoding') or csv_records.DEFAULT_ENCODING,
              'convert_formats': tuple(json.loads(props.get('convert_formats') or '[]'))}
    for name in ('max_image_pixels', 'max_csv_record_bytes'):
        if props.get(name):
            limits[name] = int(props[name])
    return limits


def options_from_properties(root: str, input_base: str,
                            props: Dict[str, Any]) -> beam_pipeline.IngestOptions:
    """The Beam options for this execution; lists the input and may raise IngestionError."""
    if not tf.io.gfile.isdir(input_base):
        raise IngestionError(f'Input base does not exist: {input_base}')
    source = props.get('source', 'images')
    unlabelled = bool(int(props.get('unlabelled') or 0))
    if SPAN_FOLDER.match(os.path.basename(root)) and tf.io.gfile.isdir(root) and not holds_input(
            root, source) and not unlabelled:
        raise IngestionError(f'Span folder {root} is empty: expected {_EXPECTED[source]}.')
    if source == 'csv':
        listed = _list_csv(root, '' if unlabelled else props.get('label_column', 'label'),
                           json.loads(props.get('feature_types') or '{}'),
                           tuple(json.loads(props.get('drop_columns') or '[]')),
                           props.get('encoding') or csv_records.DEFAULT_ENCODING,
                           ignored=props.get('label_column', 'label') if unlabelled else '')
    elif unlabelled:  # the images themselves, directly in root
        if not files_.isdir(root):
            raise IngestionError(f'Input folder does not exist: {root}')
        listed = {}
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
        channels=int(props.get('channels', 0)), unlabelled=unlabelled, **_limits(props),
        **listed)
    num_shards = int(props['num_shards'])
    if num_shards > 0:
        return dataclasses.replace(options, num_shards=num_shards)
    total = estimated_output_bytes(options)  # 0 = automatic: ~128 MB per shard
    train = options.train_percent / 100
    # At least one train shard per training worker, so each can read files of its own
    # (FILE sharding, training/data.py).
    return dataclasses.replace(
        options, num_shards=max(records.auto_shards(total, train),
                                int(props.get('min_train_shards') or 1)),
        eval_shards=records.auto_shards(total, 1 - train))
