"""From the component's execution properties to the Beam graph's options, per source.

No TFX imports. This is where the input is listed before Beam starts, through the source's
`list_input` (registry.py: class folders, or a table's files and columns with their types), and
where the shard count is chosen when it is automatic. A missing or empty input base fails here,
with the path, and so does an empty `span-<N>/` folder (checked by the component's driver
before it picks a span).
"""
import dataclasses
import json
import os
import re
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from components.ingest import beam_pipeline, csv_records, records, registry
from components.ingest import files as files_
from components.ingest.checks import IngestionError

SPAN_FOLDER = re.compile(r'^span-(\d+)$')


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
    """Whether the folder holds something the source reads."""
    return registry.get(source).holds_input(folder)


def check_latest_span(input_base: str, source: str) -> None:
    """Raises IngestionError naming the latest `span-<N>/` folder when it holds no input.

    TFX's span resolution matches files, so an empty latest span would otherwise be skipped
    without a word (the previous span ingested again) or, when no span has files, fail with a
    pattern-matching error that names no folder.
    """
    spans = span_folders(input_base)
    if spans and not holds_input(spans[max(spans)], source):
        raise IngestionError(f'Span folder {spans[max(spans)]} is empty: expected '
                             f'{registry.get(source).expected} (the latest span-<N>/ folder '
                             'is ingested).')


def _image_size(text: str) -> Optional[Tuple[int, int]]:
    return tuple(json.loads(text)) if text else None


def estimated_output_bytes(options: beam_pipeline.IngestOptions) -> int:
    return registry.get(options.source).estimated_output_bytes(options)


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
        raise IngestionError(f'Span folder {root} is empty: expected '
                             f'{registry.get(source).expected}.')
    listed = registry.get(source).list_input(
        root, props.get('label_column', 'label'),
        json.loads(props.get('feature_types') or '{}'),
        tuple(json.loads(props.get('drop_columns') or '[]')),
        props.get('encoding') or csv_records.DEFAULT_ENCODING, unlabelled)
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
