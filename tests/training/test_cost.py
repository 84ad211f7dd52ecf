"""Unit tests of the per-example multiply-add count (training/cost.py) on real models."""
import keras
from keras import layers

from training import cost, precision
from models import applications, mlp, resnet


def test_a_small_model_is_counted_as_by_hand():
    inputs = keras.Input((10, 12, 3))
    x = layers.Conv2D(8, 3, strides=2, padding='same')(inputs)          # -> 5x6x8
    x = layers.DepthwiseConv2D(3, padding='same', depth_multiplier=2)(x)  # -> 5x6x16
    x = layers.SeparableConv2D(4, 3)(x)                                   # valid -> 3x4x4
    x = layers.Conv2D(8, 1, groups=2)(x)                                  # -> 3x4x8
    inner_in = keras.Input((3, 4, 8))
    nested = keras.Model(inner_in, layers.Dense(5)(inner_in), name='nested')
    x = nested(x)                                                         # Dense per position
    pooled = layers.GlobalAveragePooling2D()(x)                           # -> 5
    shared = layers.Dense(6)                                              # called twice
    x = layers.Add()([shared(pooled), shared(layers.Rescaling(2.0)(pooled))])
    model = keras.Model(inputs, layers.Dense(3)(x))
    expected = (5 * 6 * 3 * 3 * 3 * 8          # strided convolution
                + 5 * 6 * 3 * 3 * 16            # depthwise, 8 channels x 2
                + 3 * 4 * 3 * 3 * 16 + 3 * 4 * 16 * 4   # separable: depthwise + pointwise
                + 3 * 4 * (4 // 2) * 8          # grouped 1x1
                + 3 * 4 * 8 * 5                 # Dense on every position, inside the nested model
                + 2 * 5 * 6                     # the shared Dense, twice
                + 6 * 3)                        # head
    assert cost.macs(model) == expected == 14046
    # The depthwise part alone: the depthwise layer and the separable one's first half.
    assert cost.depthwise_macs(model) == 5 * 6 * 3 * 3 * 16 + 3 * 4 * 3 * 3 * 16


def test_the_default_models_match_their_documented_costs():
    # models/resnet.py's docstring: 2.1M at 8x8x1, 10.5M at 28x28x1, 63M at 224x224x3.
    counts = [cost.macs(resnet.build_model(shape, 10))
              for shape in ((8, 8, 1), (28, 28, 1), (224, 224, 3))]
    assert counts == [2_116_224, 10_520_320, 63_252_992]
    # The tabular MLP: 3 numeric + 2 categorical columns embedded in 8 -> 19 inputs, 64, 64, 4.
    table = mlp.build_model({'numeric': (3,), 'categorical': (2,)}, 4)
    assert cost.macs(table) == 19 * 64 + 64 * 64 + 64 * 4


def test_an_application_is_counted_through_its_nested_backbone():
    model = applications.mobilenet_v3_small((32, 32, 1), 10)
    backbone = model.get_layer(applications.BACKBONE)
    # The whole model is its backbone plus the 576 -> 10 head; the backbone is not empty.
    assert backbone.output.shape[-1] == 576
    assert cost.macs(model) == cost.macs(backbone) + 576 * 10
    assert cost.macs(backbone) > 1_000_000
    # Its inverted-residual blocks: a depthwise share that keeps `auto` at float32.
    share = cost.depthwise_macs(model) / cost.macs(model)
    assert precision.DEPTHWISE_MAX_SHARE < share < 0.2
    assert cost.depthwise_macs(resnet.build_model((28, 28, 1), 10)) == 0


def test_measuring_builds_in_float32_and_restores_the_global_policy():
    keras.mixed_precision.set_global_policy('mixed_bfloat16')
    try:
        dtypes = []

        def build():
            model = resnet.build_model((8, 8, 1), 10)
            dtypes.append(model.layers[1].compute_dtype)
            return model
        assert precision.measure_cost(build) == precision.Cost(2_116_224, 0)
        assert dtypes == ['float32']
        assert keras.mixed_precision.global_policy().name == 'mixed_bfloat16'
    finally:
        keras.mixed_precision.set_global_policy('float32')
