"""Standard architectures by name: keras.applications backbones behind our builder contract.

`runner.py --model resnet50` (or efficientnet_b0, mobilenet_v3_small) resolves, in
pipeline/definition/config.py, to `models.applications.<name>`. Each builder follows the contract of
models/resnet.py - `(input_shape, num_classes) -> keras.Model` of float32 logits, taking float32
[0, 1] pixels HxWxC with C in {1, 3} - plus an optional `weights`:

- The application's own input preprocessing is inside the model, so training, evaluation and
  serving all feed it [0, 1] pixels: pixels are scaled to 0..255, grayscale is tiled to 3
  channels, then ResNet50 applies `keras.applications.resnet50.preprocess_input` (BGR, ImageNet
  means), while EfficientNetB0 and MobileNetV3Small rescale with their built-in layers (their
  `preprocess_input` is a pass-through).
- Inputs smaller than the application's minimum (32 px) are upsampled (bilinear) to it inside
  the model rather than refused: 8x8 digits then train on any of them, and serving still takes
  the original size.
- The backbone is one nested layer named `backbone` (include_top=False, global average pooling;
  BatchNorm momentum 0.9 as in models/resnet.py, instead of the applications' 0.99), followed
  by a float32 Dense head named `logits`, so logits stay float32 under mixed precision.
- `weights` is None (random initialisation) or a local Keras weights file of the backbone:
  a `.weights.h5` written by `backbone.save_weights(...)` of the same application built with
  `include_top=False, pooling='avg'` and 3 channels (any input size: the weights do not depend
  on it). Nothing is ever downloaded: keras.applications is always called with weights=None.
"""
import os
from typing import Callable, Optional, Sequence

import keras
from keras import layers

from models.resnet import BN_MOMENTUM

BACKBONE = 'backbone'
MIN_SIZE = 32   # keras.applications' minimum height and width for these three models


def _preprocess_resnet(x):
    return keras.applications.resnet50.preprocess_input(x)


def _backbone(name: str, input_shape: Sequence[int]) -> keras.Model:
    """The application without its top, weights=None (never a download), named BACKBONE."""
    apps = {
        'resnet50': lambda **kw: keras.applications.ResNet50(**kw),
        'efficientnet_b0': lambda **kw: keras.applications.EfficientNetB0(**kw),
        'mobilenet_v3_small': lambda **kw: keras.applications.MobileNetV3Small(
            include_preprocessing=True, **kw),
    }
    model = apps[name](include_top=False, weights=None, input_shape=tuple(input_shape),
                       pooling='avg')
    model.name = BACKBONE
    # The applications' BatchNorm momentum is 0.99; our runs are a few hundred updates, for
    # which that evaluates with stale statistics (see models/resnet.py): track faster.
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            layer.momentum = BN_MOMENTUM
    return model


def build_application(name: str, input_shape: Sequence[int], num_classes: int,
                      weights: Optional[str] = None,
                      preprocess: Optional[Callable] = None) -> keras.Model:
    """[0, 1] pixels -> 0..255 RGB at >= MIN_SIZE -> the backbone -> float32 logits."""
    height, width, channels = input_shape
    if channels not in (1, 3):
        raise ValueError(f'{name} takes 1 or 3 channels, got input_shape {tuple(input_shape)}')
    inputs = keras.Input(shape=(height, width, channels), name='image')
    # Preprocessing runs in float32 whatever the policy: exact, and Resizing has no bf16 kernel.
    x = layers.Rescaling(255.0, name='to_255', dtype='float32')(inputs)
    if channels == 1:
        x = layers.Concatenate(name='gray_to_rgb', dtype='float32')([x, x, x])
    size = (max(height, MIN_SIZE), max(width, MIN_SIZE))
    if size != (height, width):
        x = layers.Resizing(*size, interpolation='bilinear', name='upsample',
                            dtype='float32')(x)
    if preprocess is not None:
        x = preprocess(x)
    backbone = _backbone(name, (*size, 3))
    if weights:
        if not os.path.isfile(weights):
            raise ValueError(f'{name}: weights file not found: {weights}')
        backbone.load_weights(weights)
    x = backbone(x)
    logits = layers.Dense(num_classes, dtype='float32', name='logits')(x)
    return keras.Model(inputs, logits, name=name)


def resnet50(input_shape: Sequence[int], num_classes: int,
             weights: Optional[str] = None) -> keras.Model:
    """ResNet50 (23.6M parameters without its top); caffe preprocessing: BGR, ImageNet means."""
    return build_application('resnet50', input_shape, num_classes, weights, _preprocess_resnet)


def efficientnet_b0(input_shape: Sequence[int], num_classes: int,
                    weights: Optional[str] = None) -> keras.Model:
    """EfficientNetB0 (4.0M parameters without its top); rescales and normalises 0..255 itself."""
    return build_application('efficientnet_b0', input_shape, num_classes, weights)


def mobilenet_v3_small(input_shape: Sequence[int], num_classes: int,
                       weights: Optional[str] = None) -> keras.Model:
    """MobileNetV3Small (0.9M parameters without its top); its Rescaling maps 0..255 to [-1, 1]."""
    return build_application('mobilenet_v3_small', input_shape, num_classes, weights)
