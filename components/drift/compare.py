"""Compares two sets of statistics with TFDV's drift comparators. No TFX imports.

tfdv.validate_statistics(new, schema, previous_statistics=old) measures every feature whose
schema entry has a drift_comparator, and records each measurement in the Anomalies'
`drift_skew_info` whether or not it exceeds the threshold (checked on TFDV 1.16.1: a label
mix at L-infinity 0.59 under a threshold of 0.99 is reported with its value), so the figures
below the thresholds come from TFDV too. The schema used is a throw-away one holding only the
comparators (measures.drift_schema): the anomalies it raises otherwise (new columns, domains)
are the data gate's business, judged against the kept schema (components/schema/).
"""
from typing import Dict, List

import tensorflow_data_validation as tfdv
from tensorflow_metadata.proto.v0 import schema_pb2, statistics_pb2

from components.drift import measures

# Statistics' feature types -> the schema type whose comparator TFDV applies (strings are
# categorical: L-infinity; floats numeric: Jensen-Shannon).
_SCHEMA_TYPE = {statistics_pb2.FeatureNameStatistics.STRING: schema_pb2.BYTES,
                statistics_pb2.FeatureNameStatistics.FLOAT: schema_pb2.FLOAT}


def _types(stats: statistics_pb2.DatasetFeatureStatisticsList) -> Dict[str, int]:
    found = {}
    for feature in stats.datasets[0].features if stats.datasets else ():
        name = feature.name or '.'.join(feature.path.step)
        if feature.type in _SCHEMA_TYPE:
            found[name] = _SCHEMA_TYPE[feature.type]
    return found


def feature_drift(new: statistics_pb2.DatasetFeatureStatisticsList,
                  old: statistics_pb2.DatasetFeatureStatisticsList,
                  thresholds: measures.Thresholds) -> List[measures.DriftValue]:
    """The drift of every feature both sides have, as TFDV measures it."""
    new_types, old_types = _types(new), _types(old)
    shared = {name: kind for name, kind in new_types.items() if old_types.get(name) == kind}
    schema = measures.drift_schema(shared, thresholds)
    if not schema.feature:
        return []
    anomalies = tfdv.validate_statistics(new, schema, previous_statistics=old)
    return sorted(measures.from_anomalies(anomalies),
                  key=lambda v: (v.feature != measures.LABEL, v.feature))
