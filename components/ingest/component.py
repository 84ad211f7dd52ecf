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
(`window`), converting only those not ingested before (executor.py).

The quarantine is a folder of the Examples artifact (`Quarantine/quarantine.jsonl`, named by
the `quarantine_uri` property), not an artifact of its own: it is meaningful only next to the
Examples it was split from, travels (and is garbage-collected) with them, and the stock
components that read Examples ignore folders other than `Split-*`. When ingestion fails, TFX
deletes the Examples folder, so the executor first copies the quarantine to
`<pipeline_root>/_quarantine/ImageExampleGen/<hash of the Examples URI>.jsonl` and the error
names it. The `pipeline_root` execution property says where that is: the Examples URI's layout
is the orchestrator's (components/common/stable_paths.py).
"""
import json
from typing import Dict, Optional, Sequence, Tuple

from tfx.components.example_gen import driver
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import base_beam_component, executor_spec
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter
from tfx.utils import proto_utils

from components.ingest import executor, name_safe_input, registry, sources


def uses_spans(input_base: str) -> bool:
    """True when the input base holds at least one `span-<N>` folder."""
    return bool(sources.span_folders(input_base))


def input_pattern(input_base: str, source: str, unlabelled: bool = False) -> str:
    """The files the driver matches and fingerprints under the input base (or its span
    folder): the source's own pattern (registry.py)."""
    pattern = registry.get(source).input_pattern(unlabelled)
    return f'span-{{SPAN}}/{pattern}' if uses_spans(input_base) else pattern


def _limit_properties(limits: Dict[str, object]) -> Dict[str, object]:
    """max_image_pixels, convert_formats (a list, as JSON), encoding, max_csv_record_bytes."""
    return {name: json.dumps(list(value)) if name == 'convert_formats' else value
            for name, value in limits.items()}


class SpanCheckingDriver(driver.FileBasedDriver):
    """The stock file-based driver, after checking that the latest span folder is not empty."""

    def resolve_exec_properties(self, exec_properties, pipeline_info, component_info):
        input_config = example_gen_pb2.Input()
        proto_utils.json_to_proto(exec_properties['input_config'], input_config)
        if '{SPAN}' in input_config.splits[0].pattern and not exec_properties.get('unlabelled'):
            sources.check_latest_span(exec_properties['input_base'],
                                      exec_properties.get('source', 'images'))
        return super().resolve_exec_properties(exec_properties, pipeline_info, component_info)

    def get_input_processor(self, splits, range_config=None, input_base_uri=None):
        # The stock processor, but file names that are not UTF-8 do not stop the run.
        return name_safe_input.Processor(input_base_uri, splits, range_config)


class ImageExampleGenSpec(ComponentSpec):
    """Parameters are recorded as execution properties in ML Metadata."""
    PARAMETERS = {
        'input_base': ExecutionParameter(type=str),
        'input_config': ExecutionParameter(type=example_gen_pb2.Input),
        'range_config': ExecutionParameter(type=range_config_pb2.RangeConfig, optional=True),
        'source': ExecutionParameter(type=str),            # registry.NAMES: images | csv | ...
        'train_percent': ExecutionParameter(type=int),
        'num_shards': ExecutionParameter(type=int),        # per split; 0 = ~128 MB shards
        # With num_shards 0: at least this many train shards (the training workers).
        'min_train_shards': ExecutionParameter(type=int, optional=True),
        'compress': ExecutionParameter(type=int),          # 1 = GZIP
        'split_key': ExecutionParameter(type=str),         # source | content | a CSV column
        'max_rejected_fraction': ExecutionParameter(type=float),
        'image_size': ExecutionParameter(type=str),        # JSON [height, width], '' = keep
        'image_storage': ExecutionParameter(type=str),     # encoded | raw
        'channels': ExecutionParameter(type=int),          # of resized / raw images
        'label_column': ExecutionParameter(type=str),      # tables (csv, parquet)
        'feature_types': ExecutionParameter(type=str),     # tables: JSON {column: type}
        'drop_columns': ExecutionParameter(type=str),      # tables: JSON [column, ...] not features
        'pipeline_root': ExecutionParameter(type=str),     # a failed run's quarantine goes under it
        # The training window: the newest span and up to window - 1 before it (executor.py).
        'window': ExecutionParameter(type=int, optional=True),
        # hostile input (sources._limits): absent = the defaults
        'max_image_pixels': ExecutionParameter(type=int, optional=True),
        'convert_formats': ExecutionParameter(type=str, optional=True),  # JSON [format, ...]
        'encoding': ExecutionParameter(type=str, optional=True),         # csv
        'max_csv_record_bytes': ExecutionParameter(type=int, optional=True),
        # 1: input to score (runner.py --score): images directly in the folder, or a CSV with
        # no label column; Examples without a label (pipeline/scoring.py).
        'unlabelled': ExecutionParameter(type=int, optional=True),
    }
    INPUTS = {}
    OUTPUTS = {'examples': ChannelParameter(type=standard_artifacts.Examples)}


class ImageExampleGen(FileBasedExampleGen):
    """Reads `<input_base>[/span-N]/<class>/<image>`, `.../*.csv` or `.../*.parquet` into
    train/eval shards."""
    SPEC_CLASS = ImageExampleGenSpec
    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
    DRIVER_CLASS = SpanCheckingDriver

    def __init__(self, input_base: str, source: str = 'images', train_percent: int = 80,
                 num_shards: int = 2, compress: bool = True, split_key: str = 'source',
                 max_rejected_fraction: float = 0.01,
                 image_size: Optional[Tuple[int, int]] = None, image_storage: str = 'encoded',
                 channels: int = 3, label_column: str = 'label',
                 feature_types: Optional[Dict[str, str]] = None,
                 drop_columns: Sequence[str] = (),
                 range_config: Optional[range_config_pb2.RangeConfig] = None,
                 min_train_shards: int = 1, pipeline_root: str = '', window: int = 1,
                 limits: Optional[Dict[str, object]] = None, unlabelled: bool = False):
        if not pipeline_root:  # a failed run keeps its quarantine there
            raise ValueError('pipeline_root is required: a failed run keeps its quarantine there')
        if window < 1:
            raise ValueError(f'window must be >= 1 (spans trained on), got {window}')
        if source not in registry.NAMES:
            raise ValueError(f'source must be one of {registry.NAMES}, got {source!r}')
        input_config = example_gen_pb2.Input(splits=[example_gen_pb2.Input.Split(
            name=source, pattern=input_pattern(input_base, source, unlabelled))])
        # FileBasedExampleGen.__init__ builds the stock spec; ours is built here instead.
        base_beam_component.BaseBeamComponent.__init__(self, spec=ImageExampleGenSpec(
            input_base=input_base, input_config=input_config, range_config=range_config,
            source=source, train_percent=train_percent, num_shards=num_shards,
            min_train_shards=min_train_shards,
            compress=int(compress), split_key=split_key,
            max_rejected_fraction=max_rejected_fraction,
            image_size=json.dumps(list(image_size)) if image_size else '',
            image_storage=image_storage, channels=channels, label_column=label_column,
            feature_types=json.dumps(dict(sorted((feature_types or {}).items()))),
            drop_columns=json.dumps(list(drop_columns)), pipeline_root=pipeline_root,
            window=window,
            **_limit_properties(limits or {}), **({'unlabelled': 1} if unlabelled else {}),
            examples=Channel(type=standard_artifacts.Examples)))
