"""ServedModelBaseline: the component that gives the Evaluator its baseline model.

The baseline is the model currently served: the newest version in the push destination, or none
on the first run. It replaces TFX's Resolver node, whose "latest blessed model" query compiles to
a KFP "resolver" task that only Vertex AI runs (open-source KFP answers "resolver not implemented
yet"). A plain component runs the same code under LocalDagRunner and in a KFP container.

Caching. A component without input artifacts is cached forever (its key never changes), and one
whose output follows the serving folder on every run would break the fully cached rerun: run 1
pushes version V, so run 2 would see V as the baseline, miss the Evaluator's cache, compare the
model with itself and push it again. So the component takes the trainer's `candidate` model as
an input, only to anchor the cache key: the baseline is chosen once per candidate. An unchanged
rerun has the same cached candidate, hence the same baseline artifact, and the Evaluator and
Pusher are cached too; a newly trained candidate re-runs it and reads what is served at that
moment. (A served model replaced by hand while the candidate stays the same is not re-read; the
next trained candidate picks it up.)

The output is always one Model artifact (KFP has no optional outputs): a reference to the served
SavedModel (`served_version`, `served_path`; its own folder stays empty: no stage copies a model
it only reads), or an empty artifact with
`served_version` = -1, which our Evaluator (components/evaluate/) treats as "no baseline", or,
when the served model predicts other classes or takes another input than the candidate, an
artifact with `served_version` and `incompatible_reason` that the Evaluator does not compare.
"""
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from components.baseline import executor

CANDIDATE_KEY = 'candidate'
BASELINE_KEY = 'baseline'


class ServedModelBaselineSpec(ComponentSpec):
    PARAMETERS = {'serving_dir': ExecutionParameter(type=str)}
    INPUTS = {CANDIDATE_KEY: ChannelParameter(type=standard_artifacts.Model)}
    OUTPUTS = {BASELINE_KEY: ChannelParameter(type=standard_artifacts.Model)}


class ServedModelBaseline(base_component.BaseComponent):
    """Names the newest served version under `serving_dir` in a baseline Model artifact."""
    SPEC_CLASS = ServedModelBaselineSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, candidate: Channel, serving_dir: str):
        super().__init__(spec=ServedModelBaselineSpec(
            candidate=candidate, serving_dir=serving_dir,
            baseline=Channel(type=standard_artifacts.Model)))
