"""A compact ResNet-style ConvNet: the default model builder for small images.

The contract every builder follows (see components/trainer/loop.py): a function
`(input_shape, num_classes) -> keras.Model` whose output is float32 logits, one per class.
Keeping the last layer in float32 matters under mixed precision: softmax and the loss stay exact.
"""
from typing import Sequence

import keras
from keras import layers

# Keras' default 0.99 averages over ~100 steps of fast-moving early weights: runs of a few hundred
# steps then evaluate with stale statistics (measured: eval accuracy near chance). 0.9 tracks.
BN_MOMENTUM = 0.9


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


def build_model(input_shape: Sequence[int], num_classes: int,
                widths: Sequence[int] = (32, 64)) -> keras.Model:
    """Stem conv, one residual block per width (downsampling after the first), then a classifier."""
    inputs = keras.Input(shape=tuple(input_shape), name='image')
    x = layers.Conv2D(widths[0], 3, padding='same', use_bias=False)(inputs)
    x = layers.BatchNormalization(momentum=BN_MOMENTUM)(x)
    x = layers.ReLU()(x)
    for i, width in enumerate(widths):
        x = _residual_block(x, width, stride=1 if i == 0 else 2)
    x = layers.GlobalAveragePooling2D()(x)
    logits = layers.Dense(num_classes, dtype='float32', name='logits')(x)
    return keras.Model(inputs, logits, name='small_resnet')
