"""A compact ResNet-style ConvNet that scales with the input: the default image model builder.

The contract every builder follows (see training/loop.py): a function
`(input_shape, num_classes) -> keras.Model` whose output is float32 logits, one per class.
Keeping the last layer in float32 matters under mixed precision: softmax and the loss stay exact.

How the network follows the input size (the side is the larger of height and width):
- Stem: a 3x3 convolution of `base_width` (32) channels, at full resolution up to 32 px; with
  stride 2 above 32 px; above 128 px also followed by a 3x3 max-pool of stride 2 (a quarter of
  the resolution, as ResNet's stem), so 224 px costs about what 56 px would.
- Stages: one residual block each (two 3x3 convolutions). The first stage keeps the stem's
  resolution when that is at most 16 px (the 8x8 digits keep their detail), and halves it
  otherwise (28 -> 14). Every further stage halves the resolution; stages are added while the
  feature map is larger than 4x4 on its longer side.
- Widths double per stage from `base_width`, capped at `max_width` (256).
- Head: global average pooling, then a float32 Dense named 'logits'.

For example (multiply-adds of the convolutions and the head, per image):
- 8x8x1: stem 32 @8x8, blocks 32 @8x8, 64 @4x4: 78k parameters, 2.1M multiply-adds;
- 28x28x1: stem 32 @28x28, blocks 32 @14x14, 64 @7x7, 128 @4x4: 0.31M, 10.5M;
- 64x48x3: stem @32x24, blocks 32 @16x12, 64 @8x6, 128 @4x3: 0.31M, 9.9M;
- 224x224x3: stem @112, pool @56, blocks 32 @28, 64 @14, 128 @7, 256 @4: 1.2M, 63M.
`python -m bench.bench_model_size` prints these and measures variants on Fashion-MNIST.
"""
from typing import List, Sequence, Tuple

import keras
from keras import layers

# Keras' default 0.99 averages over ~100 steps of fast-moving early weights: runs of a few hundred
# steps then evaluate with stale statistics (measured: eval accuracy near chance). 0.9 tracks.
BN_MOMENTUM = 0.9

FULL_RESOLUTION_STEM = 32   # px: larger inputs get a stride-2 stem
POOLED_STEM = 128           # px: larger inputs also get a stride-2 max-pool in the stem
STRIDE_1_FIRST_STAGE = 16   # px: at most this, the first stage keeps the stem's resolution
FINAL_SIDE = 4              # px: stages are added while the feature map is larger


def _halve(side: int) -> int:
    return -(-side // 2)   # 'same' padding with stride 2 rounds up


def plan(input_shape: Sequence[int], base_width: int = 32,
         max_width: int = 256) -> Tuple[int, bool, List[Tuple[int, int]]]:
    """The rule above: (stem stride, stem max-pool?, [(width, stride) per stage])."""
    side = max(int(input_shape[0]), int(input_shape[1]))
    stem_stride = 2 if side > FULL_RESOLUTION_STEM else 1
    pool = side > POOLED_STEM
    side = _halve(side) if stem_stride == 2 else side
    side = _halve(side) if pool else side
    stages = []
    while not stages or side > FINAL_SIDE:
        stride = 1 if not stages and side <= STRIDE_1_FIRST_STAGE else 2
        side = _halve(side) if stride == 2 else side
        stages.append((min(base_width * 2 ** len(stages), max_width), stride))
    return stem_stride, pool, stages


def _residual_block(x, filters: int, stride: int):
    shortcut = x
    y = layers.Conv2D(filters, 3, strides=stride, padding='same', use_bias=False)(x)
    y = layers.BatchNormalization(momentum=BN_MOMENTUM)(y)
    y = layers.ReLU()(y)
    y = layers.Conv2D(filters, 3, padding='same', use_bias=False)(y)
    y = layers.BatchNormalization(momentum=BN_MOMENTUM)(y)
    if stride != 1 or shortcut.shape[-1] != filters:
        # Project the shortcut when the shape changes, as in the original ResNet "option B".
        shortcut = layers.Conv2D(filters, 1, strides=stride, use_bias=False)(shortcut)
        shortcut = layers.BatchNormalization(momentum=BN_MOMENTUM)(shortcut)
    return layers.ReLU()(layers.Add()([y, shortcut]))


def build_model(input_shape: Sequence[int], num_classes: int, base_width: int = 32,
                max_width: int = 256, blocks_per_stage: int = 1) -> keras.Model:
    """Stem, residual stages down to about 4x4 (see the module docstring), then a classifier."""
    stem_stride, pool, stages = plan(input_shape, base_width, max_width)
    inputs = keras.Input(shape=tuple(input_shape), name='image')
    x = layers.Conv2D(base_width, 3, strides=stem_stride, padding='same', use_bias=False)(inputs)
    x = layers.BatchNormalization(momentum=BN_MOMENTUM)(x)
    x = layers.ReLU()(x)
    if pool:
        x = layers.MaxPooling2D(3, strides=2, padding='same')(x)
    for width, stride in stages:
        for block in range(blocks_per_stage):
            x = _residual_block(x, width, stride if block == 0 else 1)
    x = layers.GlobalAveragePooling2D()(x)
    logits = layers.Dense(num_classes, dtype='float32', name='logits')(x)
    return keras.Model(inputs, logits, name='small_resnet')
