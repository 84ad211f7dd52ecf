"""Random image augmentation of the train stream: stateless, so a seed fixes it (no TFX imports).

Every random draw is a stateless op keyed by (seed, the example's position in the endless
shuffled stream): the same position always gets the same transformation, whether the stream
was read from the start or resumed with `skip_examples`, and however tf.data parallelises the
map. Each epoch puts an example at new positions, so it sees new transformations. Under FILE
sharding each worker has a stream of its own, and its position p becomes p x W + worker
(data.py, _augmented), so no two workers' examples share a key.

Modes (AUGMENTS in choices.py):
- none: the images as decoded;
- light: a small random translation, up to 10% of each side rounded down (reflect-padded, then
  a random crop of the original size), which keeps the whole object in view. A side under
  10 px is not shifted: on the 8x8 digits one pixel is an eighth of the digit, and shifting by
  it cost accuracy (bench/bench_augment.py: eval 0.982 against 0.989 without), so light leaves
  such images, and the stream, exactly as they are;
- standard: light, then a random resized crop (70-100% of the area, aspect 3/4-4/3, resized
  back) and a random contrast change (x0.8-1.2).
A horizontal flip is separate (`flip`): it turns digits and text into other symbols, so it is
on when asked, or when flip_choice.py measured that mirroring keeps the labels (flip auto).
The serving graph never sees any of this: it is applied in tf.data only.
"""
from typing import Callable, Tuple

import tensorflow as tf

from training.choices import AUGMENTS

TRANSLATE_FRACTION = 0.1          # light: the largest shift, as a share of each side
CROP_AREA = (0.7, 1.0)            # standard: the share of the image a resized crop keeps
CROP_ASPECT = (3 / 4, 4 / 3)
CONTRAST = (0.8, 1.2)


def max_shift(side: int) -> int:
    """light's largest translation along a side of this many pixels (0 under 10 px)."""
    return int(TRANSLATE_FRACTION * side)


def is_active(mode: str, flip: bool, image_shape: Tuple[int, int, int]) -> bool:
    """Whether any image can change; if not, the stream is the unaugmented one, bit for bit."""
    if mode not in AUGMENTS:
        raise ValueError(f'augment must be one of {AUGMENTS}, got {mode!r}')
    shifts = max_shift(image_shape[0]) or max_shift(image_shape[1])
    return flip or mode == 'standard' or (mode == 'light' and shifts > 0)


def describe(mode: str, flip) -> str:
    """For the log line and the report: e.g. 'light', 'standard + flip', 'none'; flip is on or
    off (True, False), or 'auto' before flip_choice.py has measured."""
    if flip == 'auto':
        return mode + ' (+ flip if mirroring keeps the labels)'
    return mode + (' + flip' if flip in (True, 'on') else '')


def _translate(image, seed, height: int, width: int):
    pad_h, pad_w = max_shift(height), max_shift(width)
    if not pad_h and not pad_w:
        return image
    padded = tf.pad(image, [[pad_h, pad_h], [pad_w, pad_w], [0, 0]], mode='REFLECT')
    return tf.image.stateless_random_crop(padded, tf.shape(image), seed=seed)


def _resized_crop(image, seed, height: int, width: int):
    begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
        tf.shape(image), bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]]), seed=seed,
        min_object_covered=0.0, aspect_ratio_range=CROP_ASPECT, area_range=CROP_AREA,
        max_attempts=10, use_image_if_no_bounding_boxes=True)
    crop = tf.slice(image, begin, size)
    return tf.image.resize(crop, (height, width), method='bilinear')


def make_augment_fn(mode: str, flip: bool, seed: int, image_shape: Tuple[int, int, int]
                    ) -> Callable[[tf.Tensor, tf.Tensor, tf.Tensor], Tuple[tf.Tensor, tf.Tensor]]:
    """(position, image, label) -> (image, label): one float32 [0, 1] image of image_shape."""
    is_active(mode, flip, image_shape)  # validates the name
    height, width, channels = image_shape

    def augment(position, image, label):
        # One key per example, split into one independent key per random op.
        keys = tf.random.experimental.stateless_split(
            tf.stack([tf.cast(seed, tf.int64), tf.cast(position, tf.int64)]), num=4)
        if mode in ('light', 'standard'):
            image = _translate(image, keys[0], height, width)
        if mode == 'standard':
            image = _resized_crop(image, keys[1], height, width)
            image = tf.image.stateless_random_contrast(image, *CONTRAST, seed=keys[2])
        if flip:
            image = tf.image.stateless_random_flip_left_right(image, seed=keys[3])
        # Contrast and resizing can leave [0, 1]; the model was trained on [0, 1] pixels.
        image = tf.clip_by_value(image, 0.0, 1.0)
        return tf.ensure_shape(image, (height, width, channels)), label
    return augment
