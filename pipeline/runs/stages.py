"""The pipeline's stages as people see them: one entry per component, in one place.

The console's line per stage (pipeline/local/console.py), the end-of-run summary
(pipeline/runs/summary_text.py) and the run report (pipeline/report/) name a stage and read its key
figure from here, so a new stage is its package under components/, its field in the config, its
wiring in the factory (pipeline/definition/factory.py or pipeline/definition/scoring.py) and one
`Stage` below.

A stage's id is its TFX component id, the class name unless the factory gives it another
(`with_id`): the name ML Metadata records its execution under, which `RunSummary.states` and
`execution_properties` are keyed by and LocalDagRunner's "Component X is running." names.
tests/pipeline/runs/test_stages.py checks that every id here is a component the factories build.
A key figure reads only the RunSummary, that is what ML Metadata recorded, so a cached stage
shows the figure of the run that computed it.
"""
import dataclasses
from typing import Callable, Dict, Optional

from core import properties
from pipeline.runs import summary as summary_lib
from pipeline.runs.summary import custom_property as _custom

KeyFigure = Callable[[summary_lib.RunSummary], Optional[str]]

# The ids other modules look stages up by (RunSummary.states, execution_properties).
INGEST, GATE, TRAINER = 'ImageExampleGen', 'AnomalyGate', 'ImageTrainer'
BASELINE, DRIFT, EVALUATOR, PUSHER = 'ServedModelBaseline', 'DriftCheck', 'Evaluator', 'Pusher'
SCORING_MODEL, SCORE_WRITER = 'ScoringModel', 'ScoreWriter'


def _none(summary: summary_lib.RunSummary) -> Optional[str]:
    return None


@dataclasses.dataclass(frozen=True)
class Stage:
    id: str                        # the TFX component id (see the module docstring)
    key_figure: KeyFigure = _none  # what its console line ends with; None: nothing
    # What it does on the store, for the line a run ends with when the store stops answering
    # (core/store_watch.py) and no finer operation was named.
    store_work: str = 'reading or writing its artifacts'

    @property
    def display_name(self) -> str:
        """How the console, the summary and the report name it: its id, which is also what the
        run's log and ML Metadata call it, so a name on the console can be found in both."""
        return self.id


def _examples(summary):
    for examples in summary.outputs.get('Examples', []):
        written = sum(_custom(examples, properties.num_written(s)) or 0 for s in ('train', 'eval'))
        return f'{written:,} examples, {_custom(examples, properties.NUM_REJECTED) or 0:,} rejected'


def _trained(summary):
    result = summary.training_result()
    if result is not None and result.eval_accuracy is not None:
        return f'eval accuracy {result.eval_accuracy:.4f}'


def _baseline(summary):
    model = summary.baseline_model()
    if model is not None:
        served = _custom(model, properties.SERVED_VERSION)
        return 'nothing served yet' if served < 0 else f'served version {served}'


def _blessing(summary):
    for blessing in summary.outputs.get('ModelBlessing', []):
        return 'blessed' if _custom(blessing, properties.BLESSED) else 'not blessed'


def _pushed(summary):
    for pushed in summary.outputs.get('PushedModel', []):
        if not _custom(pushed, properties.PUSHED):
            return 'not pushed'
        return f'version {_custom(pushed, properties.PUSHED_VERSION)}'


def _drift(summary):
    values = summary_lib.drift_values(summary)
    exceeded = [v['feature'] for v in values if v['exceeded']]
    if exceeded:
        return 'drift: ' + ', '.join(exceeded)
    return 'within thresholds' if values else 'not measured'


def _scoring_model(summary):  # runner.py --score (pipeline/definition/scoring.py)
    for model in summary.outputs.get('Model', []):
        if _custom(model, properties.MODEL_VERSION) is not None:
            return f'version {_custom(model, properties.MODEL_VERSION)}'


def _scored(summary):
    for result in summary.outputs.get('InferenceResult', []):
        if _custom(result, properties.NUM_SCORED) is not None:
            return (f'{_custom(result, properties.NUM_SCORED):,} scored, '
                    f'{_custom(result, properties.NUM_QUARANTINED):,} quarantined')


# Our components and those of TFX's stock ones with a key figure; a stage not listed here (e.g.
# StatisticsGen) is shown by its id with no figure.
STAGES: Dict[str, Stage] = {stage.id: stage for stage in (
    Stage(INGEST, _examples, 'reading the input and writing the Examples'),
    Stage(GATE, lambda s: 'no anomalies'),
    Stage(TRAINER, _trained, 'reading the Examples or writing checkpoints and the model'),
    Stage(BASELINE, _baseline, 'reading the serving folder'), Stage(DRIFT, _drift),
    Stage(EVALUATOR, _blessing, 'reading the model and the eval split'),
    Stage(PUSHER, _pushed, 'copying the model into the serving folder'),
    Stage(SCORING_MODEL, _scoring_model), Stage(SCORE_WRITER, _scored))}


def stage(node_id: str) -> Stage:
    """The stage of a component id; one with no figure for a component not listed."""
    return STAGES.get(node_id) or Stage(node_id)
