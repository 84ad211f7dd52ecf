"""create_pipeline(): wires the stages into one TFX pipeline. Wiring only; no environment.

    ImageExampleGen -> StatisticsGen -> SchemaGen|ImportSchemaGen -> ExampleValidator -> AnomalyGate
          |                   |                                                             |
          +-------------------|----------> ImageTrainer <------------------(runs after)-----+
                              |                 |
                              |   ServedModelBaseline (newest in serving/)
                              v                 |
                         DriftCheck <-----------+-> Evaluator (TFMA, drift) -> Pusher (serving/<v>/)

SchemaGen (ours) infers the schema on the first run and keeps it; ImportSchemaGen imports a
given one. DriftCheck compares the new span with the data the served version was trained on.

Both runners (local and Kubeflow) call this same function; what differs is an Environment:
the local runner passes none, the Kubeflow compile its trainer's launcher (the pods of a
TrainJob), the trainer task's resources and the Pusher's run-end settings.
"""
import dataclasses
from typing import Any, Dict, List

import tensorflow_model_analysis as tfma
from tfx import components as tfx_components
from tfx.components.schema_gen.import_schema_gen.component import ImportSchemaGen
from tfx.orchestration import metadata
from tfx.orchestration import pipeline as tfx_pipeline

from components.baseline.component import ServedModelBaseline
from components.drift.component import DriftCheck
from components.evaluate import accuracy as accuracy_lib
from components.evaluate.component import Evaluator
from components.gate.component import AnomalyGate
from components.ingest.component import ImageExampleGen
from components.push.component import Pusher
from components.schema import kept as kept_schema
from components.schema.component import SchemaGen
from components.trainer.component import ImageTrainer
from components.evaluate.params import EvalParams
from pipeline.definition.config import PipelineConfig
from core import features
from launch import launchers


def make_eval_config(config: EvalParams) -> tfma.EvalConfig:
    """The blessing rule's absolute bars, as TFMA thresholds that the stock Evaluator checks,
    and the confidence intervals the no-regression rule needs.

    Overall accuracy (the whole eval split) must reach `min_accuracy`. A threshold set on the
    MetricConfig itself would apply to every slice, so one weak class would fail a model whose
    accuracy is well above the bar; these are per-slice thresholds on the overall slice only.
    The per-class bar (`min_class_accuracy`, every label_name slice) is opt-in.
    "No regression against the served model" is not a TFMA change threshold: TFMA checks a
    change against its point value only. Our Evaluator applies it to the change's 95% interval
    (components/evaluate/noise.py), which TFMA computes here by jackknife over the same
    examples for both models (cheap: 20 leave-one-bucket-out recomputations of the metrics).
    """
    overall = tfma.PerSliceMetricThreshold(
        slicing_specs=[tfma.SlicingSpec()],
        threshold=tfma.MetricThreshold(
            value_threshold=tfma.GenericValueThreshold(lower_bound={'value': config.min_accuracy})))
    thresholds = [overall]
    if config.min_class_accuracy is not None:
        thresholds.append(tfma.PerSliceMetricThreshold(
            slicing_specs=[tfma.SlicingSpec(feature_keys=[features.LABEL_NAME_KEY])],
            threshold=tfma.MetricThreshold(value_threshold=tfma.GenericValueThreshold(
                lower_bound={'value': config.min_class_accuracy}))))
    # TFMA-native (components/evaluate/accuracy.py): Keras' metric, counted without Keras.
    accuracy = tfma.MetricConfig(class_name=accuracy_lib.SparseCategoricalAccuracy.__name__,
                                 module=accuracy_lib.__name__, per_slice_thresholds=thresholds)
    options = tfma.Options()
    options.compute_confidence_intervals.value = True
    options.confidence_intervals.method = tfma.ConfidenceIntervalOptions.JACKKNIFE
    return tfma.EvalConfig(
        options=options,
        model_specs=[tfma.ModelSpec(label_key=features.LABEL_KEY,
                                    prediction_key='probabilities',
                                    signature_name='serving_default')],
        slicing_specs=[tfma.SlicingSpec(),
                       tfma.SlicingSpec(feature_keys=[features.LABEL_NAME_KEY])],
        metrics_specs=[tfma.MetricsSpec(metrics=[
            accuracy, tfma.MetricConfig(class_name='ExampleCount'),
            # Read back by the run report (pipeline/report); it has no threshold.
            tfma.MetricConfig(class_name='MultiClassConfusionMatrixPlot')])])


@dataclasses.dataclass(frozen=True)
class Environment:
    """What an orchestrator sets in the components it runs (the local runner: nothing).

    launcher: how the trainer's job runs (launch/launchers.py), checked by the trainer;
    trainer_platform_config: a TFX platform config for the trainer's task (its resources), as
    TFX's `with_platform_config` takes it; None = none;
    pusher_config: entries for the Pusher's custom_config that the orchestrator's own task code
    reads (Kubeflow's run end)."""
    launcher: launchers.Choice = launchers.Choice()
    trainer_platform_config: Any = None
    pusher_config: Dict[str, Any] = dataclasses.field(default_factory=dict)


def create_components(config: PipelineConfig, env: Environment = Environment()) -> List:
    ingest = config.ingest
    # Room for every process that reads train shards of its own (FILE sharding): the
    # launcher's workers, here or in pods.
    readers = launchers.get(env.launcher.name).readers(env.launcher.spec, config.train)
    example_gen = ImageExampleGen(dataclasses.replace(
        ingest, num_shards=ingest.num_shards and max(ingest.num_shards, readers),
        min_train_shards=readers,
        # Converts channels at ingestion (resize, raw) only when configured; 0 keeps each
        # image's own, so the trainer's channels are inferred from the data as it is.
        channels=config.train.channels or 0),
        # Where what outlives an execution goes (the kept quarantine, the trainer's checkpoints):
        # computed from the root, not from artifact URIs, whose layout is the orchestrator's.
        pipeline_root=config.pipeline_root)
    statistics_gen = tfx_components.StatisticsGen(examples=example_gen.outputs['examples'])
    if config.schema_path:
        schema_gen = ImportSchemaGen(schema_file=config.schema_path)
    else:
        # Inferred on the first run, then kept: a span is judged against the first run's data.
        schema_gen = SchemaGen(statistics=statistics_gen.outputs['statistics'],
                               pipeline_root=config.pipeline_root, infer_feature_shape=True)
    example_validator = tfx_components.ExampleValidator(
        statistics=statistics_gen.outputs['statistics'], schema=schema_gen.outputs['schema'])
    gate = AnomalyGate(anomalies=example_validator.outputs['anomalies'],
                       schema_hint=kept_schema.hint(config.pipeline_root, config.schema_path))

    # Every training parameter, with the source's builder when none is named (TrainParams).
    trainer = ImageTrainer(
        examples=example_gen.outputs['examples'],
        params=dataclasses.replace(config.train, model_builder=config.model_builder),
        serving_dir=config.serving_dir, pipeline_root=config.pipeline_root,
        launcher=env.launcher)
    if env.trainer_platform_config is not None:
        trainer.with_platform_config(env.trainer_platform_config)
    trainer.add_upstream_node(gate)  # no training on data that failed validation

    # The model in production, chosen once per candidate (see components/baseline/component.py).
    baseline = ServedModelBaseline(candidate=trainer.outputs['model'],
                                   serving_dir=config.serving_dir)
    drift_check = DriftCheck(
        statistics=statistics_gen.outputs['statistics'], examples=example_gen.outputs['examples'],
        baseline=baseline.outputs['baseline'], params=config.drift,
        pipeline_root=config.pipeline_root)
    evaluator = Evaluator(
        examples=example_gen.outputs['examples'], model=trainer.outputs['model'],
        baseline_model=baseline.outputs['baseline'], eval_config=make_eval_config(config.eval),
        example_splits=['eval'], params=config.eval, drift=drift_check.outputs['drift'])
    pusher = Pusher(model=trainer.outputs['model'], model_blessing=evaluator.outputs['blessing'],
                    serving_dir=config.serving_dir, params=config.push, model_name=config.name,
                    orchestrator_config=env.pusher_config)
    return [example_gen, statistics_gen, schema_gen, example_validator, gate, trainer,
            baseline, drift_check, evaluator, pusher]


def create_pipeline(config: PipelineConfig,
                    env: Environment = Environment()) -> tfx_pipeline.Pipeline:
    return tfx_pipeline.Pipeline(
        pipeline_name=config.name,
        pipeline_root=config.pipeline_root,
        components=create_components(config, env),
        enable_cache=config.enable_cache,
        # The local SQLite store; None on cluster storage, whose orchestrator keeps its own.
        metadata_connection_config=config.metadata_path and (
            metadata.sqlite_metadata_connection_config(config.metadata_path)),
        beam_pipeline_args=list(config.beam_args))
