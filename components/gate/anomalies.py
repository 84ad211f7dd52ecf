"""Reads TFDV anomaly protos and renders them for people (no TFX imports)."""
from typing import Dict

from tensorflow_metadata.proto.v0 import anomalies_pb2

from core import storage


class DataAnomaliesError(RuntimeError):
    """The data does not match the schema; the message lists every anomaly (the gate's
    executor raises it, the local runner shows it as the run's failure)."""


def load(path: str) -> anomalies_pb2.Anomalies:
    """Reads a binary Anomalies proto, as the stock ExampleValidator writes it."""
    return anomalies_pb2.Anomalies.FromString(storage.read(path))


def describe(anomalies: anomalies_pb2.Anomalies) -> str:
    """One line per anomalous feature: name, short description, and TFDV's long description."""
    lines = []
    for feature, info in sorted(anomalies.anomaly_info.items()):
        lines.append(f'  {feature}: {info.short_description} -- {info.description}')
    if anomalies.HasField('dataset_anomaly_info'):
        info = anomalies.dataset_anomaly_info
        lines.append(f'  (dataset): {info.short_description} -- {info.description}')
    return '\n'.join(lines)


def has_anomalies(anomalies: anomalies_pb2.Anomalies) -> bool:
    return bool(anomalies.anomaly_info) or anomalies.HasField('dataset_anomaly_info')


def report(by_split: Dict[str, anomalies_pb2.Anomalies]) -> str:
    """A multi-line report of every split that has anomalies; empty when all are clean."""
    parts = [f'split {split!r}:\n{describe(found)}'
             for split, found in sorted(by_split.items()) if has_anomalies(found)]
    return '\n'.join(parts)
