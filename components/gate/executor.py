"""Executor of AnomalyGate: loads each split's anomalies and raises if any were found."""
import os
from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components.gate import anomalies as anomalies_lib
from components.gate.anomalies import DataAnomaliesError

# Where the stock ExampleValidator writes each split's anomalies (binary Anomalies proto).
_ANOMALIES_FILE = 'SchemaDiff.pb'


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        artifact = artifact_utils.get_single_instance(input_dict['anomalies'])
        by_split = {}
        for split in artifact_utils.decode_split_names(artifact.split_names):
            path = os.path.join(artifact_utils.get_split_uri([artifact], split), _ANOMALIES_FILE)
            by_split[split] = anomalies_lib.load(path)
        text = anomalies_lib.report(by_split)
        if text:
            hint = exec_properties.get('schema_hint') or (
                'fix the data, or update the schema if the change is intended')
            raise DataAnomaliesError(
                f'Data validation found anomalies; training will not start. {hint[0].upper()}'
                f'{hint[1:]}.\n{text}')
        logging.info('No anomalies in splits %s.', sorted(by_split))
