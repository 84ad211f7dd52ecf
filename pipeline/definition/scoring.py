"""The batch-scoring pipeline (runner.py --score): wiring only, for both runners.

    ImageExampleGen (unlabelled) -> BulkInferrer (stock, `classify`) -> ScoreWriter
    ScoringModel (served version) --^---------------------------------------^

The same ingestion component as training, with the same readers, limits and quarantine, in
its unlabelled mode: images directly in the scored folder (no class folders; a sub-folder is
quarantined as not_a_file), or CSV files whose label column, if present, is ignored. Nothing
is rejected "too often" here: every bad input is quarantined with its reason and the rest is
scored; only an input with nothing valid fails. The stock BulkInferrer scores every split
ingestion wrote through the model's `classify` signature (TF Serving's Classify API).

Ingestion must store the input as the model parses it: its input spec
(`assets.extra/input_spec.json`: encoded or raw pixels, a table's column types) decides, when
it is known as the pipeline is built (`model_spec`, read by pipeline/local/score.py from the
version that scores); without it (Kubeflow, where the version is resolved in the cluster)
the `[ingest]` settings of the config decide, as for the training pipeline.

The scoring pipeline has its own name (`<name>-score`), pipeline root and ML Metadata store
(`<output>/scoring/`), so training runs' retention and summaries never meet it, and it is not
cached: each run scores again (ingestion still reuses an identical earlier conversion through
its span index).
"""
import dataclasses
import os
from typing import List, Optional

from tfx import components as tfx_components
from tfx.orchestration import metadata
from tfx.orchestration import pipeline as tfx_pipeline
from tfx.proto import bulk_inferrer_pb2

from core import inputs
from components.ingest.component import ImageExampleGen
from components.score.component import ScoreWriter, ScoringModel
from training import export
from pipeline.definition import config as config_lib
from pipeline.definition.config import ScoreConfig

SUFFIX = '-score'


def root(config: config_lib.PipelineConfig) -> str:
    """<output>/scoring: the scoring pipeline's root and store, apart from training's."""
    return os.path.join(os.path.dirname(config.pipeline_root), 'scoring')


def metadata_path(config: config_lib.PipelineConfig) -> Optional[str]:
    return config.metadata_path and os.path.join(root(config), 'metadata.sqlite')


def _ingest_settings(config: config_lib.PipelineConfig,
                     model_spec: Optional[inputs.InputSpec]) -> dict:
    """How the input to score is stored: as the model parses it when its spec is known."""
    settings = {'channels': config.train.channels or 0}
    if model_spec is not None and model_spec.kind == 'tabular':
        settings['feature_types'] = tuple(
            [(name, 'numeric') for name, _, _ in model_spec.numeric]
            + [(name, 'categorical') for name in model_spec.categorical])
    elif model_spec is not None:
        settings.update(image_storage=model_spec.storage, channels=model_spec.channels)
    return settings


def create_components(config: config_lib.PipelineConfig, score: ScoreConfig,
                      model_spec: Optional[inputs.InputSpec] = None) -> List:
    example_gen = ImageExampleGen(dataclasses.replace(
        config.ingest, data_dir=score.input_dir, compress=True, split_key='source',
        max_rejected_fraction=1.0,   # quarantine, never stop: only "nothing valid" fails
        window=1, unlabelled=True, image_size=None, **_ingest_settings(config, model_spec)),
        pipeline_root=os.path.join(root(config), 'pipeline_root'))
    model = ScoringModel(serving_dir=config.serving_dir, version=score.version)
    inferrer = tfx_components.BulkInferrer(
        examples=example_gen.outputs['examples'], model=model.outputs['model'],
        data_spec=bulk_inferrer_pb2.DataSpec(),   # every split ingestion wrote
        model_spec=bulk_inferrer_pb2.ModelSpec(
            model_signature_name=[export.CLASSIFY_SIGNATURE]))
    writer = ScoreWriter(inference_result=inferrer.outputs['inference_result'],
                         examples=example_gen.outputs['examples'],
                         model=model.outputs['model'], input_base=score.input_dir,
                         output_dir=score.output_dir, top_k=score.top_k)
    return [example_gen, model, inferrer, writer]


def create_pipeline(config: config_lib.PipelineConfig, score: ScoreConfig,
                    model_spec: Optional[inputs.InputSpec] = None) -> tfx_pipeline.Pipeline:
    store = metadata_path(config)
    return tfx_pipeline.Pipeline(
        pipeline_name=config.name + SUFFIX,
        pipeline_root=os.path.join(root(config), 'pipeline_root'),
        components=create_components(config, score, model_spec),
        enable_cache=False,
        metadata_connection_config=store and metadata.sqlite_metadata_connection_config(store),
        beam_pipeline_args=list(config.beam_args))
