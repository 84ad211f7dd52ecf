"""Tests of the named keras.applications builders: shapes, dtypes, preprocessing, local weights."""
import keras
import numpy as np
import pytest

from models import applications

NAMES = ('resnet50', 'efficientnet_b0', 'mobilenet_v3_small')


@pytest.fixture
def policy():
    """Sets a global Keras policy for one test and restores the previous one."""
    previous = keras.mixed_precision.global_policy()
    yield keras.mixed_precision.set_global_policy
    keras.mixed_precision.set_global_policy(previous)


def _pixels(shape, seed=0):
    return np.random.default_rng(seed).random((2, *shape), dtype=np.float32)


@pytest.mark.parametrize('name', NAMES)
@pytest.mark.parametrize('shape', [(32, 32, 1), (32, 32, 3)])
def test_float32_logits_under_mixed_bfloat16(name, shape, policy):
    policy('mixed_bfloat16')
    model = getattr(applications, name)(shape, 3)
    logits = model(_pixels(shape))
    assert tuple(logits.shape) == (2, 3)
    assert logits.dtype == 'float32'
    assert model.get_layer(applications.BACKBONE).compute_dtype == 'bfloat16'
    assert np.all(np.isfinite(np.asarray(logits)))


@pytest.mark.parametrize('name', NAMES)
def test_the_applications_own_preprocessing_is_inside_the_model(name, policy):
    policy('float32')
    gray = _pixels((32, 32, 1))
    model = getattr(applications, name)((32, 32, 1), 3)
    backbone = model.get_layer(applications.BACKBONE)
    features = keras.Model(model.input, model.get_layer('logits').input)
    rgb = np.repeat(gray, 3, axis=-1) * 255.0   # what the apps expect: 0..255 RGB
    if name == 'resnet50':  # caffe mode: BGR minus the ImageNet means, applied by us
        rgb = keras.applications.resnet50.preprocess_input(rgb)
    # EfficientNet and MobileNetV3 rescale 0..255 themselves (their preprocess_input is a no-op).
    expected = np.asarray(backbone(rgb))
    # Relative checks: a randomly initialised deep backbone's features are tiny.
    np.testing.assert_allclose(np.asarray(features(gray)), expected, rtol=1e-3, atol=0)
    # Feeding the backbone [0, 1] pixels instead would give other features: the check can fail.
    unscaled = np.asarray(backbone(np.repeat(gray, 3, axis=-1)))
    assert not np.allclose(unscaled, expected, rtol=1e-2, atol=0)


def test_small_inputs_are_upsampled_to_the_minimum_and_keep_their_serving_size(policy):
    policy('float32')
    model = applications.mobilenet_v3_small((8, 8, 1), 4)
    assert tuple(model.input_shape) == (None, 8, 8, 1)
    assert tuple(model.get_layer(applications.BACKBONE).input_shape) == (
        None, applications.MIN_SIZE, applications.MIN_SIZE, 3)
    assert tuple(model(_pixels((8, 8, 1))).shape) == (2, 4)
    with pytest.raises(ValueError, match='1 or 3 channels'):
        applications.mobilenet_v3_small((32, 32, 4), 4)


def test_local_weights_file_is_loaded_into_the_backbone(tmp_path, policy):
    policy('float32')
    keras.utils.set_random_seed(1)
    source = applications.efficientnet_b0((48, 48, 3), 5)
    path = str(tmp_path / 'backbone.weights.h5')
    source.get_layer(applications.BACKBONE).save_weights(path)

    # Another input size, channel count and class count: only the backbone's weights carry over.
    keras.utils.set_random_seed(2)
    loaded = applications.efficientnet_b0((32, 32, 1), 3, weights=path)
    keras.utils.set_random_seed(2)
    fresh = applications.efficientnet_b0((32, 32, 1), 3)
    for got, want in zip(loaded.get_layer(applications.BACKBONE).get_weights(),
                         source.get_layer(applications.BACKBONE).get_weights()):
        np.testing.assert_array_equal(got, want)
    x = _pixels((32, 32, 1))
    assert not np.allclose(np.asarray(loaded(x)), np.asarray(fresh(x)))
    with pytest.raises(ValueError, match='weights file not found: .*missing.weights.h5'):
        applications.efficientnet_b0((32, 32, 1), 3, weights=str(tmp_path / 'missing.weights.h5'))
