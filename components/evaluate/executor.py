"""Executor of our Evaluator: picks the baseline, runs the stock TFMA executor, says why.

Before: an empty baseline (nothing served yet) and an incompatible one (the served model
predicts other classes or takes another input, components/baseline/) are dropped, so the stock
executor skips TFMA's change thresholds ("must not be worse than the baseline") and checks the
absolute ones only.
After: TFMA's validation result (in the evaluation artifact) is put into words on the blessing,
so the run summary and the Pusher can say exactly why a model was not blessed:
- `blessing_reasons`: JSON list of failed checks, e.g. ["sparse_categorical_accuracy 0.8712 <
  0.90"]; [] when blessed;
- `compared_version`: the served version the candidate was compared with, -1 for none;
- `not_compared`: when a served model was skipped, which and why.
"""
import json
from typing import Any, Dict, List

from absl import logging
import tensorflow_model_analysis as tfma
from tfx import types
from tfx.components.evaluator import executor as stock_executor
from tfx.types import artifact_utils
from tfx.types import standard_component_specs as specs

from components.baseline import executor as baseline_lib
from components.evaluate import checks
from components.evaluate import served_model

REASONS_PROPERTY = checks.REASONS_PROPERTY
COMPARED_VERSION_PROPERTY = checks.COMPARED_VERSION_PROPERTY
NOT_COMPARED_PROPERTY = checks.NOT_COMPARED_PROPERTY


class Executor(stock_executor.Executor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        given = input_dict.get(specs.BASELINE_MODEL_KEY, [])
        baselines = [b for b in given if baseline_lib.is_comparable(b)]
        skipped = [b for b in given
                   if baseline_lib.has_model(b) and not baseline_lib.is_comparable(b)]
        if given and not baselines:
            logging.info('No comparable baseline (%s): no change thresholds.',
                         'served model incompatible' if skipped else 'nothing served yet')
        # The baseline names the served folder, it holds no copy: TFMA loads it in place.
        in_place = [baseline_lib.in_place(b) for b in baselines]
        super().Do(dict(input_dict, **{specs.BASELINE_MODEL_KEY: in_place}), output_dict,
                   dict(exec_properties, **({specs.MODULE_PATH_KEY: served_model.MODULE}
                                           if in_place else {})))

        blessing = artifact_utils.get_single_instance(output_dict[specs.BLESSING_KEY])
        if not blessing.has_custom_property('blessed'):
            return  # no thresholds configured: the stock executor wrote no blessing
        version = (baselines[0].get_int_custom_property(baseline_lib.SERVED_VERSION)
                   if baselines else None)
        result = tfma.load_validation_result(
            artifact_utils.get_single_uri(output_dict[specs.EVALUATION_KEY]))
        reasons = checks.failure_reasons(result, version)
        blessing.set_string_custom_property(REASONS_PROPERTY, json.dumps(reasons))
        blessing.set_int_custom_property(COMPARED_VERSION_PROPERTY,
                                         baseline_lib.NO_VERSION if version is None else version)
        for served in skipped:
            blessing.set_string_custom_property(NOT_COMPARED_PROPERTY, (
                f'served version {served.get_int_custom_property(baseline_lib.SERVED_VERSION)}'
                f': {baseline_lib.incompatible_reason(served)}'))
        if reasons:
            logging.warning('Not blessed: %s', '; '.join(reasons))
