"""Executors of ScoringModel and ScoreWriter (component.py): one Do each, the work in the
libraries beside them (served.py, predictions.py, results.py)."""
import os
from typing import Any, Dict, List

from absl import logging
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import path_utils

from core import properties, storage
from components.score import predictions, results, served

_LOGS = 'prediction_logs-*.gz'   # what the stock BulkInferrer writes into its InferenceResult


class ModelExecutor(base_executor.BaseExecutor):
    """Resolves the version and places its SavedModel where BulkInferrer reads a model."""

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        model = artifact_utils.get_single_instance(output_dict['model'])
        version, source = served.resolve(exec_properties['serving_dir'],
                                         int(exec_properties.get('version') or 0))
        files = served.place(source, path_utils.serving_model_dir(model.uri))
        model.set_int_custom_property(properties.MODEL_VERSION, version)
        model.set_string_custom_property(properties.MODEL_PATH, source)
        logging.info('Scoring with model version %d (%s, %d files placed in %s)', version,
                     source, files, model.uri)


def _read_logs(uri: str) -> List[prediction_log_pb2.PredictionLog]:
    logs = []
    for path in sorted(tf.io.gfile.glob(os.path.join(uri, _LOGS))):
        for record in tf.compat.v1.io.tf_record_iterator(
                path, tf.io.TFRecordOptions(compression_type='GZIP')):
            logs.append(prediction_log_pb2.PredictionLog.FromString(record))
    return logs


class WriterExecutor(base_executor.BaseExecutor):
    """Prediction rows, the quarantine and the summary, into the artifact and output_dir."""

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        examples = artifact_utils.get_single_instance(input_dict['examples'])
        model = artifact_utils.get_single_instance(input_dict['model'])
        inference = artifact_utils.get_single_instance(input_dict['inference_result'])
        out = artifact_utils.get_single_instance(output_dict['predictions'])
        version = model.get_int_custom_property(properties.MODEL_VERSION)
        rows = predictions.rows(_read_logs(inference.uri), version,
                                int(exec_properties.get('top_k') or predictions.TOP_K))
        counts = {name: examples.get_int_custom_property(name)
                  for name in examples.mlmd_artifact.custom_properties
                  if name.startswith('num_')}
        summary = results.summarize(
            version, model.get_string_custom_property(properties.MODEL_PATH),
            exec_properties.get('input_base', ''), counts, len(rows))
        quarantine_uri = examples.get_string_custom_property(properties.QUARANTINE_URI)
        quarantine = (quarantine_uri and storage.read_text(quarantine_uri)) or ''
        results.write_all(out.uri, rows, quarantine, summary)
        for name, key in ((properties.NUM_INPUTS, 'inputs'), (properties.NUM_SCORED, 'scored'),
                          (properties.NUM_QUARANTINED, 'quarantined')):
            out.set_int_custom_property(name, summary[key])
        out.set_int_custom_property(properties.MODEL_VERSION, version)
        output_dir = exec_properties.get('output_dir') or ''
        if output_dir:
            results.publish(output_dir, rows, quarantine, summary)
        out.set_string_custom_property('output_dir', output_dir or out.uri)
        logging.info('%s; predictions in %s', results.summary_line(summary),
                     output_dir or out.uri)
