"""DriftParams: how far the new span's data may move from the data the served model was trained
on before the run refuses to push; the config file's [drift] table and DriftCheck's execution
properties (core/settings.py). 1.0 switches a check off: no L-infinity distance or
Jensen-Shannon divergence (base 2) exceeds it.

Defaults: a class-mix shift of 30 points (L∞ 0.30: e.g. one class from 25% to 55%) is far
beyond sampling noise (a 4-class span of 1,000 images moves a share by about 0.03) and is the
size of shift that visibly biases a classifier (the drifted day of docs/benchmarks.md measured
0.59). The same 0.30 holds for other categorical columns and for the image size and colour-mode
mixes (a share moving by 30 points changes what the model sees). Numeric columns: Jensen-
Shannon 0.15, about a one-standard-deviation shift of the mean, while two samples of 150 rows of
the same distribution measure up to about 0.07. No TFX imports.
"""
import dataclasses
from typing import ClassVar

from core.settings import Settings, setting

_BAR = (lambda value: 0.0 <= value <= 1.0, 'must be in [0, 1]')


@dataclasses.dataclass(frozen=True)
class DriftParams(Settings):
    GROUP: ClassVar[str] = 'evaluation and push'
    max_label_drift: float = setting(
        0.30, "refuse to push when the new span's class mix is further than this L-infinity "
        "distance from the served model's training data; 1 = off", '--max-label-drift',
        metavar='L', check=_BAR,
        default_text='0.3; other drift bars: [drift] in the config file')
    max_categorical_drift: float = setting(
        0.30, 'L-infinity of other categorical (CSV) columns', check=_BAR)
    max_numeric_drift: float = setting(
        0.15, 'Jensen-Shannon divergence of numeric (CSV) columns', check=_BAR)
    max_image_drift: float = setting(
        0.30, 'L-infinity of the image size and colour-mode mixes', check=_BAR)
