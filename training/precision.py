"""Mixed-precision policy choice and our own dynamic loss scaling (no TFX imports).

`auto` never picks a policy slower than float32: mixed_float16 on a GPU; on a CPU with
bfloat16 instructions, mixed_bfloat16 only for a model whose forward pass costs at least
BF16_MIN_MACS multiply-adds per example (training/cost.py) with less than
DEPTHWISE_MAX_SHARE of them in depthwise convolutions, since below that size the casts and
memory-bound layers cost as much as the faster arithmetic saves, and depthwise layers are slower
in bfloat16; float32 otherwise, and always on a CPU without them, which emulates bfloat16
(bench/bench_precision.py). The decision comes with its reason, for the log, the Model artifact
and the run summary.

Why our own loss scale: Keras 3's LossScaleOptimizer does a merge_call inside a cond, which fails
inside strategy.run with more than one replica (the keras #20582 family; measured here with 2
logical CPU devices). The train step therefore all-reduces gradients itself, checks them for
inf/NaN once per update in cross-replica context, and updates this scale there.
"""
from typing import Callable, NamedTuple, Optional, Tuple, Union

import keras
import tensorflow as tf

from training import cost
# BF16_MIN_MACS: the line, with its measurements, is in training/choices.py (for --help).
from training.choices import BF16_MIN_MACS, POLICIES

# Depthwise convolutions have no fast bfloat16 kernel here: MobileNetV3Small (14% of its
# multiply-adds depthwise) ran 0.69x-0.89x float32 at every size measured (128-320 px,
# 18M-112M; bench/bench_precision.py, docs/benchmarks.md, "Precision").
# Models with at least this share (MobileNets, EfficientNets: 7-14%) stay float32; Xception
# (1.6%) is decided by its total like a dense model.
DEPTHWISE_MAX_SHARE = 0.05


def cpu_has_bf16(cpuinfo: str = '/proc/cpuinfo') -> bool:
    """True when the CPU computes bfloat16 natively (AVX512_BF16 or AMX), where it pays off."""
    try:
        with open(cpuinfo) as handle:
            flags = handle.read()
    except OSError:
        return False
    return 'avx512_bf16' in flags or 'amx_bf16' in flags


class Cost(NamedTuple):
    """A model's forward multiply-adds per example, and the part of them in depthwise layers."""
    macs: int
    depthwise_macs: int = 0

    @property
    def depthwise_share(self) -> float:
        return self.depthwise_macs / self.macs if self.macs else 0.0


def measure_cost(build: Callable[[], keras.Model]) -> Cost:
    """The Cost of the model `build` returns, built in float32 on the CPU.

    For deciding `auto` before the real model is built under the chosen (global) policy; the
    throw-away build is a few seconds for ResNet-50, a fraction of one for the default model.
    """
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy('float32')
    try:
        with tf.device('/CPU:0'):
            model = build()
            return Cost(cost.macs(model), cost.depthwise_macs(model))
    finally:
        keras.mixed_precision.set_global_policy(previous)


# What choose_policy accepts as the model's cost: a Cost, bare multiply-adds (no depthwise
# part), a function returning either (called only when the answer depends on it), or None.
CostLike = Union[Cost, int, Callable[[], Union[Cost, int]], None]


def choose_policy(name: str, model_cost: CostLike = None, num_gpus: Optional[int] = None,
                  bf16_cpu: Optional[bool] = None,
                  threshold: int = BF16_MIN_MACS) -> Tuple[str, str]:
    """(policy, why) for the policy asked; 'auto' as in the module docstring."""
    if name not in POLICIES:
        raise ValueError(f'mixed_precision must be one of {POLICIES}, got {name!r}')
    if name != 'auto':
        return name, 'asked'
    if num_gpus is None:
        num_gpus = len(tf.config.list_physical_devices('GPU'))
    if num_gpus:
        return 'mixed_float16', f'auto on {num_gpus} GPU(s)'
    if bf16_cpu is None:
        bf16_cpu = cpu_has_bf16()
    if not bf16_cpu:  # emulated bfloat16: its convolution gradients are many times slower
        return 'float32', 'auto on a CPU without bfloat16 instructions'
    if callable(model_cost):
        model_cost = model_cost()
    if model_cost is None:
        return 'float32', 'auto on a bf16 CPU, model cost unknown'
    if not isinstance(model_cost, Cost):
        model_cost = Cost(int(model_cost))
    total = f'{model_cost.macs / 1e6:,.1f}M multiply-adds per example'
    if model_cost.depthwise_share >= DEPTHWISE_MAX_SHARE:
        return 'float32', (f'auto on a bf16 CPU: {model_cost.depthwise_share:.0%} of its {total} '
                           'in depthwise convolutions, which are slower in bfloat16')
    if model_cost.macs >= threshold:
        return 'mixed_bfloat16', (f'auto on a bf16 CPU: {total} >= {threshold / 1e6:,.0f}M, '
                                  'where bfloat16 pays')
    return 'float32', (f'auto on a bf16 CPU: {total} < {threshold / 1e6:,.0f}M, below which '
                       'bfloat16 is slower')


def resolve_policy(name: str, num_gpus: Optional[int] = None, bf16_cpu: Optional[bool] = None,
                   model_cost: CostLike = None) -> str:
    """The policy of choose_policy, without its reason."""
    return choose_policy(name, model_cost, num_gpus, bf16_cpu)[0]


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

