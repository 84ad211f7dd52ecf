"""Executor tests: AnomalyGate fails on any anomaly with it printed, and passes clean data."""
import os

import pytest
from tensorflow_metadata.proto.v0 import anomalies_pb2
from tfx.types import artifact_utils, standard_artifacts

from components.gate import executor


def _anomalies_artifact(tmp_path, per_split):
    artifact = standard_artifacts.ExampleAnomalies()
    artifact.uri = str(tmp_path / 'anomalies')
    artifact.split_names = artifact_utils.encode_split_names(list(per_split))
    for split, proto in per_split.items():
        os.makedirs(os.path.join(artifact.uri, f'Split-{split}'))
        with open(os.path.join(artifact.uri, f'Split-{split}', 'SchemaDiff.pb'), 'wb') as handle:
            handle.write(proto.SerializeToString())
    return artifact


def _unexpected_label():
    proto = anomalies_pb2.Anomalies()
    info = proto.anomaly_info['label_name']
    info.short_description = 'Unexpected string values'
    info.description = 'Examples contain values missing from the schema: x (~10% of examples)'
    return proto


def test_gate_raises_and_lists_every_anomaly(tmp_path):
    artifact = _anomalies_artifact(tmp_path, {'train': _unexpected_label(),
                                              'eval': anomalies_pb2.Anomalies()})
    with pytest.raises(executor.DataAnomaliesError) as raised:
        executor.Executor().Do({'anomalies': [artifact]}, {}, {})
    message = str(raised.value)
    assert "split 'train'" in message and "split 'eval'" not in message
    assert 'label_name: Unexpected string values' in message
    assert 'missing from the schema: x' in message


def test_gate_passes_clean_data(tmp_path):
    artifact = _anomalies_artifact(tmp_path, {'train': anomalies_pb2.Anomalies(),
                                              'eval': anomalies_pb2.Anomalies()})
    executor.Executor().Do({'anomalies': [artifact]}, {}, {})  # must not raise


def test_dataset_level_anomaly_also_stops_the_run(tmp_path):
    proto = anomalies_pb2.Anomalies()
    proto.dataset_anomaly_info.short_description = 'Low num examples'
    proto.dataset_anomaly_info.description = 'only 0 examples'
    artifact = _anomalies_artifact(tmp_path, {'eval': proto})
    with pytest.raises(executor.DataAnomaliesError, match='Low num examples'):
        executor.Executor().Do({'anomalies': [artifact]}, {}, {})
