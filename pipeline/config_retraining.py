"""Settings of scheduled retraining (issue 18): small frozen dataclasses, validated at
construction, imported by pipeline/config.py as PipelineConfig fields."""
import dataclasses


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclasses.dataclass(frozen=True)
class DriftConfig:
    """How far the new span's data may move from the data the served model was trained on
    before the run refuses to push (components/drift/). 1.0 switches a check off: no
    L-infinity distance or Jensen-Shannon divergence (base 2) exceeds it.

    Defaults: a class-mix shift of 30 points (L∞ 0.30: e.g. one class from 25% to 55%) is
    far beyond sampling noise (a 4-class span of 1,000 images moves a share by about 0.03)
    and is the size of shift that visibly biases a classifier; the issue's drifted day was
    0.59. The same 0.30 holds for other categorical columns and for the image size and
    colour-mode mixes (a share moving by 30 points changes what the model sees). Numeric
    columns: Jensen-Shannon 0.15, about a one-standard-deviation shift of the mean, while two
    samples of 150 rows of the same distribution measure up to about 0.07.
    """
    max_label_drift: float = 0.30        # L-infinity of the label (class) mix
    max_categorical_drift: float = 0.30  # L-infinity of other categorical (CSV string) columns
    max_numeric_drift: float = 0.15      # Jensen-Shannon divergence of numeric (CSV) columns
    max_image_drift: float = 0.30        # L-infinity of the image size and colour-mode mixes

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            _check(0.0 <= value <= 1.0, f'{field.name} must be in [0, 1], got {value}')
