"""Tests of the default image model: how it scales with the input, dtypes, and the unchanged
digits."""
import keras
import numpy as np
import pytest

from models import resnet

SHAPES = [(8, 8, 1), (28, 28, 1), (32, 32, 3), (64, 48, 3), (224, 224, 3)]


@pytest.fixture
def policy():
    """Sets a global Keras policy for one test and restores the previous one."""
    previous = keras.mixed_precision.global_policy()
    yield keras.mixed_precision.set_global_policy
    keras.mixed_precision.set_global_policy(previous)


def _pixels(shape, count=2, seed=0):
    return np.random.default_rng(seed).random((count, *shape), dtype=np.float32)


def _of_type(model, kind):
    return [layer for layer in model.layers if isinstance(layer, kind)]


@pytest.mark.parametrize('shape', SHAPES)
def test_float32_logits_under_mixed_bfloat16(shape, policy):
    policy('mixed_bfloat16')
    model = resnet.build_model(shape, 5)
    logits = model(_pixels(shape))
    assert tuple(logits.shape) == (2, 5)
    assert logits.dtype == 'float32'
    assert model.get_layer('logits').dtype_policy.name == 'float32'
    assert _of_type(model, keras.layers.Conv2D)[-1].compute_dtype == 'bfloat16'
    assert np.all(np.isfinite(np.asarray(logits)))


@pytest.mark.parametrize('shape', SHAPES + [(17, 17, 1), (96, 96, 3), (48, 200, 3)])
def test_stages_end_at_about_4x4_with_growing_widths(shape, policy):
    policy('float32')
    model = resnet.build_model(shape, 3)
    final = _of_type(model, keras.layers.GlobalAveragePooling2D)[0].input.shape
    assert 2 < max(final[1], final[2]) <= resnet.FINAL_SIDE
    widths = [add.output.shape[-1] for add in _of_type(model, keras.layers.Add)]
    assert widths == [min(32 * 2 ** i, 256) for i in range(len(widths))]
    # Each stage after the first halves the longer side (rounding up): no stage is wasted.
    sides = [max(add.output.shape[1:3]) for add in _of_type(model, keras.layers.Add)]
    assert all(later == -(-earlier // 2) for earlier, later in zip(sides, sides[1:]))


@pytest.mark.parametrize('shape, stem_stride, pool, stages', [
    ((8, 8, 1), 1, False, [(32, 1), (64, 2)]),
    ((16, 16, 1), 1, False, [(32, 1), (64, 2), (128, 2)]),
    ((28, 28, 1), 1, False, [(32, 2), (64, 2), (128, 2)]),
    ((64, 48, 3), 2, False, [(32, 2), (64, 2), (128, 2)]),
    ((224, 224, 3), 2, True, [(32, 2), (64, 2), (128, 2), (256, 2)]),
    ((4, 4, 1), 1, False, [(32, 1)]),
])
def test_the_plan_follows_the_documented_rule(shape, stem_stride, pool, stages):
    assert resnet.plan(shape) == (stem_stride, pool, stages)


def test_widths_are_capped():
    assert [w for w, _ in resnet.plan((224, 224, 3), max_width=64)[2]] == [32, 64, 64, 64]


def test_large_inputs_are_reduced_early_and_stay_affordable(policy):
    policy('float32')
    model = resnet.build_model((224, 224, 3), 10)
    stem = _of_type(model, keras.layers.Conv2D)[0]
    assert tuple(stem.output.shape[1:3]) == (112, 112)
    assert tuple(_of_type(model, keras.layers.MaxPooling2D)[0].output.shape[1:3]) == (56, 56)
    assert model.count_params() < 5_000_000
    # The key target, 28x28, keeps full resolution in its stem and pools nothing.
    small = resnet.build_model((28, 28, 1), 10)
    assert tuple(_of_type(small, keras.layers.Conv2D)[0].output.shape[1:3]) == (28, 28)
    assert not _of_type(small, keras.layers.MaxPooling2D)


def test_the_digits_model_is_unchanged(policy):
    """8x8x1, 10 classes: the same layers, shapes and parameters as before the model scaled."""
    policy('float32')
    model = resnet.build_model((8, 8, 1), 10)
    assert model.count_params() == 77_866
    block_32 = ['Conv2D', 'BatchNormalization', 'ReLU', 'Conv2D', 'BatchNormalization', 'Add',
                'ReLU']
    block_64 = ['Conv2D', 'BatchNormalization', 'ReLU', 'Conv2D', 'Conv2D', 'BatchNormalization',
                'BatchNormalization', 'Add', 'ReLU']
    assert [type(layer).__name__ for layer in model.layers] == (
        ['InputLayer', 'Conv2D', 'BatchNormalization', 'ReLU'] + block_32 + block_64
        + ['GlobalAveragePooling2D', 'Dense'])
    sides = [tuple(conv.output.shape[1:]) for conv in _of_type(model, keras.layers.Conv2D)]
    assert sides == [(8, 8, 32)] * 3 + [(4, 4, 64)] * 3
    assert all(bn.momentum == resnet.BN_MOMENTUM
               for bn in _of_type(model, keras.layers.BatchNormalization))


def test_a_28x28_model_learns(policy):
    """A few steps on 32 fixed images must lower the loss: gradients reach every stage."""
    policy('float32')
    keras.utils.set_random_seed(0)
    model = resnet.build_model((28, 28, 1), 4)
    model.compile(keras.optimizers.Adam(3e-3),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = _pixels((28, 28, 1), count=32, seed=1)
    y = np.arange(32) % 4
    history = model.fit(x, y, batch_size=16, epochs=15, verbose=0).history['loss']
    assert history[-1] < 0.5 * history[0]
