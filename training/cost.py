"""Per-example compute of a Keras model: multiply-adds of its forward pass, counted analytically.

No TFX imports. `auto` precision (precision.py) uses this to tell a model that bfloat16 speeds up
from one it slows down; bench/bench_model_size.py and bench/bench_precision.py print it.

Counted: convolutions (Conv1D/2D/3D with groups, their transposes, depthwise and separable ones)
and Dense layers, which are where the forward pass's arithmetic is. Normalisation, activations,
pooling and element-wise layers are left out: they are memory-bound, a few per cent of the
multiply-adds, and bfloat16 does not speed them up. Nested models (a keras.applications backbone
inside our builder) are counted through. A layer called on several inputs (shared weights) counts
once per call. Shapes come from the functional graph, so this costs no forward pass: a model
whose layers have no symbolic shapes (a subclassed model never called on a keras.Input) counts 0.

`depthwise_macs` counts the depthwise part alone (depthwise layers, the first half of separable
ones): those are memory-bound, have no fast bfloat16 kernel on CPU, and decide `auto` apart from
the total (MobileNetV3 ran slower in bfloat16 at every size measured, bench/bench_precision.py).
"""
import math
from typing import Iterator, Sequence, Tuple

import keras
from keras import layers

_CONVS = (layers.Conv1D, layers.Conv2D, layers.Conv3D)
_TRANSPOSED = (layers.Conv1DTranspose, layers.Conv2DTranspose, layers.Conv3DTranspose)
_DEPTHWISE = (layers.DepthwiseConv1D, layers.DepthwiseConv2D)
_SEPARABLE = (layers.SeparableConv1D, layers.SeparableConv2D)


def _calls(layer: keras.layers.Layer) -> Iterator[Tuple[Sequence, Sequence]]:
    """(input shape, output shape) of each call of the layer in a functional graph."""
    # Keras 3 keeps one node per call; there is no public accessor for them (pinned Keras 3.6:
    # the unit tests count a real model, so they fail if this moves).
    for node in getattr(layer, '_inbound_nodes', []):
        if len(node.input_tensors) == 1 and len(node.output_tensors) == 1:
            yield tuple(node.input_tensors[0].shape), tuple(node.output_tensors[0].shape)


def _spatial(shape: Sequence) -> int:
    """Positions of a channels-last feature map (batch and channels left out)."""
    return math.prod(int(d) for d in shape[1:-1])


def layer_macs(layer: keras.layers.Layer, in_shape: Sequence, out_shape: Sequence,
               depthwise_only: bool = False) -> int:
    """Multiply-adds of one example through one call of a layer (0 for uncounted kinds); with
    depthwise_only, only those of its depthwise part."""
    if getattr(layer, 'data_format', 'channels_last') == 'channels_first':
        in_shape = (in_shape[0], *in_shape[2:], in_shape[1])
        out_shape = (out_shape[0], *out_shape[2:], out_shape[1])
    in_channels, out_channels = int(in_shape[-1]), int(out_shape[-1])
    if isinstance(layer, _SEPARABLE):   # depthwise, then a 1x1 pointwise convolution
        kernel = math.prod(layer.kernel_size)
        middle = in_channels * layer.depth_multiplier
        return _spatial(out_shape) * (kernel * middle + (0 if depthwise_only else
                                                         middle * out_channels))
    if isinstance(layer, _DEPTHWISE):
        return _spatial(out_shape) * math.prod(layer.kernel_size) * out_channels
    if depthwise_only:
        return 0
    if isinstance(layer, _TRANSPOSED):  # each input position is spread over a kernel window
        return _spatial(in_shape) * math.prod(layer.kernel_size) * in_channels * out_channels
    if isinstance(layer, _CONVS):
        groups = getattr(layer, 'groups', 1) or 1
        return (_spatial(out_shape) * math.prod(layer.kernel_size) * (in_channels // groups)
                * out_channels)
    if isinstance(layer, layers.Dense):  # on (batch, ..., features): once per leading position
        return _spatial(in_shape) * in_channels * out_channels
    return 0


def macs(model: keras.Model, depthwise_only: bool = False) -> int:
    """Multiply-adds of one example through the model's forward pass (see the module docstring)."""
    total = 0
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            calls = sum(1 for _ in _calls(layer)) or 1
            # Its own graph, once per call of the nested model.
            total += calls * macs(layer, depthwise_only)
            continue
        for in_shape, out_shape in _calls(layer):
            if None not in in_shape[1:] and None not in out_shape[1:]:
                total += layer_macs(layer, in_shape, out_shape, depthwise_only)
    return total


def depthwise_macs(model: keras.Model) -> int:
    """The part of macs(model) in depthwise convolutions (see the module docstring)."""
    return macs(model, depthwise_only=True)
