"""The figures our Evaluator records on the blessing for the report's history. No TFX imports.

Every run evaluates the candidate, and the served model when one is comparable, on the same
examples (the eval splits of the whole training window, executor.py) in one TFMA run. Their two
accuracies are the only pair of figures in the history that come from the same data: the
trainer's `eval_accuracy` on the Model, and an older run's figures, come from other windows.
So the executor reads them back from TFMA's saved metrics (the overall slice) and records them:

- the candidate's accuracy (accuracy.NAME, the blessing's metric);
- the served model's accuracy on those examples, only when it was compared (TFMA's baseline);
- how many examples both were evaluated on (TFMA's ExampleCount, unweighted).

TFMA names the models `candidate` and `baseline` (tfma.CANDIDATE_KEY, tfma.BASELINE_KEY) when
there is a baseline, and leaves the only model unnamed ('') when there is none.
"""
import dataclasses
from typing import Optional

import tensorflow_model_analysis as tfma

from components.evaluate import accuracy

EXAMPLE_COUNT = 'example_count'   # tfma.metrics.ExampleCount's default name
_CANDIDATE_NAMES = ('', tfma.CANDIDATE_KEY)


@dataclasses.dataclass(frozen=True)
class Figures:
    candidate: Optional[float] = None   # the candidate's accuracy
    served: Optional[float] = None      # the served model's, on the same examples; None: none
    examples: Optional[int] = None      # the examples both were evaluated on


def read(evaluation_uri: str) -> Figures:
    """The overall slice's accuracies and example count, as TFMA saved them."""
    candidate = served = examples = None
    for metrics in tfma.load_metrics(evaluation_uri):
        if metrics.slice_key.ByteSize():  # overall slice only
            continue
        for item in metrics.metric_keys_and_values:
            key = item.key
            if key.is_diff or not item.value.HasField('double_value'):
                continue
            value = item.value.double_value.value
            if key.name == accuracy.NAME and key.model_name in _CANDIDATE_NAMES:
                candidate = value
            elif key.name == accuracy.NAME and key.model_name == tfma.BASELINE_KEY:
                served = value
            elif (key.name == EXAMPLE_COUNT and not key.example_weighted.value
                  and key.model_name in _CANDIDATE_NAMES):
                examples = int(value)
    return Figures(candidate, served, examples)
