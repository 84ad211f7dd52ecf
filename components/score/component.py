"""The two TFX components of batch scoring around the stock BulkInferrer
(pipeline/definition/scoring.py):

    ImageExampleGen (unlabelled) --examples--> BulkInferrer (stock, `classify`) --> ScoreWriter
    ScoringModel (served version) --model----/                                     /
                                   (examples and model are read by ScoreWriter too)

- ScoringModel resolves the version that scores (the served one, or the one asked for) when
  the pipeline runs, and places its SavedModel in its Model artifact, where the stock
  BulkInferrer reads a model (`Format-Serving`; components/score/served.py). The version and
  its folder are the artifact's `model_version` and `model_path` properties.
- ScoreWriter turns BulkInferrer's PredictionLogs into prediction rows (JSON lines and CSV),
  checks that every input was scored or quarantined, and writes the result into its own
  artifact and, when `output_dir` is set (local runs), publishes the same files there
  atomically (components/score/results.py).

Why BulkInferrer rather than Beam's RunInference: it is the TFX stack's own batch-scoring
component, so it runs unchanged under LocalDagRunner and in a compiled Kubeflow pipeline (a
RunInference graph would be one more executor of ours to maintain), it reads the Examples
artifact ingestion wrote, with its quarantine, and through tfx_bsl's Classify path its logs
carry each request's Example, hence the source path of every prediction. (tfx_bsl's
RunInference is also what BulkInferrer runs inside.)
"""
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import Channel, standard_artifacts
from tfx.types.component_spec import ChannelParameter, ComponentSpec, ExecutionParameter

from components.score import executor

MODEL_KEY = 'model'
PREDICTIONS_KEY = 'predictions'


class ScoringModelSpec(ComponentSpec):
    PARAMETERS = {'serving_dir': ExecutionParameter(type=str),
                  'version': ExecutionParameter(type=int)}   # 0 = the served version
    INPUTS = {}
    OUTPUTS = {MODEL_KEY: ChannelParameter(type=standard_artifacts.Model)}


class ScoringModel(base_component.BaseComponent):
    """The served version (or `version`) of `serving_dir` as a Model artifact."""
    SPEC_CLASS = ScoringModelSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.ModelExecutor)

    def __init__(self, serving_dir: str, version: int = 0):
        super().__init__(spec=ScoringModelSpec(serving_dir=serving_dir, version=version,
                                               model=Channel(type=standard_artifacts.Model)))


class ScoreWriterSpec(ComponentSpec):
    PARAMETERS = {'input_base': ExecutionParameter(type=str),   # what was scored
                  'output_dir': ExecutionParameter(type=str),   # '' = the artifact only
                  'top_k': ExecutionParameter(type=int)}
    INPUTS = {'inference_result': ChannelParameter(type=standard_artifacts.InferenceResult),
              'examples': ChannelParameter(type=standard_artifacts.Examples),
              MODEL_KEY: ChannelParameter(type=standard_artifacts.Model)}
    # InferenceResult: the stock type for inference output; these are predictions too.
    OUTPUTS = {PREDICTIONS_KEY: ChannelParameter(type=standard_artifacts.InferenceResult)}


class ScoreWriter(base_component.BaseComponent):
    """Predictions as JSON lines and CSV, the quarantine and a summary; counts reconciled."""
    SPEC_CLASS = ScoreWriterSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.WriterExecutor)

    def __init__(self, inference_result: Channel, examples: Channel, model: Channel,
                 input_base: str, output_dir: str = '', top_k: int = 3):
        super().__init__(spec=ScoreWriterSpec(
            inference_result=inference_result, examples=examples, model=model,
            input_base=input_base, output_dir=output_dir, top_k=top_k,
            predictions=Channel(type=standard_artifacts.InferenceResult)))
