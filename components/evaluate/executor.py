"""Executor of our Evaluator: picks the baseline, runs the stock TFMA executor, applies the
noise-aware no-regression rule and the drift check, says why.

The data: the eval splits of the whole training window (core/window.py), so a
model is judged, and compared with the served one, on the data it will serve. The stock
executor reads every Examples artifact it is given (artifact_utils.get_split_uris over the
list), so each window entry is handed to it as an in-memory Examples artifact of its folder.

Before: an empty baseline (nothing served yet) and an incompatible one (the served model
predicts other classes or takes another input, components/baseline/) are dropped, so the stock
executor skips TFMA's change thresholds ("must not be worse than the baseline") and checks the
absolute ones only.
After: TFMA's validation result (in the evaluation artifact) is put into words on the blessing,
so the run summary and the Pusher can say exactly why a model was not blessed:
- `blessing_reasons`: JSON list of failed checks, e.g. ["sparse_categorical_accuracy 0.8712 <
  0.90"]; [] when blessed;
- `compared_version`: the served version the candidate was compared with, -1 for none;
- `not_compared`: when a served model was skipped, which and why;
- `regression_check`: the no-regression rule and its figures, whatever the outcome, e.g.
  "sparse_categorical_accuracy change vs served version 1 -0.0098, within noise (95% interval
  -0.0250..+0.0060)" (noise.py); it is among the reasons when the candidate is worse beyond noise;
- `candidate_accuracy`, `served_accuracy` (only when compared) and `eval_examples`: both models'
  accuracy on the same examples, for the report's history (figures.py).
Drift (DriftCheck's `drift` input) beyond a threshold refuses the blessing too, its reasons among
`blessing_reasons`: the model learnt from data unlike what the served model learnt from, and
evaluating it on that same data cannot tell whether it is fit to replace it.
"""
import json
import os
from typing import Any, Dict, List

from absl import logging
import tensorflow_model_analysis as tfma
from tfx import types
from tfx.components.evaluator import executor as stock_executor
from tfx.types import artifact_utils, standard_artifacts
from tfx.types import standard_component_specs as specs
from tfx.dsl.io import fileio
from tfx.utils import io_utils

from core import properties, served_baseline, window
from components.evaluate import checks, figures, noise
from components.evaluate import served_model
from components.evaluate.params import EvalParams



def drift_reasons(input_dict: Dict[str, List[types.Artifact]]) -> List[str]:
    """The exceeded drift values DriftCheck recorded ([] without a drift input)."""
    reasons = []
    for drift in input_dict.get('drift', []):
        reasons.extend(json.loads(
            drift.get_string_custom_property(properties.DRIFT_REASONS) or '[]'))
    return reasons


def refuse(blessing: types.Artifact) -> None:
    """Turns TFMA's blessing into a refusal: the property the Pusher reads and the marker file."""
    blessing.set_int_custom_property(properties.BLESSED, 0)
    blessed_file = os.path.join(blessing.uri, 'BLESSED')
    if fileio.exists(blessed_file):
        fileio.remove(blessed_file)
    io_utils.write_string_file(os.path.join(blessing.uri, 'NOT_BLESSED'), '')


def window_examples(examples: List[types.Artifact]) -> List[types.Artifact]:
    """One Examples artifact per span of the window (the given one for its own span)."""
    result = []
    for source in examples:
        for entry in window.read(source):
            if entry.uri.rstrip('/') == source.uri.rstrip('/'):
                result.append(source)
                continue
            span = standard_artifacts.Examples()
            span.uri = entry.uri
            span.split_names = source.split_names
            for name in ('payload_format', 'file_format'):  # what TFX's readers go by
                if source.has_custom_property(name):
                    span.set_string_custom_property(name, source.get_string_custom_property(name))
            result.append(span)
    return result


def record_figures(blessing: types.Artifact, found: figures.Figures) -> None:
    """Both models' accuracy on the same examples, and how many, as the blessing's properties
    (a figure TFMA did not compute is left out)."""
    if found.candidate is not None:
        blessing.set_float_custom_property(properties.CANDIDATE_ACCURACY, found.candidate)
    if found.served is not None:
        blessing.set_float_custom_property(properties.SERVED_ACCURACY, found.served)
    if found.examples is not None:
        blessing.set_int_custom_property(properties.EVAL_EXAMPLES, found.examples)


class Executor(stock_executor.Executor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        given = input_dict.get(specs.BASELINE_MODEL_KEY, [])
        baselines = [b for b in given if served_baseline.is_comparable(b)]
        skipped = [b for b in given
                   if served_baseline.has_model(b) and not served_baseline.is_comparable(b)]
        if given and not baselines:
            logging.info('No comparable baseline (%s): no change thresholds.',
                         'served model incompatible' if skipped else 'nothing served yet')
        # The baseline names the served folder, it holds no copy: TFMA loads it in place.
        in_place = [served_baseline.in_place(b) for b in baselines]
        spans = window_examples(input_dict[specs.EXAMPLES_KEY])
        logging.info('Evaluating on the eval splits of %d span folder(s): %s', len(spans),
                     [a.uri for a in spans])
        changed = {}
        if in_place:
            changed[specs.MODULE_PATH_KEY] = served_model.MODULE
        elif exec_properties.get(specs.EVAL_CONFIG_KEY):
            # The intervals serve the no-regression rule alone (noise.py): none without a baseline.
            changed[specs.EVAL_CONFIG_KEY] = noise.without_intervals(
                exec_properties[specs.EVAL_CONFIG_KEY])
        super().Do(dict(input_dict, **{specs.BASELINE_MODEL_KEY: in_place,
                                       specs.EXAMPLES_KEY: spans}), output_dict,
                   dict(exec_properties, **changed))

        blessing = artifact_utils.get_single_instance(output_dict[specs.BLESSING_KEY])
        evaluation_uri = artifact_utils.get_single_uri(output_dict[specs.EVALUATION_KEY])
        record_figures(blessing, figures.read(evaluation_uri))
        if not blessing.has_custom_property(properties.BLESSED):
            return  # no thresholds configured: the stock executor wrote no blessing
        version = (baselines[0].get_int_custom_property(properties.SERVED_VERSION)
                   if baselines else None)
        reasons = checks.failure_reasons(tfma.load_validation_result(evaluation_uri), version)
        change = noise.read_change(evaluation_uri) if version is not None else None
        if change is not None:
            passed, sentence = noise.judge(
                change, EvalParams.from_properties(exec_properties).max_regression, version)
            blessing.set_string_custom_property(properties.REGRESSION_CHECK, sentence)
            logging.info('No regression: %s', sentence)
            if not passed:
                reasons.append(sentence)
        reasons.extend(drift_reasons(input_dict))
        if reasons and blessing.get_int_custom_property(properties.BLESSED):
            refuse(blessing)
        blessing.set_string_custom_property(properties.BLESSING_REASONS, json.dumps(reasons))
        blessing.set_int_custom_property(properties.COMPARED_VERSION,
                                         properties.NO_VERSION if version is None else version)
        for served in skipped:
            blessing.set_string_custom_property(properties.NOT_COMPARED, (
                f'served version {served.get_int_custom_property(properties.SERVED_VERSION)}'
                f': {served_baseline.incompatible_reason(served)}'))
        if reasons:
            logging.warning('Not blessed: %s', '; '.join(reasons))
