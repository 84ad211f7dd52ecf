"""The image input shape from the data: what ingestion records, and the rule the trainer applies.

No TensorFlow or TFX imports. Ingestion records on the Examples artifact, over the valid images
of the train split as they were stored (after any ingestion resize or channel conversion):

- `image_sizes`: JSON {"<height>x<width>": count}, most common first; at most MAX_SIZES sizes,
  the rest summed under "other";
- `color_modes`: JSON {Pillow mode: count}, e.g. {"L": 900, "RGB": 100};
- `color_images`: how many of those images carry colour (a colour mode, or a palette that uses a
  non-grey colour);
- `resized_at_ingestion`, `grayscaled_at_ingestion`: how many ingestion resized (its
  image_size) or stored grey although the file has colour (its channels 1).

The trainer's input is then, unless configured: the most common (height, width), and 3 channels
when any of those images is colour, else 1. `resolve` also words the decision for people.
"""
import dataclasses
import json
from typing import Any, Dict, Mapping, Optional, Tuple

SIZES_PROPERTY = 'image_sizes'
MODES_PROPERTY = 'color_modes'
COLOR_PROPERTY = 'color_images'
RESIZED_PROPERTY = 'resized_at_ingestion'
GRAYSCALED_PROPERTY = 'grayscaled_at_ingestion'
OTHER = 'other'
MAX_SIZES = 20   # distinct sizes kept on the artifact; a folder of photos may have thousands


def size_key(height: int, width: int) -> str:
    return f'{height}x{width}'


def sizes_json(counts: Mapping[Tuple[int, int], int]) -> str:
    """The `image_sizes` value: most common first, then by size; the tail summed as "other"."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    kept = {size_key(*size): count for size, count in ranked[:MAX_SIZES]}
    rest = sum(count for _, count in ranked[MAX_SIZES:])
    if rest:
        kept[OTHER] = rest
    return json.dumps(kept)


def parse_sizes(text: str) -> Dict[Tuple[int, int], int]:
    """{(height, width): count} from `image_sizes`; the "other" tail is not a size."""
    sizes = {}
    for key, count in json.loads(text or '{}').items():
        if key != OTHER:
            height, width = key.split('x')
            sizes[(int(height), int(width))] = int(count)
    return sizes


def most_common_size(sizes: Mapping[Tuple[int, int], int]) -> Tuple[int, int]:
    """The (height, width) most images have. A tie goes to the larger area (shrinking the
    others keeps the larger images' detail; enlarging adds none), then the larger height."""
    if not sizes:
        raise ValueError('no image sizes recorded: nothing to infer the input size from')
    return max(sizes, key=lambda hw: (sizes[hw], hw[0] * hw[1], hw))


@dataclasses.dataclass(frozen=True)
class InputShape:
    height: int
    width: int
    channels: int
    statement: str   # e.g. "trained at 28×28×3; 85% of images 28×28, 15% resized; ..."

    @property
    def shape(self) -> Tuple[int, int, int]:
        return self.height, self.width, self.channels


def _percent(part: int, total: int) -> str:
    # Never "100%" while some images differ, nor "0%" while some match.
    value = 100.0 * part / total
    if 0 < part < total:
        value = min(max(value, 1.0), 99.0)
    return f'{value:.0f}%'


@dataclasses.dataclass(frozen=True)
class Recorded:
    """What ingestion recorded about the stored train images."""
    sizes: Dict[Tuple[int, int], int]   # without the "other" tail
    total: int                          # every valid train image
    color: int                          # stored with colour
    resized: int = 0                    # resized by ingestion (IngestParams.image_size)
    grayscaled: int = 0                 # colour files stored grey by ingestion (channels 1)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> Optional['Recorded']:
        """From the Examples' custom properties; None when they predate these records."""
        if SIZES_PROPERTY not in properties or COLOR_PROPERTY not in properties:
            return None
        text = properties[SIZES_PROPERTY]
        return cls(sizes=parse_sizes(text), total=sum(json.loads(text).values()),
                   color=int(properties[COLOR_PROPERTY]),
                   resized=int(properties.get(RESIZED_PROPERTY, 0)),
                   grayscaled=int(properties.get(GRAYSCALED_PROPERTY, 0)))


def _size_words(size: Tuple[int, int], data: Recorded, configured: bool) -> str:
    at, total = data.sizes.get(size, 0), data.total
    text = size_key(*size).replace('x', '×')
    if at == total:
        words = f'all {total:,} images {text}'
    else:
        words = f'{_percent(at, total)} of images {text}, {_percent(total - at, total)} resized'
    notes = ['size as configured'] if configured else []
    if data.resized:
        notes.append(f'{data.resized:,} resized at ingestion')
    return words + (f' ({", ".join(notes)})' if notes else '')


def _channel_words(channels: int, data: Recorded, configured: bool) -> str:
    how = 'as configured' if configured else 'from the data'
    color, grey = data.color, data.total - data.color
    if channels == 1:
        converted = [f'{n:,} colour images RGB→grayscale{where}' for n, where in (
            (color, ''), (data.grayscaled, ' at ingestion')) if n]
        return f'1 channel {how}: ' + (', '.join(converted) or 'all images grayscale')
    if not grey:
        return f'3 channels {how}: all images colour'
    if configured:
        return f'3 channels {how}: {grey:,} grayscale images →RGB'
    return f'3 channels {how}: {color:,} of {data.total:,} images colour, {grey:,} grayscale→RGB'


def resolve(data: Optional[Recorded], height: int = 0, width: int = 0,
            channels: int = 0) -> InputShape:
    """The input shape: configured values (> 0) win, 0 means from the data.

    `data` is None when the Examples predate these records, which is an error only when
    something has to be inferred.
    """
    if (height > 0) != (width > 0):
        raise ValueError(f'image height and width are both set or both 0, got {height}x{width}')
    if data is None:
        if height and channels:
            return InputShape(height, width, channels,
                              f'trained at {height}×{width}×{channels} (as configured)')
        raise ValueError('The Examples record no image sizes or colour modes (ingested by an '
                         'older version): set the input with --image-size HxW and --channels, '
                         'or ingest again.')
    if not data.total:
        raise ValueError('The train split has no valid images to infer the input shape from.')
    size = (height, width) if height else most_common_size(data.sizes)
    depth = channels or (3 if data.color else 1)
    statement = '; '.join([f'trained at {size[0]}×{size[1]}×{depth}',
                           _size_words(size, data, configured=bool(height)),
                           _channel_words(depth, data, configured=bool(channels))])
    return InputShape(size[0], size[1], depth, statement)
