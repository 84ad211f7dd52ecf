"""What a model's input is, as ingestion recorded it, and how Examples become model inputs.

Ingestion records an `InputSpec` as JSON on the Examples artifact (custom property
`input_spec`): images stored encoded or as raw pixels, or a table's numeric columns (with the
train split's mean and standard deviation) and categorical columns. The trainer's input
pipeline and the exported serving graph both turn parsed Examples into model inputs with the
functions here, so training and serving preprocess identically.

Model inputs: an image is a float32 [height, width, channels] tensor in [0, 1]. A table row is
a dict: 'numeric' float32 [n + k] standardised values, then k missing-value indicators, and
'categorical' int64 [m] hash buckets (hashing needs no vocabulary, and a category first seen at
serving time still maps somewhere).

Missing numeric values: ingestion leaves an empty value out of the Example. Parsing gives it NaN
(so absent and present are told apart without a second feature), and it is imputed with the
train split's mean of the non-empty values, i.e. 0 after standardising. Each numeric column that
had an empty value in the train split (`InputSpec.missing`) adds one indicator, 1.0 where the
value was missing, so the model can tell an imputed mean from a measured one. A column that was
always present in training is still imputed when a serving request leaves it out, without an
indicator (the model never learnt a weight for one).
"""
import dataclasses
import json
from typing import Any, Dict, Mapping, Tuple

import tensorflow as tf

from core import features

CATEGORICAL_BUCKETS = 100  # per categorical column; the MLP embeds each bucket


@dataclasses.dataclass(frozen=True)
class InputSpec:
    kind: str = 'image'                 # image | tabular
    storage: str = 'encoded'            # image: encoded | raw
    channels: int = 0                   # image, raw storage: the stored channels; 0 = each
                                        # example's own (its image/channels feature)
    numeric: Tuple[Tuple[str, float, float], ...] = ()   # tabular: (column, mean, std)
    categorical: Tuple[str, ...] = ()   # tabular: column names
    missing: Tuple[str, ...] = ()       # tabular: numeric columns with a missing-value indicator

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> 'InputSpec':
        """Parses a recorded spec; an empty one (Examples that record no spec) is encoded images."""
        if not text:
            return cls()
        data = json.loads(text)
        return cls(kind=data['kind'], storage=data['storage'], channels=data['channels'],
                   numeric=tuple(tuple(n) for n in data['numeric']),
                   categorical=tuple(data['categorical']),
                   missing=tuple(data.get('missing', ())))  # absent in specs before indicators


def tabular_spec(types: Tuple[Tuple[str, str], ...],
                 moments: Mapping[str, Mapping[str, float]]) -> InputSpec:
    """The spec of a table: `types` is (column, 'numeric'|'categorical') in header order;
    `moments` per numeric column the train split's 'mean' and 'std' of the non-empty values and
    'missing', the number of train rows with an empty value."""
    numeric = [c for c, kind in types if kind == 'numeric']
    return InputSpec(
        kind='tabular',
        numeric=tuple((c, moments[c]['mean'], moments[c]['std']) for c in numeric),
        categorical=tuple(c for c, kind in types if kind == 'categorical'),
        missing=tuple(c for c in numeric if moments[c].get('missing', 0) > 0))


def builder_input_shape(spec: InputSpec, image_shape: Tuple[int, int, int]) -> Any:
    """What the model builder receives as `input_shape`: the image shape, or for a table
    {'numeric': (n,), 'categorical': (m,)} with only the kinds the table has."""
    if spec.kind == 'image':
        return tuple(image_shape)
    shape = {}
    if spec.numeric:
        shape['numeric'] = (len(spec.numeric) + len(spec.missing),)
    if spec.categorical:
        shape['categorical'] = (len(spec.categorical),)
    return shape


def image_parse_spec(spec: InputSpec) -> Dict[str, tf.io.FixedLenFeature]:
    if spec.storage == 'raw':
        parse = {features.IMAGE_RAW_KEY: tf.io.FixedLenFeature([], tf.string),
                 features.HEIGHT_KEY: tf.io.FixedLenFeature([], tf.int64),
                 features.WIDTH_KEY: tf.io.FixedLenFeature([], tf.int64)}
        if not spec.channels:
            parse[features.CHANNELS_KEY] = tf.io.FixedLenFeature([], tf.int64)
        return parse
    return {features.IMAGE_KEY: tf.io.FixedLenFeature([], tf.string)}


def _to_channels(pixels: tf.Tensor, stored, channels: int) -> tf.Tensor:
    """Grey (1) or RGB (3) pixels as `channels`; `stored` is an int, or a tensor when each
    example records its own."""
    if channels == 1:
        convert = lambda: tf.image.rgb_to_grayscale(pixels)  # noqa: E731
    else:
        convert = lambda: tf.tile(pixels, [1, 1, 3])  # noqa: E731 (grey to RGB)
    if isinstance(stored, int):
        return pixels if stored == channels else convert()
    return tf.cond(tf.equal(stored, channels), lambda: pixels, convert)


def decode_parsed_image(parsed: Dict[str, tf.Tensor], spec: InputSpec,
                        image_shape: Tuple[int, int, int]) -> tf.Tensor:
    """One parsed Example's image as float32 [height, width, channels] in [0, 1]."""
    height, width, channels = image_shape
    if spec.storage != 'raw':
        return features.decode_image(parsed[features.IMAGE_KEY], height, width, channels)
    stored = spec.channels or parsed[features.CHANNELS_KEY]
    pixels = tf.reshape(tf.io.decode_raw(parsed[features.IMAGE_RAW_KEY], tf.uint8),
                        tf.stack([parsed[features.HEIGHT_KEY], parsed[features.WIDTH_KEY],
                                  tf.cast(stored, tf.int64)]))
    pixels = _to_channels(pixels, stored, channels)
    image = tf.image.resize(tf.image.convert_image_dtype(pixels, tf.float32), [height, width])
    image.set_shape([height, width, channels])
    return image


def tabular_parse_spec(spec: InputSpec) -> Dict[str, tf.io.FixedLenFeature]:
    # An absent numeric feature (an empty CSV value) parses as NaN: ingestion never writes NaN.
    parse = {name: tf.io.FixedLenFeature([], tf.float32, default_value=float('nan'))
             for name, _, _ in spec.numeric}
    parse.update({name: tf.io.FixedLenFeature([], tf.string) for name in spec.categorical})
    return parse


def tabular_inputs(parsed: Dict[str, tf.Tensor], spec: InputSpec) -> Dict[str, tf.Tensor]:
    """A batch of parsed rows as the model's input dict (see the module docstring)."""
    inputs = {}
    if spec.numeric:
        names = [name for name, _, _ in spec.numeric]
        mean = tf.constant([m for _, m, _ in spec.numeric], tf.float32)
        std = tf.constant([s for _, _, s in spec.numeric], tf.float32)
        values = tf.stack([parsed[name] for name in names], axis=-1)
        missing = tf.math.is_nan(values)
        standardised = (tf.where(missing, mean, values) - mean) / std
        flags = tf.gather(tf.cast(missing, tf.float32),
                          tf.constant([names.index(c) for c in spec.missing], tf.int32),
                          axis=-1)
        inputs['numeric'] = tf.concat([standardised, flags], axis=-1)
    if spec.categorical:
        inputs['categorical'] = tf.stack(
            [tf.strings.to_hash_bucket_fast(parsed[name], CATEGORICAL_BUCKETS)
             for name in spec.categorical], axis=-1)
    return inputs
