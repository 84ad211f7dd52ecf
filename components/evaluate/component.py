"""Evaluator: TFX's stock Evaluator component with our executor (the baseline, the reasons).

Everything (spec, TFMA, blessing, the Kubeflow entry point's blessing handling) is the stock
component's. Only its executor is swapped for ours (executor.py), because our baseline always
arrives as an artifact: ServedModelBaseline cannot emit "nothing" under KFP, so on a first run it
emits an empty Model that must be read as "no baseline", exactly as an empty Resolver output was;
a served model for other classes or another input arrives marked incompatible and is not
compared either. The executor also records on the blessing why it was (not) blessed.
"""
from tfx import components as tfx_components
from tfx.dsl.components.base import executor_spec

from components.evaluate import executor


class Evaluator(tfx_components.Evaluator):
    """The stock Evaluator; an empty or incompatible `baseline_model` counts as none."""
    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
