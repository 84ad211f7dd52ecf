"""SchemaGen: the stock SchemaGen's inference, done once per pipeline root and then kept.

Used when the user gives no schema (a given one is imported by the stock ImportSchemaGen, a
task without inputs, which Kubeflow caches). The first run infers the schema from its
statistics as the stock SchemaGen does (tfdv.infer_schema over every split, infer_feature_shape)
and keeps it (kept.py); every later run outputs the kept schema, so ExampleValidator judges the
new span against the schema of the first run's data instead of one re-inferred from itself.
The class keeps the stock name, so the node id stays "SchemaGen".
"""
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from components.schema import executor


class SchemaGenSpec(ComponentSpec):
    PARAMETERS = {'pipeline_root': ExecutionParameter(type=str),
                  'infer_feature_shape': ExecutionParameter(type=int)}
    INPUTS = {'statistics': ChannelParameter(type=standard_artifacts.ExampleStatistics)}
    OUTPUTS = {'schema': ChannelParameter(type=standard_artifacts.Schema)}


class SchemaGen(base_component.BaseComponent):
    SPEC_CLASS = SchemaGenSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, statistics: Channel, pipeline_root: str, infer_feature_shape: bool = True):
        super().__init__(spec=SchemaGenSpec(
            statistics=statistics, pipeline_root=pipeline_root,
            infer_feature_shape=int(infer_feature_shape),
            schema=Channel(type=standard_artifacts.Schema)))
