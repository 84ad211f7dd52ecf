"""The frozen-backbone warm-up as a policy the loop asks before each update (no TFX imports).

Frozen during the first freeze_epochs epochs, then every layer trains (steps.set_frozen applies
it). A resumed run derives the state from the step, so it needs no checkpoint of its own.
"""
from typing import Optional

from training.stopping import epoch_of


class Freezing:
    """Whether the backbone is frozen at each update (freeze_epochs 0: never asked to be)."""

    def __init__(self, freeze_epochs: int, steps_per_epoch: int):
        self.freeze_epochs, self.steps_per_epoch = freeze_epochs, steps_per_epoch

    def frozen_at(self, step: int) -> Optional[bool]:
        """Frozen (True) or not for the update numbered `step`; None without a warm-up."""
        if not self.freeze_epochs:
            return None
        if not self.steps_per_epoch:  # planned by plan.plan_epochs; a fixed length has none
            raise ValueError('freeze_epochs needs training by epochs, not a fixed train_steps')
        return epoch_of(step, self.steps_per_epoch) <= self.freeze_epochs

    def describe(self, frozen: bool) -> str:
        """The log line of a change to `frozen`."""
        return (f'backbone frozen: training only the head for {self.freeze_epochs} epochs'
                if frozen else 'backbone unfrozen: training every layer')
