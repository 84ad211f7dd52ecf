"""PushParams: how a blessed model is served, the config file's [push] table (core/
settings.py). They reach the Pusher's executor in the stock Pusher's custom_config (component.py)
under their field names, read back with `from_properties`. No TFX imports.
"""
import dataclasses
from typing import ClassVar

from core import serving_labels
from core.settings import Settings, setting


@dataclasses.dataclass(frozen=True)
class PushParams(Settings):
    GROUP: ClassVar[str] = 'evaluation and push'
    # Labelled versions (stable, canary) are always kept besides these.
    keep_versions: int = setting(5, 'serving/ keeps this many newest versions',
                                 check=(lambda n: n >= 1, 'must be >= 1'))
    # core/serving_labels.py, docs/serving.md "Labels".
    mode: str = setting(
        'auto', 'auto: a blessed model becomes the stable version clients get; candidate: it '
        'goes out as the canary beside stable until --promote or --reject (the first one '
        'becomes stable)', '--push-mode', choices=serving_labels.MODES,
        check=(lambda mode: mode in serving_labels.MODES,
               f'must be one of {", ".join(serving_labels.MODES)}'))
