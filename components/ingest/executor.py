"""Executor of ImageExampleGen: runs the ingestion Beam graph and describes the result.

The Examples artifact it fills is the standard one (split names, payload and file format), so
the stock StatisticsGen, Evaluator and our trainer read it without special cases. Counts are
recorded as custom properties and checked: anything not written is rejected with a reason.
"""
import json
import os
from typing import Any, Dict, List

from absl import logging
import tensorflow as tf
from tfx import types
from tfx.dsl.components.base import base_beam_executor
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils
from tfx.components.util import examples_utils
from tfx.utils import proto_utils

from components.common import features
from components.ingest import beam_pipeline, images

_SHOWN_REJECTIONS = 20  # enough to diagnose; the full list is in the Rejected/ file


class IngestionError(RuntimeError):
    """Ingestion produced nothing usable, or rejected more than allowed."""


def _class_root(input_base: str, exec_properties: Dict[str, Any]) -> str:
    """The folder holding the class folders, after the driver resolved any {SPAN} pattern."""
    input_config = example_gen_pb2.Input()
    proto_utils.json_to_proto(exec_properties['input_config'], input_config)
    pattern = input_config.splits[0].pattern
    # The pattern is '<span folder>/*/*' or '*/*': drop the class and file parts.
    return os.path.normpath(os.path.join(input_base, os.path.dirname(os.path.dirname(pattern))))


def _rejections(output_dir: str) -> List[Dict[str, str]]:
    path = os.path.join(output_dir, beam_pipeline.REJECTED_DIR, 'rejected.jsonl')
    if not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def check_counts(counts: Dict[str, int], rejected: List[Dict[str, str]],
                 max_rejected_fraction: float, root: str) -> None:
    """Raises IngestionError unless the counts reconcile and rejections are within bounds."""
    written = sum(counts[f'written_{s}'] for s in features.SPLITS)
    if written + counts['rejected'] != counts['found']:
        raise IngestionError(f'Counts do not reconcile: found {counts["found"]}, written '
                             f'{written}, rejected {counts["rejected"]}.')
    if counts['found'] == 0:
        raise IngestionError(f'No files found under the class folders of {root}.')
    details = '\n'.join(f'  {r["path"]}: {r["reason"]}' for r in rejected[:_SHOWN_REJECTIONS])
    if written == 0:
        raise IngestionError(f'No valid image under {root}; every file was rejected:\n{details}')
    fraction = counts['rejected'] / counts['found']
    if fraction > max_rejected_fraction:
        raise IngestionError(
            f'Rejected {counts["rejected"]} of {counts["found"]} files ({fraction:.1%}), more '
            f'than the allowed {max_rejected_fraction:.1%}:\n{details}')
    if rejected:
        logging.warning('Ingestion rejected %d file(s), within the allowed %.1f%%:\n%s',
                        len(rejected), 100 * max_rejected_fraction, details)


class Executor(base_beam_executor.BaseBeamExecutor):
    """Lists classes, runs the Beam graph, checks counts, and annotates the Examples artifact."""

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        examples = artifact_utils.get_single_instance(output_dict['examples'])
        root = _class_root(exec_properties['input_base'], exec_properties)
        classes = images.list_classes(root)
        options = beam_pipeline.IngestOptions(
            root=root, classes=tuple(classes),
            train_percent=int(exec_properties['train_percent']),
            num_shards=int(exec_properties['num_shards']))
        logging.info('Ingesting %d classes from %s into %s (%d%% train, %d shards per split)',
                     len(classes), root, examples.uri, options.train_percent, options.num_shards)

        pipeline = self._make_beam_pipeline()
        beam_pipeline.build_ingest(pipeline, options, examples.uri)
        result = pipeline.run()
        result.wait_until_finish()
        counts = beam_pipeline.read_counts(result)
        logging.info('Ingestion counts: %s', counts)
        check_counts(counts, _rejections(examples.uri),
                     float(exec_properties['max_rejected_fraction']), root)

        examples.split_names = artifact_utils.encode_split_names(list(features.SPLITS))
        examples_utils.set_payload_format(examples, example_gen_pb2.FORMAT_TF_EXAMPLE)
        examples_utils.set_file_format(examples, features.FILE_FORMAT)
        examples.set_string_custom_property('class_names', json.dumps(classes))
        for name, value in counts.items():
            examples.set_int_custom_property(f'num_{name}', value)
