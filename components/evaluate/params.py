"""EvalParams: the blessing rule's bars, the config file's [eval] table (core/
settings.py). `min_accuracy` and `min_class_accuracy` reach the Evaluator as TFMA thresholds in
its eval_config (pipeline/definition/factory.py make_eval_config), `max_regression` as an execution
property of its own (component.py), which the executor reads back with `from_properties`.
No TFX imports.
"""
import dataclasses
from typing import ClassVar, Optional

from core.settings import Settings, setting


def _fraction(value) -> bool:
    return value is None or 0.0 <= value <= 1.0


@dataclasses.dataclass(frozen=True)
class EvalParams(Settings):
    GROUP: ClassVar[str] = 'evaluation and push'
    min_accuracy: float = setting(
        0.90, 'overall eval accuracy needed to push', '--min-accuracy',
        check=(_fraction, 'must be in [0, 1]'), property=False)
    max_regression: float = setting(
        0.0, "how much below the served model's accuracy is allowed",
        check=(_fraction, 'must be in [0, 1]'))
    # Opt-in bar for every class's accuracy (the label_name slices); None = no per-class bar.
    min_class_accuracy: Optional[float] = setting(
        None, 'opt-in: every class must reach this too', check=(_fraction, 'must be in [0, 1]'),
        property=False)
