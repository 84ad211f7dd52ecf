"""The input listed before Beam starts: span folders, and from the component's execution
properties the Beam graph's options, per source.

No TFX imports. This is where the input is listed before Beam starts, through the source's
`list_input` (graph/registry.py: class folders, or a table's files and columns with their
types), and where the shard count is chosen when it is automatic. A missing or empty input base
fails here, with the path, and so does an empty `span-<N>/` folder (checked by the component's
driver before it picks a span).
"""
import dataclasses
import os
import re
from typing import Any, Dict

import tensorflow as tf

from components.ingest.formats import rules
from components.ingest.formats import files as files_
from components.ingest.formats.rules import IngestionError
from components.ingest.graph import beam_pipeline, registry
from components.ingest.graph.params import IngestParams

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


def estimated_output_bytes(options: beam_pipeline.IngestOptions) -> int:
    return registry.get(options.source).estimated_output_bytes(options)


def options_from_properties(root: str, input_base: str,
                            props: Dict[str, Any]) -> beam_pipeline.IngestOptions:
    """The Beam options for this execution: the settings it recorded (IngestParams, read back
    from its properties) and what is listed before Beam starts; may raise IngestionError."""
    if not tf.io.gfile.isdir(input_base):
        raise IngestionError(f'Input base does not exist: {input_base}')
    params = IngestParams.from_properties(props)
    source = registry.get(params.source)
    if SPAN_FOLDER.match(os.path.basename(root)) and tf.io.gfile.isdir(root) and not (
            source.holds_input(root) or params.unlabelled):
        raise IngestionError(f'Span folder {root} is empty: expected {source.expected}.')
    listed = source.list_input(root, params.label_column, dict(params.feature_types),
                               params.drop_columns, params.encoding, params.unlabelled)
    settings = {field.name: getattr(params, field.name)
                for field in dataclasses.fields(IngestParams)}
    # 0 = automatic: ~128 MB per shard, counted once the input is listed.
    options = beam_pipeline.IngestOptions(
        **dict(settings, num_shards=params.num_shards or 1,
               train_percent=params.train_percent or rules.DEFAULT_TRAIN_PERCENT,
               split_reason=f'{params.train_percent}% train (train_percent)'),
        root=root, input_base=input_base, **listed)
    if not params.train_percent:  # 0 = from the data: this span's records, counted or estimated
        share, reason = rules.train_share(source.estimated_records(options),
                                          params.max_eval_records)
        options = dataclasses.replace(options, train_percent=share, split_reason=reason)
    if params.num_shards > 0:
        return options
    total = estimated_output_bytes(options)
    train = options.train_percent / 100
    # At least one train shard per training worker, so each can read files of its own
    # (FILE sharding, training/data.py).
    return dataclasses.replace(
        options, num_shards=max(rules.auto_shards(total, train), params.min_train_shards),
        eval_shards=rules.auto_shards(total, 1 - train))
