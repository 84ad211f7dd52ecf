"""AnomalyGate: a component that fails when ExampleValidator reported any anomaly.

The stock ExampleValidator records anomalies but never stops a run. The pipeline makes the
trainer run after this gate, so an anomaly stops the run before any training, with the anomalies
printed. It has no output artifact: its effect is to succeed or fail.
"""
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from components.gate import executor


class AnomalyGateSpec(ComponentSpec):
    # What to do when the change is intended: which schema judged the data
    # (pipeline/definition/factory.py).
    PARAMETERS = {'schema_hint': ExecutionParameter(type=str, optional=True)}
    INPUTS = {'anomalies': ChannelParameter(type=standard_artifacts.ExampleAnomalies)}
    OUTPUTS = {}


class AnomalyGate(base_component.BaseComponent):
    SPEC_CLASS = AnomalyGateSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, anomalies: Channel, schema_hint: str = ''):
        super().__init__(spec=AnomalyGateSpec(anomalies=anomalies, schema_hint=schema_hint))
