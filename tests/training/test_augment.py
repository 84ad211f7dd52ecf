"""Tests of train-split augmentation: seeded, resumable, train-only, flips only when asked."""
import io
import os

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image
from sklearn.datasets import load_sample_images

from core import features
from training import augment, data

from helpers import DIGITS, run_command

SHAPE = (24, 24, 3)


def _left_minus_right(image):
    half = image.shape[1] // 2
    return image[:, :half].mean() - image[:, -half:].mean()


def _asymmetric_patches(count):
    """Real photo patches, those whose left half is the most unlike their right half."""
    photo = load_sample_images().images[0]
    patches = [photo[y:y + SHAPE[0], x:x + SHAPE[1]]
               for y in range(0, 400, 24) for x in range(0, 600, 24)]
    asymmetry = [abs(_left_minus_right(p.astype(float))) for p in patches]
    return [patches[i] for i in np.argsort(asymmetry)[::-1][:count]]


@pytest.fixture(scope='module')
def pattern(tmp_path_factory):
    folder = tmp_path_factory.mktemp('photos')
    with tf.io.TFRecordWriter(str(folder / 'part.gz'), options='GZIP') as writer:
        for i, patch in enumerate(_asymmetric_patches(12)):
            buffer = io.BytesIO()
            Image.fromarray(patch).save(buffer, format='PNG' if i % 2 else 'JPEG')
            writer.write(features.make_example(buffer.getvalue(), i % 3, str(i % 3), *SHAPE[:2],
                                               f'p/{i}').SerializeToString())
    return str(folder / '*')


def _stream(pattern, batches, **kwargs):
    dataset = data.train_dataset(pattern, 4, SHAPE, seed=kwargs.pop('seed', 3), **kwargs)
    return [(i.numpy(), y.numpy()) for i, y in dataset.take(batches)]


def _assert_same(a, b):
    assert len(a) == len(b)
    for (a_images, a_labels), (b_images, b_labels) in zip(a, b):
        np.testing.assert_array_equal(a_labels, b_labels)
        np.testing.assert_array_equal(a_images, b_images)


@pytest.mark.parametrize('cache', [False, True])
def test_same_seed_same_batches_and_another_seed_other_ones(pattern, cache):
    first = _stream(pattern, 9, augment='standard', flip=True, cache_decoded=cache)
    _assert_same(first, _stream(pattern, 9, augment='standard', flip=True, cache_decoded=cache))
    other = _stream(pattern, 9, augment='standard', flip=True, cache_decoded=cache, seed=4)
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(first, other))


@pytest.mark.parametrize('mode', ['light', 'standard'])
def test_a_resumed_stream_is_the_tail_of_the_uninterrupted_one(pattern, mode):
    full = _stream(pattern, 12, augment=mode, cache_decoded=True)
    for skip in (4, 8, 20):  # whole batches in, and past the first epoch (12 examples)
        _assert_same(_stream(pattern, 12 - skip // 4, augment=mode, skip_examples=skip,
                             cache_decoded=True), full[skip // 4:])
    # Cached or not, the same examples get the same transformations.
    _assert_same(_stream(pattern, 12, augment=mode), full)


def test_none_is_the_unaugmented_pipeline_bit_for_bit(pattern):
    plain = [(i.numpy(), y.numpy()) for i, y in
             data.train_dataset(pattern, 4, SHAPE, seed=3).take(6)]
    _assert_same(_stream(pattern, 6, augment='none', flip=False), plain)


def test_light_leaves_images_under_10_pixels_and_their_stream_as_they_are(tmp_path):
    with tf.io.TFRecordWriter(str(tmp_path / 'part.gz'), options='GZIP') as writer:
        for label in range(3):  # the embedded 8x8 digits
            for name in sorted(os.listdir(os.path.join(DIGITS, str(label))))[:10]:
                with open(os.path.join(DIGITS, str(label), name), 'rb') as handle:
                    writer.write(features.make_example(handle.read(), label, str(label), 8, 8,
                                                       name).SerializeToString())
    pattern = str(tmp_path / '*')
    assert (augment.max_shift(8), augment.max_shift(24), augment.max_shift(224)) == (0, 2, 22)
    assert not augment.is_active('light', False, (8, 8, 1))
    assert augment.is_active('light', True, (8, 8, 1))
    assert augment.is_active('standard', False, (8, 8, 1))
    streams = [[(i.numpy(), y.numpy()) for i, y in data.train_dataset(
        pattern, 4, (8, 8, 1), seed=3, cache_decoded=True, augment=mode).take(8)]
        for mode in ('none', 'light', 'standard')]
    _assert_same(streams[0], streams[1])
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(streams[0], streams[2]))


def test_augmentation_changes_images_differently_each_epoch_in_range_and_shape(pattern):
    plain = _stream(pattern, 6, cache_decoded=True)
    augmented = _stream(pattern, 6, augment='standard', cache_decoded=True)
    # The same examples in the same order, only transformed.
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(plain, augmented))
    images = np.concatenate([b[0] for b in augmented])
    assert images.shape == (24,) + SHAPE and images.dtype == np.float32
    assert images.min() >= 0.0 and images.max() <= 1.0
    originals = np.concatenate([b[0] for b in plain])
    assert np.mean([not np.array_equal(a, o) for a, o in zip(images, originals)]) > 0.9
    # Epochs 1 and 2 hold the same 12 examples; each gets new transformations.
    by_source = {}
    for image, original in zip(images, originals):
        by_source.setdefault(original.tobytes(), []).append(image)
    assert all(len(v) == 2 and not np.array_equal(*v) for v in by_source.values())


def _mirrored_share(images, originals):
    """The share of images whose bright side is the other side than in the original."""
    return np.mean([np.sign(_left_minus_right(i)) != np.sign(_left_minus_right(o))
                    for i, o in zip(images, originals)])


@pytest.mark.parametrize('mode', ['none', 'light'])
def test_no_image_appears_mirrored_without_flip(pattern, mode):
    originals = np.concatenate([b[0] for b in _stream(pattern, 12, cache_decoded=True)])
    kept = np.concatenate([b[0] for b in _stream(pattern, 12, augment=mode, cache_decoded=True)])
    assert _mirrored_share(kept, originals) == 0.0
    flipped = np.concatenate([b[0] for b in _stream(pattern, 12, augment=mode, flip=True,
                                                    cache_decoded=True)])
    assert 0.25 <= _mirrored_share(flipped, originals) <= 0.75  # about half, at random


@pytest.mark.parametrize('mode', ['none', 'light', 'standard'])
def test_flip_mirrors_about_half_and_changes_nothing_else(pattern, mode):
    # Every random op has its own key, so --flip leaves the other transformations as they were.
    kept = np.concatenate([b[0] for b in _stream(pattern, 12, augment=mode, cache_decoded=True)])
    flipped = np.concatenate([b[0] for b in _stream(pattern, 12, augment=mode, flip=True,
                                                    cache_decoded=True)])
    mirrored = [np.array_equal(f, k[:, ::-1]) for f, k in zip(flipped, kept)]
    assert all(m or np.array_equal(f, k) for m, f, k in zip(mirrored, flipped, kept))
    assert 0.25 <= np.mean(mirrored) <= 0.75


def test_eval_data_is_never_augmented(pattern):
    # eval_dataset has no augmentation parameter at all; its images are the decoded files.
    eval_images = np.concatenate([i.numpy() for i, _ in data.eval_dataset(pattern, 5, SHAPE)])
    patches = np.stack(_asymmetric_patches(12)).astype(np.float32) / 255.0
    np.testing.assert_allclose(eval_images[1::2], patches[1::2])  # the lossless PNGs


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match='augment must be one of'):
        augment.make_augment_fn('heavy', False, 0, SHAPE)
    assert augment.describe('light', True) == 'light + flip'


def test_two_replicas_split_the_same_augmented_global_batches(pattern, tmp_path):
    # Logical CPU devices must be set before TensorFlow's runtime starts: a process of its own
    # (a child of the warm interpreter, which imported TensorFlow but started no runtime).
    import sys
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'replicas_worker.py')
    for skip in (0, 8):
        out = str(tmp_path / f'replicas{skip}.npy')
        done = run_command([sys.executable, worker, pattern, str(skip), out], timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        one = np.stack([b[0] for b in _stream(pattern, 5, augment='standard', flip=True,
                                              skip_examples=skip)])
        np.testing.assert_array_equal(np.load(out), one)
