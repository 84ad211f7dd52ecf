"""Executor of ImageExampleGen: runs the ingestion Beam graph and describes the result.

The Examples artifact it fills is the standard one (split names, payload and file format), so
the stock StatisticsGen, Evaluator and our trainer read it without special cases. Custom
properties add what the trainer needs (`class_names`, `input_spec`; for images the train
split's sizes and colour modes, from which the trainer infers its input shape: see
components/common/image_shape.py) and the counts. The counts
(found, written, rejected, rejected by reason) are also set as execution properties and logged,
and checked: anything not written is in the quarantine with a reason. For CSV, `missing_values`
(JSON, column -> empty numeric values over all splits) says what was imputed; the imputed means
are in `input_spec`. A failed run keeps its quarantine outside the artifact (checks.py).
"""
import json
import os
from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_beam_executor
from tfx.components.example_gen import driver as example_gen_driver
from tfx.components.example_gen import utils as example_gen_utils
from tfx.dsl.io import filesystem
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import artifact_utils
from tfx.components.util import examples_utils
from tfx.utils import proto_utils

from components.common import features, inputs, stable_paths
from components.ingest import beam_pipeline, checks, name_safe_input, sources, stats, tabular
from components.ingest.checks import IngestionError  # noqa: F401 (the runner catches it)


def _source_root(input_base: str, exec_properties: Dict[str, Any]) -> str:
    """The folder holding the class folders or CSV files, after the driver resolved {SPAN}."""
    input_config = example_gen_pb2.Input()
    proto_utils.json_to_proto(exec_properties['input_config'], input_config)
    folder = os.path.dirname(input_config.splits[0].pattern)  # 'span-3/*' / '*', 'span-3' / ''
    if exec_properties.get('source', 'images') == 'images':
        folder = os.path.dirname(folder)  # drop the class-folder part
    return os.path.normpath(os.path.join(input_base, folder))


def resolve_without_driver(exec_properties: Dict[str, Any], examples: types.Artifact) -> None:
    """Resolves the span and fingerprints the input when no driver did (open-source KFP).

    Locally (and on Vertex AI, through the task's preCacheCheck hook) TFX's FileBasedDriver
    picks the span, fills `{SPAN}` in the pattern and records `input_fingerprint`, `span` and
    `version` before the executor runs. Open-source KFP never runs that hook: the executor gets
    the unresolved pattern. Here the same stock input processor does the same work, and the
    Examples get the same properties, so spans and "no new data" work on every orchestrator.

    When a driver ran, its values are recorded on the Examples here as well. With PipelineSpec
    2.1 the preCacheCheck hook's parameters reach the executor (TFX's run_executor reads them
    from the executor output file), but its Examples record only reaches ML Metadata if the
    orchestrator merges it; so the executor's own output carries it. Locally the driver set the
    same values already. The hook's span and version arrive as JSON numbers: ints again here.
    """
    if exec_properties.get(example_gen_utils.FINGERPRINT_PROPERTY_NAME):  # a driver ran
        version = exec_properties.get(example_gen_utils.VERSION_PROPERTY_NAME)
        example_gen_driver.update_output_artifact(dict(exec_properties, **{
            example_gen_utils.SPAN_PROPERTY_NAME: int(
                exec_properties[example_gen_utils.SPAN_PROPERTY_NAME]),
            example_gen_utils.VERSION_PROPERTY_NAME: None if version is None else int(version)}),
            examples.mlmd_artifact)
        return
    input_config = example_gen_pb2.Input()
    proto_utils.json_to_proto(exec_properties['input_config'], input_config)
    range_config = None
    if exec_properties.get('range_config'):
        range_config = proto_utils.json_to_proto(exec_properties['range_config'],
                                                 range_config_pb2.RangeConfig())
    if '{SPAN}' in input_config.splits[0].pattern:
        sources.check_latest_span(exec_properties['input_base'],
                                  exec_properties.get('source', 'images'))
    processor = name_safe_input.Processor(  # input_processor's, for names not UTF-8 too
        exec_properties['input_base'], input_config.splits, range_config)
    try:
        span, version = processor.resolve_span_and_version()
    except (ValueError, filesystem.NotFoundError) as error:
        # Nothing matches, or a file vanished or dangles: the input checks and the quarantine
        # that follow name it; without a fingerprint, the next run retrains.
        logging.warning('Input not fingerprinted: %s', error)
        return
    for split in input_config.splits:
        split.pattern = processor.get_pattern_for_span_version(split.pattern, span, version)
    exec_properties['input_config'] = proto_utils.proto_to_json(input_config)
    exec_properties[example_gen_utils.SPAN_PROPERTY_NAME] = span
    exec_properties[example_gen_utils.VERSION_PROPERTY_NAME] = version
    exec_properties[example_gen_utils.FINGERPRINT_PROPERTY_NAME] = \
        processor.get_input_fingerprint(span, version)
    example_gen_driver.update_output_artifact(exec_properties, examples.mlmd_artifact)
    logging.info('No driver ran: resolved span %s and fingerprinted the input here', span)


class Executor(base_beam_executor.BaseBeamExecutor):
    """Lists the input, runs the Beam graph, checks counts, and annotates the Examples."""

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        examples = artifact_utils.get_single_instance(output_dict['examples'])
        input_base = exec_properties['input_base']
        pipeline_root = stable_paths.pipeline_root(exec_properties)  # refused before any work
        resolve_without_driver(exec_properties, examples)
        root = _source_root(input_base, exec_properties)
        options = sources.options_from_properties(root, input_base, exec_properties)
        logging.info('Ingesting %s from %s into %s: %d%% train, %s shards, split key %s',
                     options.source, root, examples.uri, options.train_percent,
                     options.shards(), options.split_key)

        pipeline = self._make_beam_pipeline()
        beam_pipeline.build_ingest(pipeline, options, examples.uri)
        result = pipeline.run()
        result.wait_until_finish()
        counts = beam_pipeline.read_counts(result)
        logging.info('Ingestion counts: %s', checks.format_counts(counts))
        # TFX publishes exec_properties on the execution when it succeeds (the log line above
        # has the counts either way).
        for name, value in counts.items():
            exec_properties[f'num_{name}'] = value

        table = beam_pipeline.finalize(examples.uri, options)
        shapes = {}
        if table is not None:
            class_names = table['class_names']
            spec = inputs.tabular_spec(options.table.types, table['moments'])
            missing = stats.read_missing(result)
            if missing:
                logging.info('Empty numeric values, kept and imputed: %s',
                             tabular.describe_missing(missing, table['moments']))
            examples.set_string_custom_property('missing_values', json.dumps(missing))
        else:
            class_names = list(options.classes)
            raw = options.image_storage == 'raw'
            # Raw pixels with channels 0 keep each image's own: read per example then.
            spec = inputs.InputSpec(kind='image', storage=options.image_storage,
                                    channels=options.channels if raw else 0)
            shapes = stats.read_image_shapes(result)
            logging.info('Train images as stored: sizes %s, modes %s, %d colour',
                         shapes['image_sizes'], shapes['color_modes'], shapes['color_images'])
        checks.check_counts(counts, examples.uri, float(exec_properties['max_rejected_fraction']),
                            root, pipeline_root,
                            by_column=stats.read_rejected_by_column(result))

        examples.split_names = artifact_utils.encode_split_names(list(features.SPLITS))
        examples_utils.set_payload_format(examples, example_gen_pb2.FORMAT_TF_EXAMPLE)
        # TFX knows one TFRecord format name; its readers (and ours) pick the compression from
        # the file suffix, so uncompressed shards (no .gz) are read correctly under it too.
        examples_utils.set_file_format(examples, features.FILE_FORMAT)
        examples.set_string_custom_property('class_names', json.dumps(class_names))
        examples.set_string_custom_property('input_spec', spec.to_json())
        examples.set_string_custom_property('quarantine_uri', checks.quarantine_path(examples.uri))
        for name, value in counts.items():
            examples.set_int_custom_property(f'num_{name}', value)
        for name, value in shapes.items():
            if isinstance(value, int):
                examples.set_int_custom_property(name, value)
            else:
                examples.set_string_custom_property(name, value)
