"""Evaluator: TFX's stock Evaluator with our executor (the baseline, the noise-aware
no-regression rule, drift, the reasons), and one more input: `drift`.

TFMA, the blessing and the Kubeflow entry point's blessing handling are the stock component's.
Its executor is swapped for ours (executor.py), because our baseline always arrives as an
artifact: ServedModelBaseline cannot emit "nothing" under KFP, so on a first run it emits an
empty Model that must be read as "no baseline", exactly as an empty Resolver output was; a
served model for other classes or another input arrives marked incompatible and is not compared
either. The spec is the stock one plus `drift` (DriftCheck's output: a model trained on data
that drifted from the served model's is not blessed) and `max_regression` (the no-regression
rule, applied to the change's confidence interval rather than by a TFMA change threshold).
The class keeps the stock name, so the node id stays "Evaluator".
"""
import json
from typing import List, Optional

import tensorflow_model_analysis as tfma
from tfx import components as tfx_components
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts, standard_component_specs
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from components.evaluate import executor
from components.evaluate.params import EvalParams

DRIFT_KEY = 'drift'


class EvaluatorSpec(standard_component_specs.EvaluatorSpec):
    PARAMETERS = dict(standard_component_specs.EvaluatorSpec.PARAMETERS, **{
        name: ExecutionParameter(type=kind, optional=True)
        for name, kind in EvalParams.property_types().items()})
    INPUTS = dict(standard_component_specs.EvaluatorSpec.INPUTS, **{
        DRIFT_KEY: ChannelParameter(type=standard_artifacts.ExampleAnomalies, optional=True)})


class Evaluator(tfx_components.Evaluator):
    """The stock Evaluator; an empty or incompatible `baseline_model` counts as none, and
    exceeded drift refuses the blessing."""
    SPEC_CLASS = EvaluatorSpec
    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, examples: Channel, model: Channel, baseline_model: Channel,
                 eval_config: tfma.EvalConfig, example_splits: List[str],
                 params: EvalParams, drift: Optional[Channel] = None):
        # The stock __init__ builds the stock spec; ours holds the same fields and two more.
        base_component.BaseComponent.__init__(self, spec=EvaluatorSpec(
            examples=examples, model=model, baseline_model=baseline_model, drift=drift,
            eval_config=eval_config, example_splits=json.dumps(example_splits),
            **params.to_properties(),
            evaluation=Channel(type=standard_artifacts.ModelEvaluation),
            blessing=Channel(type=standard_artifacts.ModelBlessing)))
