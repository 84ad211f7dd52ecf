"""Executor of ImageExampleGen: runs the ingestion Beam graph and describes the result.

The Examples artifact it fills is the standard one (split names, payload and file format), so
the stock StatisticsGen, Evaluator and our trainer read it without special cases. Custom
properties add what the trainer needs (`class_names`, `input_spec`; for images the train
split's sizes and colour modes, from which the trainer infers its input shape: see
core/image_shape.py) and the counts. The counts
(found, written, rejected, rejected by reason) are also set as execution properties and logged,
and checked: anything not written is in the quarantine with a reason. For tables (CSV, Parquet),
`missing_values` (JSON, column -> empty numeric values over all splits) says what was imputed;
the imputed means are in `input_spec`. What each source records comes from its `describe`
(graph/source.py). A failed run keeps its quarantine outside the artifact (graph/checks.py).

The training window (core/window.py): the artifact's own Split-* folders hold the newest span;
the `window` property lists it with up to `window - 1` older spans (spans/window_spans.py). Each
span is looked up in the span index (spans/span_index.py): one ingested before with the same
files and parameters, whose data still exists, is not converted again. An older one is
referenced where it is; the newest one, which must be in this artifact, gets its shards
hard-linked (copied on an object store) from there: open-source KFP runs no cache check, so this
is how an unchanged input costs no conversion there. Older spans never ingested (a first run
over several span folders, or data deleted since) are converted into `Span-<N>/` sub-folders of
this artifact, which the stock readers ignore (they read `Split-*` only).
"""
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_beam_executor
from tfx.components.example_gen import driver as example_gen_driver
from tfx.components.example_gen import utils as example_gen_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils
from tfx.components.util import examples_utils
from tfx.utils import proto_utils

from core import features, stable_paths, storage, window
from core import properties as property_names
from components.ingest.graph import beam_pipeline, checks, registry, stats
from components.ingest.graph.params import IngestParams
from components.ingest.spans import listing, span_index, window_spans


def _source_root(input_base: str, exec_properties: Dict[str, Any]) -> str:
    """The folder holding the source's input (class folders, table files), after the driver
    resolved {SPAN}: the pattern's folder, less the folders the source's own pattern has."""
    input_config = example_gen_pb2.Input()
    proto_utils.json_to_proto(exec_properties['input_config'], input_config)
    folder = os.path.dirname(input_config.splits[0].pattern)  # 'span-3/*' / '*', 'span-3' / ''
    params = IngestParams.from_properties(exec_properties)
    own = registry.get(params.source).input_pattern(params.unlabelled)
    for _ in range(own.count('/')):  # images: drop the class-folder part
        folder = os.path.dirname(folder)
    return storage.normpath(os.path.join(input_base, folder))


def record_driver_values(exec_properties: Dict[str, Any], examples: types.Artifact) -> None:
    """Records the span, version and input fingerprint a driver resolved on the Examples.

    Locally TFX's FileBasedDriver (component.py SpanCheckingDriver) resolves them before the
    executor runs, and so does the compiled task's preCacheCheck hook on Vertex AI, or the
    Kubeflow entry point on open-source KFP (component.py resolve_input). With PipelineSpec 2.1
    the hook's values reach the executor as parameters (TFX's run_executor reads them from the
    executor output file), but its Examples record reaches ML Metadata only if the orchestrator
    merges it: so the executor's own output carries it. Locally the driver set the same values
    already. On Kubeflow span and version arrive as JSON numbers: ints again here. Input that
    no driver could fingerprint records nothing (the next run trains again)."""
    if not exec_properties.get(example_gen_utils.FINGERPRINT_PROPERTY_NAME):
        return
    version = exec_properties.get(example_gen_utils.VERSION_PROPERTY_NAME)
    example_gen_driver.update_output_artifact(dict(exec_properties, **{
        example_gen_utils.SPAN_PROPERTY_NAME: int(
            exec_properties[example_gen_utils.SPAN_PROPERTY_NAME]),
        example_gen_utils.VERSION_PROPERTY_NAME: None if version is None else int(version)}),
        examples.mlmd_artifact)


class Executor(base_beam_executor.BaseBeamExecutor):
    """Ingests the window's new spans, references the others, and annotates the Examples."""

    def _convert(self, root: str, input_base: str, exec_properties: Dict[str, Any],
                 output_dir: str, pipeline_root: str) -> Dict[str, Any]:
        """Runs the Beam graph on one folder into output_dir's Split-* folders, checks the
        counts, and returns the Examples custom properties describing the result."""
        options = listing.options_from_properties(root, input_base, exec_properties)
        logging.info('Ingesting %s from %s into %s: %s; %s shards, split key %s',
                     options.source, root, output_dir, options.split_reason,
                     options.shards(), options.split_key)
        pipeline = self._make_beam_pipeline()
        beam_pipeline.build_ingest(pipeline, options, output_dir)
        result = pipeline.run()
        result.wait_until_finish()
        counts = stats.read_counts(result)
        logging.info('Ingestion counts: %s', checks.format_counts(counts))
        properties: Dict[str, Any] = {f'num_{name}': value for name, value in counts.items()}
        summary = beam_pipeline.finalize(output_dir, options)
        described = registry.get(options.source).describe(options, result, summary)
        checks.check_counts(counts, output_dir, options.max_rejected_fraction, root, pipeline_root,
                            by_column=stats.read_rejected_by_column(result))
        properties[property_names.CLASS_NAMES] = json.dumps(described.pop('class_names'))
        properties[property_names.INPUT_SPEC] = described.pop('input_spec').to_json()
        properties[property_names.SPLIT_REASON] = options.split_reason
        properties.update(described)
        return properties

    def _span(self, span: int, folder: str, fingerprint: str, output_dir: str,
              exec_properties: Dict[str, Any], pipeline_root: str, newest: bool) -> Tuple[
                  window.SpanEntry, Dict[str, Any], Optional[Dict[str, Any]]]:
        """One span of the window: (its entry, its properties, the index key to record when
        this run ingested it, else None). A span in the index with live data is not converted
        again: an older one is referenced where it is, the newest one (output_dir is this
        artifact, which must hold it) gets its shards linked or copied here."""
        input_base = exec_properties['input_base']
        key = span_index.identity(input_base, span, fingerprint, exec_properties)
        found = span_index.lookup(pipeline_root, key)
        if found is None:
            properties = self._convert(folder, input_base, exec_properties, output_dir,
                                       pipeline_root)
            return (window_spans.entry(span, output_dir, fingerprint, properties), properties,
                    key)
        entry, properties = found['entry'], found['properties']
        if output_dir.rstrip('/') == entry.uri.rstrip('/'):
            return entry, properties, None  # a retried attempt of the run that ingested it
        if newest:
            how = span_index.link_files(entry.uri, output_dir, found['files'])
            logging.info('Span %d is unchanged since it was ingested into %s: not converted '
                         'again, its shards %s here', span, entry.uri, how)
            # Recorded again, pointing here: the newest copy outlives the older one.
            return (window_spans.entry(span, output_dir, fingerprint, properties), properties,
                    key)
        logging.info('Span %d: already ingested into %s, referenced', span, entry.uri)
        return entry, properties, None

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        examples = artifact_utils.get_single_instance(output_dict['examples'])
        input_base = exec_properties['input_base']
        pipeline_root = stable_paths.pipeline_root(exec_properties)  # refused before any work
        record_driver_values(exec_properties, examples)
        root = _source_root(input_base, exec_properties)
        newest = self._span(int(exec_properties.get(example_gen_utils.SPAN_PROPERTY_NAME) or 0),
                            root, exec_properties.get(
                                example_gen_utils.FINGERPRINT_PROPERTY_NAME) or '',
                            examples.uri, exec_properties, pipeline_root, newest=True)
        params = IngestParams.from_properties(exec_properties)
        older = [self._span(span, folder, registry.get(params.source).fingerprint(
                                folder, params.unlabelled),
                            os.path.join(examples.uri, f'Span-{span}'), exec_properties,
                            pipeline_root, newest=False)
                 for span, folder in window_spans.older_spans(root, params, newest[0].span)]
        kept, note = window_spans.same_classes(older, newest)
        properties = dict(newest[1], **{
            property_names.QUARANTINE_URI: checks.quarantine_path(examples.uri)})
        # TFX publishes exec_properties on the execution when it succeeds.
        for name, value in properties.items():
            if name.startswith('num_'):
                exec_properties[name] = value
        examples.split_names = artifact_utils.encode_split_names(list(features.SPLITS))
        examples_utils.set_payload_format(examples, example_gen_pb2.FORMAT_TF_EXAMPLE)
        # TFX knows one TFRecord format name; its readers (and ours) pick the compression from
        # the file suffix, so uncompressed shards (no .gz) are read correctly under it too.
        examples_utils.set_file_format(examples, features.FILE_FORMAT)
        for name, value in properties.items():
            if isinstance(value, int):
                examples.set_int_custom_property(name, value)
            else:
                examples.set_string_custom_property(name, value)
        entries = [entry for entry, _, _ in kept] + [newest[0]]
        examples.set_string_custom_property(window.PROPERTY, window.to_json(entries))
        examples.set_string_custom_property(window.PARAMETERS_PROPERTY, json.dumps(
            span_index.parameters(exec_properties), sort_keys=True))
        if note:
            examples.set_string_custom_property(window.NOTE_PROPERTY, note)
            logging.warning('Window: %s', note)
        logging.info('Window: %s', window.describe(entries))
        # Last, once everything is written: a crash before leaves no index entry behind.
        for entry, span_properties, key in older + [newest]:
            if key is not None:
                span_index.record(pipeline_root, key, entry, span_properties)
