"""Mixed-precision policy choice and our own dynamic loss scaling (no TFX imports).

Why our own loss scale: Keras 3's LossScaleOptimizer does a merge_call inside a cond, which fails
inside strategy.run with more than one replica (the keras #20582 family; measured here with 2
logical CPU devices). The train step therefore all-reduces gradients itself, checks them for
inf/NaN once per update in cross-replica context, and updates this scale there.
"""
from typing import Optional

import tensorflow as tf

from components.trainer.choices import POLICIES

def cpu_has_bf16(cpuinfo: str = '/proc/cpuinfo') -> bool:
    """True when the CPU computes bfloat16 natively (AVX512_BF16 or AMX), where it pays off."""
    try:
        with open(cpuinfo) as handle:
            flags = handle.read()
    except OSError:
        return False
    return 'avx512_bf16' in flags or 'amx_bf16' in flags


def resolve_policy(name: str, num_gpus: Optional[int] = None,
                   bf16_cpu: Optional[bool] = None) -> str:
    """Maps 'auto' to mixed_float16 on GPU, mixed_bfloat16 on a bf16 CPU, float32 otherwise."""
    if name not in POLICIES:
        raise ValueError(f'mixed_precision must be one of {POLICIES}, got {name!r}')
    if name != 'auto':
        return name
    if num_gpus is None:
        num_gpus = len(tf.config.list_physical_devices('GPU'))
    if num_gpus:
        return 'mixed_float16'
    if bf16_cpu is None:
        bf16_cpu = cpu_has_bf16()
    return 'mixed_bfloat16' if bf16_cpu else 'float32'


class DynamicLossScale:
    """Loss scale for float16: halve on overflow, double after `growth_interval` good updates.

    Disabled (a constant 1.0) for float32 and bfloat16, whose exponent range needs no scaling.
    Create it under the strategy's scope so the variables are mirrored, and call `update` in
    cross-replica context with a flag that every replica agrees on.
    """

    def __init__(self, enabled: bool, initial_scale: float = 2.0 ** 15,
                 growth_interval: int = 2000, factor: float = 2.0):
        self.enabled = enabled
        self.growth_interval = growth_interval
        self.factor = factor
        initial = initial_scale if enabled else 1.0
        self.scale = tf.Variable(initial, trainable=False, dtype=tf.float32, name='loss_scale')
        self.good_updates = tf.Variable(0, trainable=False, dtype=tf.int64, name='good_updates')

    def update(self, finite: tf.Tensor) -> None:
        if not self.enabled:
            return

        def grow_or_count():
            grow = self.good_updates + 1 >= self.growth_interval
            self.scale.assign(tf.where(grow, self.scale * self.factor, self.scale))
            self.good_updates.assign(tf.where(grow, tf.constant(0, tf.int64),
                                              self.good_updates + 1))

        def shrink():
            # Never below 1: a scale < 1 would make small gradients underflow instead.
            self.scale.assign(tf.maximum(self.scale / self.factor, 1.0))
            self.good_updates.assign(0)

        tf.cond(finite, grow_or_count, shrink)

