"""DriftCheck: the new span's data against the data the served model was trained on.

Inputs: the run's `statistics` (StatisticsGen: the newest span only), its `examples` (for the
image size and colour-mode mix ingestion counted) and the `baseline` Model of
ServedModelBaseline, whose `served_path` / `served_version` name what is served. The served
version's own `assets.extra/training_data.json` says which spans it was trained on, so no
resolver is needed (open-source KFP runs none). Output `drift` (ExampleAnomalies) carries every
measured value, also below the thresholds, and the reasons when one is exceeded; the Evaluator
takes it as an input and does not bless a model trained on drifted data (see executor.py).

Why not TFX 1.16's DistributionValidator: it takes the baseline as a `baseline_statistics`
channel, i.e. an ExampleStatistics artifact of an earlier run, which a pipeline can only get
from a resolver (open-source KFP runs none) or an importer of a path fixed at compile time (the
served model's data changes with every push); a window of several spans has no one statistics
artifact; and it compares split with split of two artifacts, not the image size and colour-mode
mixes, which are not TFDV features. It uses the same TFDV call underneath
(tfdv.validate_statistics with previous statistics), as this component does, and it also
leaves the values below the thresholds in the anomalies file's drift_skew_info, but not on the
artifact, where the summary, the Evaluator and a notification read them.
"""
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from components.drift import executor
from components.drift.params import DriftParams

DRIFT_KEY = 'drift'


class DriftCheckSpec(ComponentSpec):
    PARAMETERS = {
        **{name: ExecutionParameter(type=kind)
           for name, kind in DriftParams.property_types().items()},   # params.py
        # Where the baseline statistics of a window are kept (training_data.py).
        'pipeline_root': ExecutionParameter(type=str),
    }
    INPUTS = {
        'statistics': ChannelParameter(type=standard_artifacts.ExampleStatistics),
        'examples': ChannelParameter(type=standard_artifacts.Examples),
        'baseline': ChannelParameter(type=standard_artifacts.Model),
    }
    OUTPUTS = {DRIFT_KEY: ChannelParameter(type=standard_artifacts.ExampleAnomalies)}


class DriftCheck(base_component.BaseComponent):
    SPEC_CLASS = DriftCheckSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, statistics: Channel, examples: Channel, baseline: Channel,
                 params: DriftParams, pipeline_root: str):
        super().__init__(spec=DriftCheckSpec(
            statistics=statistics, examples=examples, baseline=baseline,
            **params.to_properties(), pipeline_root=pipeline_root,
            drift=Channel(type=standard_artifacts.ExampleAnomalies)))
