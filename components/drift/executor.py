"""Executor of DriftCheck: measures, records every value, and words the outcome.

Custom properties of the `drift` artifact (read by the Evaluator, the summary and the report):
- `drift_values`: JSON list of {"feature", "measure", "value", "threshold", "exceeded"}, every
  compared feature, also below its threshold;
- `drift_reasons`: JSON list, one line per exceeded value, e.g. "label L∞ 0.63 > 0.30 vs the
  data of served version 1";
- `compared_version`: the served version whose data was the baseline, -1 when none;
- `drift_text`: the summary's line, which also says why nothing was measured when so.
The same record is written to `drift.json` in the artifact's folder.
Nothing is compared (and nothing refused) when nothing is served, when the served model is not
comparable (another task's, or its folder is gone), or when it does not record, or no longer
finds, the data it was trained on.
"""
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import tensorflow as tf
from tfx import types
from tfx.components.statistics_gen import stats_artifact_utils
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from core import image_shape, properties, served_baseline
from components.drift import compare, measures, training_data
from components.drift.params import DriftParams

RECORD_FILE = 'drift.json'


def thresholds(exec_properties: Dict[str, Any]) -> measures.Thresholds:
    params = DriftParams.from_properties(exec_properties)
    return measures.Thresholds(
        label=params.max_label_drift, categorical=params.max_categorical_drift,
        numeric=params.max_numeric_drift, image=params.max_image_drift)


def measure(statistics: types.Artifact, examples: types.Artifact, baseline: types.Artifact,
            limits: measures.Thresholds, pipeline_root: str
            ) -> Tuple[int, List[measures.DriftValue], Optional[str]]:
    """(compared version, values, why nothing was measured or None)."""
    if not served_baseline.has_model(baseline):
        return properties.NO_VERSION, [], 'nothing served yet'
    version = baseline.get_int_custom_property(properties.SERVED_VERSION)
    reason = served_baseline.incompatible_reason(baseline)
    if reason:  # another task's model, or its folder is gone
        return version, [], f'served version {version} is not comparable: {reason}'
    served_path = baseline.get_string_custom_property(properties.SERVED_PATH)
    window = training_data.read_window(served_path)
    if window is None:
        return version, [], (f'served version {version} does not record the data it was '
                             f'trained on ({training_data.TRAINING_DATA_FILE})')
    try:
        old = training_data.statistics(window, pipeline_root)
    except training_data.MissingData as error:
        return version, [], f'{error}, the data of served version {version}'
    new = stats_artifact_utils.load_statistics(statistics, 'train').proto()
    values = compare.feature_drift(new, old, limits)
    values += measures.image_mix(
        measures.counts(examples.get_string_custom_property(image_shape.SIZES_PROPERTY)),
        measures.counts(examples.get_string_custom_property(image_shape.MODES_PROPERTY)),
        measures.summed(measures.counts(e.get(image_shape.SIZES_PROPERTY)) for e in window),
        measures.summed(measures.counts(e.get(image_shape.MODES_PROPERTY)) for e in window),
        limits.image)
    return version, values, None


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        drift = artifact_utils.get_single_instance(output_dict['drift'])
        version, values, not_measured = measure(
            artifact_utils.get_single_instance(input_dict['statistics']),
            artifact_utils.get_single_instance(input_dict['examples']),
            artifact_utils.get_single_instance(input_dict['baseline']),
            thresholds(exec_properties), exec_properties['pipeline_root'])
        record = {properties.DRIFT_VALUES: [v.as_json() for v in values],
                  properties.DRIFT_REASONS: measures.reasons(values, version),
                  properties.COMPARED_VERSION: version if not not_measured else -1,
                  properties.DRIFT_TEXT: measures.text(values, version, not_measured)}
        for name in (properties.DRIFT_VALUES, properties.DRIFT_REASONS):
            drift.set_string_custom_property(name, json.dumps(record[name]))
        drift.set_int_custom_property(properties.COMPARED_VERSION,
                                      record[properties.COMPARED_VERSION])
        drift.set_string_custom_property(properties.DRIFT_TEXT, record[properties.DRIFT_TEXT])
        tf.io.gfile.makedirs(drift.uri)
        with tf.io.gfile.GFile(os.path.join(drift.uri, RECORD_FILE), 'w') as handle:
            json.dump(record, handle, indent=1)
        log = logging.warning if record[properties.DRIFT_REASONS] else logging.info
        log(record[properties.DRIFT_TEXT])
