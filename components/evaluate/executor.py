"""Executor of our Evaluator: drops an empty baseline, then runs the stock TFMA executor.

With no baseline, the stock executor skips TFMA's change thresholds ("must not be worse than the
baseline") and checks the absolute ones only, which is what a first run needs.
"""
from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.components.evaluator import executor as stock_executor
from tfx.types import standard_component_specs

from components.baseline.executor import has_model

_BASELINE = standard_component_specs.BASELINE_MODEL_KEY


class Executor(stock_executor.Executor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        baselines = [b for b in input_dict.get(_BASELINE, []) if has_model(b)]
        if input_dict.get(_BASELINE) and not baselines:
            logging.info('The baseline is empty (nothing served yet): no comparison.')
        input_dict = dict(input_dict, **{_BASELINE: baselines})
        super().Do(input_dict, output_dict, exec_properties)
