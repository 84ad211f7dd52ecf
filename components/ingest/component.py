"""ImageExampleGen: the TFX component that turns image folders or tables into Examples.

A thin class over a spec. It reuses TFX's FileBasedDriver, the driver of the stock
file-based ExampleGens: before each run it resolves the span and fingerprints the matched input
files, and that fingerprint is an execution property, so the cache is hit only when the input
is unchanged (a component with no input artifacts would otherwise be cached forever).

It subclasses the stock FileBasedExampleGen (with its own spec and executor) because TFX's
Kubeflow V2 compiler recognises file-based ExampleGens by type: only then does the compiled task
carry the same fingerprinting driver, as a pre-cache-check hook (docs/kubeflow.md).

Spans: when the input base holds `span-<N>/` folders (the TFX convention), the pattern gets a
`{SPAN}` placeholder and the driver picks the latest span (or the one `range_config` asks for)
and records it as the Examples artifact's `span` property. A new span changes the resolved
pattern and fingerprint, so ingestion runs again; an unchanged one is served from the cache.
Whether spans are used is decided when the pipeline is built, from the folders present then.
An empty latest span folder stops the run with one line naming it (the stock driver would skip
it silently, or fail with a pattern error when no span has files). The driver resolves and
fingerprints the newest span only; the executor adds the older spans of the training window
(`window`), converting only those not ingested before (executor.py). Open-source KFP runs no
driver (nor the compiled hook): there the Kubeflow entry point calls `resolve_input`, the same
driver's work, before the executor runs (pipeline/kubeflow/entrypoint.py).

The quarantine is a folder of the Examples artifact (`Quarantine/quarantine.jsonl`, named by
the `quarantine_uri` property), not an artifact of its own: it is meaningful only next to the
Examples it was split from, travels (and is garbage-collected) with them, and the stock
components that read Examples ignore folders other than `Split-*`. When ingestion fails, TFX
deletes the Examples folder, so the executor first copies the quarantine to
`<pipeline_root>/_quarantine/ImageExampleGen/<hash of the Examples URI>.jsonl` and the error
names it. The `pipeline_root` execution property says where that is: the Examples URI's layout
is the orchestrator's (core/stable_paths.py).
"""
from typing import Any, Dict, Optional

from absl import logging
from tfx.components.example_gen import driver
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import base_beam_component, executor_spec
from tfx.dsl.io import filesystem
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter
from tfx.utils import proto_utils

from components.ingest import executor
from components.ingest.graph import registry
from components.ingest.graph.params import IngestParams
from components.ingest.spans import listing, name_safe_input


def uses_spans(input_base: str) -> bool:
    """True when the input base holds at least one `span-<N>` folder."""
    return bool(listing.span_folders(input_base))


def input_pattern(input_base: str, source: str, unlabelled: bool = False) -> str:
    """The files the driver matches and fingerprints under the input base (or its span
    folder): the source's own pattern (graph/registry.py)."""
    pattern = registry.get(source).input_pattern(unlabelled)
    return f'span-{{SPAN}}/{pattern}' if uses_spans(input_base) else pattern


class SpanCheckingDriver(driver.FileBasedDriver):
    """The stock file-based driver, after checking that the latest span folder is not empty."""

    def resolve_exec_properties(self, exec_properties, pipeline_info, component_info):
        input_config = example_gen_pb2.Input()
        proto_utils.json_to_proto(exec_properties['input_config'], input_config)
        params = IngestParams.from_properties(exec_properties)
        if '{SPAN}' in input_config.splits[0].pattern and not params.unlabelled:
            listing.check_latest_span(params.data_dir, params.source)
        return super().resolve_exec_properties(exec_properties, pipeline_info, component_info)

    def get_input_processor(self, splits, range_config=None, input_base_uri=None):
        # The stock processor, but file names that are not UTF-8 do not stop the run.
        return name_safe_input.Processor(input_base_uri, splits, range_config)


def resolve_input(exec_properties: Dict[str, Any]) -> Dict[str, Any]:
    """The driver's work for an orchestrator that runs none: the execution properties with the
    span resolved, `{SPAN}` filled in and the input fingerprinted (`span`, `version`,
    `input_fingerprint`), by SpanCheckingDriver itself. Its metadata handle is never read by
    this step, so none is given. Input that matches nothing, or a file that vanished or
    dangles, is left unresolved with a warning: the executor's input checks and quarantine then
    name it, and without a fingerprint the next run trains again."""
    try:
        return SpanCheckingDriver(None).resolve_exec_properties(dict(exec_properties),
                                                                None, None)
    except (ValueError, filesystem.NotFoundError) as error:
        logging.warning('Input not fingerprinted: %s', error)
        return dict(exec_properties)


class ImageExampleGenSpec(ComponentSpec):
    """Parameters are recorded as execution properties in ML Metadata: every IngestParams field
    (graph/params.py), the input config the driver resolves, and the pipeline root."""
    PARAMETERS = {
        'input_config': ExecutionParameter(type=example_gen_pb2.Input),
        'range_config': ExecutionParameter(type=range_config_pb2.RangeConfig, optional=True),
        'pipeline_root': ExecutionParameter(type=str),     # a failed run's quarantine goes under it
        **{name: ExecutionParameter(type=kind)
           for name, kind in IngestParams.property_types().items()},
    }
    INPUTS = {}
    OUTPUTS = {'examples': ChannelParameter(type=standard_artifacts.Examples)}


class ImageExampleGen(FileBasedExampleGen):
    """Reads `<input_base>[/span-N]/<class>/<image>`, `.../*.csv` or `.../*.parquet` into
    train/eval shards, as `params` say (its data_dir is the input base)."""
    SPEC_CLASS = ImageExampleGenSpec
    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
    DRIVER_CLASS = SpanCheckingDriver

    def __init__(self, params: IngestParams, pipeline_root: str = '',
                 range_config: Optional[range_config_pb2.RangeConfig] = None):
        if not pipeline_root:  # a failed run keeps its quarantine there
            raise ValueError('pipeline_root is required: a failed run keeps its quarantine there')
        input_config = example_gen_pb2.Input(splits=[example_gen_pb2.Input.Split(
            name=params.source,
            pattern=input_pattern(params.data_dir, params.source, params.unlabelled))])
        # FileBasedExampleGen.__init__ builds the stock spec; ours is built here instead.
        base_beam_component.BaseBeamComponent.__init__(self, spec=ImageExampleGenSpec(
            input_config=input_config, range_config=range_config, pipeline_root=pipeline_root,
            **params.to_properties(), examples=Channel(type=standard_artifacts.Examples)))
