"""Drift figures and their words: which features are compared, how, against which threshold.

No TFX imports. The figures themselves come from TFDV's comparators (tfdv.validate_statistics
with `previous_statistics`, see executor.py), which record every measured value in the
Anomalies' `drift_skew_info`, also below the threshold: L-infinity distance for the label and
categorical features, Jensen-Shannon divergence for numeric ones. The image size and colour-mode
mixes are counts that ingestion keeps on the Examples, not TFDV features, so their L-infinity
distance is computed here, the same way TFDV does it: the largest difference between the two
normalised count vectors, over the union of the keys.
"""
import dataclasses
import json
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

from tensorflow_metadata.proto.v0 import anomalies_pb2, schema_pb2

from core import features

L_INFINITY = 'L-infinity'
JENSEN_SHANNON = 'Jensen-Shannon'
SHORT = {L_INFINITY: 'L∞', JENSEN_SHANNON: 'JS'}
# How the label is named in the figures: its class-name feature carries the class mix (the
# integer `label` is the same mix, and TFDV keeps no category counts for integer features).
LABEL = 'label'
IMAGE_SIZES = 'image size'
COLOR_MODES = 'colour mode'
# Never compared: unique per example (paths, the image bytes) or already covered (the label
# index, the image geometry, which the size mix covers).
_NOT_COMPARED = frozenset({features.LABEL_KEY, features.SOURCE_KEY, features.IMAGE_KEY,
                           features.IMAGE_RAW_KEY, features.CHANNELS_KEY, features.HEIGHT_KEY,
                           features.WIDTH_KEY})
_MEASURE_BY_TYPE = {anomalies_pb2.DriftSkewInfo.Measurement.L_INFTY: L_INFINITY,
                    anomalies_pb2.DriftSkewInfo.Measurement.JENSEN_SHANNON_DIVERGENCE:
                        JENSEN_SHANNON}


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The largest value that is not drift, per kind of feature (DriftParams's fields)."""
    label: float        # L-infinity of the class mix
    categorical: float  # L-infinity of any other categorical feature (CSV string columns)
    numeric: float      # Jensen-Shannon divergence of a numeric feature (CSV float columns)
    image: float        # L-infinity of the image size mix and of the colour-mode mix


@dataclasses.dataclass(frozen=True)
class DriftValue:
    feature: str
    measure: str
    value: float
    threshold: float

    @property
    def exceeded(self) -> bool:
        return self.value > self.threshold

    def as_json(self) -> dict:
        return {'feature': self.feature, 'measure': self.measure, 'value': self.value,
                'threshold': self.threshold, 'exceeded': self.exceeded}


def _shown(feature: str) -> str:
    return LABEL if feature == features.LABEL_NAME_KEY else feature


def drift_schema(feature_types: Mapping[str, int], thresholds: Thresholds) -> schema_pb2.Schema:
    """A schema that only asks TFDV to compare: one drift comparator per compared feature.

    `feature_types`: name -> schema_pb2.FeatureType of the features in both statistics.
    """
    schema = schema_pb2.Schema()
    for name, kind in sorted(feature_types.items()):
        if name in _NOT_COMPARED or kind not in (schema_pb2.BYTES, schema_pb2.FLOAT):
            continue
        feature = schema.feature.add(name=name, type=kind)
        if kind == schema_pb2.FLOAT:
            feature.drift_comparator.jensen_shannon_divergence.threshold = thresholds.numeric
        else:
            feature.drift_comparator.infinity_norm.threshold = (
                thresholds.label if name == features.LABEL_NAME_KEY else thresholds.categorical)
    return schema


def from_anomalies(anomalies: anomalies_pb2.Anomalies) -> List[DriftValue]:
    """Every drift measurement TFDV recorded (drift_skew_info), below its threshold or not."""
    values = []
    for info in anomalies.drift_skew_info:
        name = '.'.join(info.path.step)
        for measurement in info.drift_measurements:
            measure = _MEASURE_BY_TYPE.get(measurement.type)
            if measure is not None:
                values.append(DriftValue(_shown(name), measure, float(measurement.value),
                                         float(measurement.threshold)))
    return values


def counts(value) -> Optional[Dict[str, float]]:
    """A count mix as ingestion records it (a JSON string or a dict); None when absent."""
    if value is None or value == '':
        return None
    mix = json.loads(value) if isinstance(value, str) else dict(value)
    return {str(k): float(v) for k, v in mix.items()} or None


def summed(mixes: Iterable[Optional[Mapping[str, float]]]) -> Optional[Dict[str, float]]:
    """The mix of several spans (None when no span recorded one)."""
    total: Dict[str, float] = {}
    found = False
    for mix in mixes:
        if mix:
            found = True
            for key, count in mix.items():
                total[key] = total.get(key, 0.0) + count
    return total if found else None


def l_infinity(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """The largest difference between the two mixes' shares, over every key of either."""
    total_a, total_b = sum(a.values()), sum(b.values())
    if not total_a or not total_b:
        return 0.0
    return max(abs(a.get(k, 0.0) / total_a - b.get(k, 0.0) / total_b) for k in set(a) | set(b))


def image_mix(new_sizes, new_modes, old_sizes, old_modes, threshold: float) -> List[DriftValue]:
    """L-infinity of the image size mix and of the colour-mode mix, where both sides have one."""
    values = []
    for name, new, old in ((IMAGE_SIZES, new_sizes, old_sizes),
                           (COLOR_MODES, new_modes, old_modes)):
        if new and old:
            values.append(DriftValue(name, L_INFINITY, l_infinity(new, old), threshold))
    return values


def reason(value: DriftValue, version: int) -> str:
    """e.g. 'label L∞ 0.63 > 0.30 vs the data of served version 1'."""
    return (f'{value.feature} {SHORT[value.measure]} {value.value:.2f} > {value.threshold:.2f} '
            f'vs the data of served version {version}')


def reasons(values: Sequence[DriftValue], version: int) -> List[str]:
    return [reason(v, version) for v in values if v.exceeded]


def text(values: Sequence[DriftValue], version: int, not_measured: Optional[str]) -> str:
    """The summary's drift line: the exceeded values, else the largest relative to its bar."""
    if not_measured:
        return f'drift: not measured ({not_measured})'
    exceeded = reasons(values, version)
    if exceeded:
        return 'drift: ' + '; '.join(exceeded)
    if not values:
        return f'drift: no feature to compare with the data of served version {version}'
    label = [v for v in values if v.feature == LABEL]
    others = [v for v in values if v.feature != LABEL]
    shown = [f'{v.feature} {SHORT[v.measure]} {v.value:.2f} <= {v.threshold:.2f}'
             for v in label]
    if others:  # the one closest to its bar
        nearest = max(others, key=lambda v: v.value / v.threshold if v.threshold else v.value)
        shown.append(f'largest {"other " if label else ""}{nearest.feature} '
                     f'{SHORT[nearest.measure]} {nearest.value:.2f} <= {nearest.threshold:.2f}')
    return f'drift: {", ".join(shown)} vs the data of served version {version}'
