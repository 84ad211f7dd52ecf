"""Top-1 accuracy as a TFMA-native metric: the blessing's metric, counted in Python. No TFX imports.

It is Keras' `SparseCategoricalAccuracy` (tf_keras/src/metrics/accuracy_metrics.py and
`sparse_categorical_accuracy` in tf_keras/src/metrics/__init__.py): an example counts as right when
the argmax of its predicted probabilities equals its integer label (the first of tied maxima, as
`tf.argmax` takes); the value is right / all, weighted when examples are, and 0 for no examples
(Keras divides with `divide_no_nan`). The key keeps Keras' name, so evaluations made before and
after read alike (the report, the run summary).

Why not the Keras metric itself: TFMA runs a Keras metric through its compilable-metrics
combiner (tensorflow_model_analysis/metrics/tf_metric_wrapper.py `_CompilableMetricsCombiner`),
which deserialises the metric in every bundle and calls its eager `update_state` once per batch
per slice, and per jackknife bucket when intervals are computed. On the smoke run that was about
half of the Evaluator's time for a count of argmax matches; this combiner only adds integers, as
TFMA's own ExampleCount does beside it.
"""
from typing import Dict, Iterable, List, Optional

import apache_beam as beam
import numpy as np
from tensorflow_model_analysis.metrics import metric_types, metric_util

NAME = 'sparse_categorical_accuracy'   # Keras' name for it (see the docstring)


class SparseCategoricalAccuracy(metric_types.Metric):
    """Named in a MetricConfig by class_name and this module (make_eval_config,
    pipeline/definition/factory.py)."""

    def __init__(self, name: str = NAME):
        super().__init__(metric_util.merge_per_key_computations(_computations), name=name)


def _computations(name: str, eval_config=None, model_name: str = '', output_name: str = '',
                  sub_key: Optional[metric_types.SubKey] = None, aggregation_type=None,
                  class_weights=None, example_weighted: bool = False
                  ) -> metric_types.MetricComputations:
    if sub_key is not None or aggregation_type is not None:
        raise ValueError(f'{NAME} is top-1 accuracy over all classes: binarize and aggregate '
                         f'settings do not apply (got sub_key={sub_key}, '
                         f'aggregation_type={aggregation_type})')
    key = metric_types.MetricKey(name=name, model_name=model_name, output_name=output_name,
                                 example_weighted=example_weighted)
    return [metric_types.MetricComputation(
        keys=[key], preprocessors=None,
        combiner=_Combiner(key, eval_config, example_weighted))]


class _Combiner(beam.CombineFn):
    """Accumulator: [weighted right, weighted all]."""

    def __init__(self, key: metric_types.MetricKey, eval_config, example_weighted: bool):
        self._key = key
        self._eval_config = eval_config
        self._example_weighted = example_weighted

    def create_accumulator(self) -> List[float]:
        return [0.0, 0.0]

    def add_input(self, accumulator: List[float],
                  element: metric_types.StandardMetricInputs) -> List[float]:
        for label, prediction, weight in metric_util.to_label_prediction_example_weight(
                element, eval_config=self._eval_config, model_name=self._key.model_name,
                output_name=self._key.output_name, example_weighted=self._example_weighted,
                flatten=False, require_single_example_weight=True):
            if label.size != 1:
                raise ValueError(f'{NAME} needs one integer label per example (sparse); got '
                                 f'{label.size} values: {label}')
            weight = float(metric_util.safe_to_scalar(weight))
            right = int(np.argmax(prediction)) == int(label.reshape(-1)[0])
            accumulator[0] += weight * right
            accumulator[1] += weight
        return accumulator

    def merge_accumulators(self, accumulators: Iterable[List[float]]) -> List[float]:
        merged = [0.0, 0.0]
        for right, count in accumulators:
            merged[0] += right
            merged[1] += count
        return merged

    def extract_output(self, accumulator: List[float]) -> Dict[metric_types.MetricKey, float]:
        right, count = accumulator
        return {self._key: right / count if count else 0.0}
