"""Pure functions of image ingestion: class discovery, reading, validation, resizing, splits.

No TFX and no Beam here, so that each rule can be unit-tested on its own. The Beam pipeline in
`graph/beam_pipeline.py` applies these functions per file. Every failure is a `BadImage` with a
reason code from `rules.REASONS`.
"""
import dataclasses
import functools
import io
import os
from typing import Dict, Iterable, List, Optional, Tuple

from PIL import Image, ImageChops
import tensorflow as tf

from components.ingest.formats import files, image_formats, rules
from core import storage
from components.ingest.formats.image_formats import BadImage  # a file that cannot become an example


# File signatures, to tell a damaged image from a file that never was one.
_SIGNATURES = ((b'\x89PNG', 'PNG'), (b'\xff\xd8\xff', 'JPEG'), (b'GIF8', 'GIF'), (b'BM', 'BMP'))


_MODES = {1: 'L', 3: 'RGB'}
_ALPHA_BANDS = ('A', 'a')


@dataclasses.dataclass(frozen=True)
class ImageInfo:
    format: str
    height: int
    width: int
    mode: str
    color: bool = False   # carries colour (see is_color); grey otherwise

    @property
    def converted(self) -> bool:
        """Decoded at ingestion and stored as PNG (a format TensorFlow does not decode). The
        format is Pillow's reading of the content, not the file extension, so a renamed file is
        judged by what it is (image_formats.py: what is stored as it is, converted or rejected)."""
        return self.format not in image_formats.STORED_FORMATS


def is_color(image: Image.Image) -> bool:
    """True for colour modes (RGB, RGBA, CMYK, YCbCr, ...), False for grey ones (1, L, LA, I, F,
    I;16); a palette image is colour only when a pixel uses a non-grey palette entry, since GIFs
    and some PNGs store plain grey pictures as palettes."""
    bands = [band for band in image.getbands() if band not in _ALPHA_BANDS]
    if bands == ['P']:
        red, green, blue = image.convert('RGB').split()
        return bool(ImageChops.difference(red, green).getbbox()
                    or ImageChops.difference(green, blue).getbbox())
    return len(bands) > 1


def list_classes(root: str) -> List[str]:
    """Returns the sorted class-folder names under `root`; the label index is the position.

    Raises FileNotFoundError / ValueError with the path when there is nothing to ingest, because
    an empty class list would otherwise surface much later as a confusing training error.
    """
    if not files.isdir(root):  # local, gs://, hdfs:// alike
        raise FileNotFoundError(f'Input folder does not exist: {root}')
    classes = sorted(name for name in files.listdir(root)
                     if not name.startswith('.') and files.isdir(os.path.join(root, name)))
    if not classes:
        raise ValueError(f'No class folders under {root}: expected one sub-folder per class, '
                         'each holding that class\'s images.')
    bad = [rules.display_name(name) for name in classes if not files.is_utf8(name)]
    if bad:  # a class name is a label the model returns: it must be text
        raise ValueError(f'class folder names {bad} under {root} are not valid UTF-8; '
                         'rename them (the folder name is the label the model returns)')
    return classes


def class_index(classes: List[str]) -> Dict[str, int]:
    return {name: index for index, name in enumerate(classes)}


def inspect_image(data: bytes, max_pixels: int = image_formats.DEFAULT_MAX_IMAGE_PIXELS,
                  convert_formats: Iterable[str] = ()) -> ImageInfo:
    """Fully decodes `data` and returns its format and size, or raises BadImage with a reason.

    The format and the size are judged from the header first (image_formats.py), so an
    unsupported format is never decoded and an image over `max_pixels` is never allocated.
    A full decode (not only the header) is what catches truncated files, which otherwise pass
    ingestion and crash training hours later.
    """
    if not data:
        raise BadImage('empty_file', 'empty file (0 bytes)')
    image_formats.guard(max_pixels)
    try:
        with Image.open(io.BytesIO(data)) as image:
            image_format = image.format
            width, height = image.size
            image_formats.check_format(image_format)
            if width * height > max_pixels:
                raise image_formats.too_large(width, height, max_pixels)
            image.load()
            mode = image.mode
            color = is_color(image)
            if image_format not in image_formats.STORED_FORMATS:
                image_formats.check_conversion(image, convert_formats)
    except rules.BadRecord:
        raise
    except Image.DecompressionBombError as error:  # over twice the limit: raised by open()
        raise image_formats.bomb(error, max_pixels) from None
    except Image.UnidentifiedImageError:
        known = next((name for magic, name in _SIGNATURES if data.startswith(magic)), None)
        if known:  # the header says what it should be, so the rest is damaged
            raise BadImage('corrupt_image',
                           f'corrupt or truncated {known} image: cannot be identified') from None
        raise BadImage('not_an_image', 'not a recognised image format') from None
    except (OSError, SyntaxError, ValueError) as error:
        raise BadImage('corrupt_image', f'corrupt or truncated image: {error}') from None
    if width < 1 or height < 1:
        raise BadImage('corrupt_image', f'image has no pixels ({width}x{height})')
    return ImageInfo(format=image_format, height=height, width=width, mode=mode, color=color)


def split_of(relative_path: str, train_percent: float) -> str:
    """Assigns 'train' or 'eval' from a stable hash of the path relative to the input base.

    sha256 (not Python's salted hash()) makes the split identical across processes, machines
    and worker counts, and adding files never moves an existing file to the other split.
    """
    return rules.split_of(relative_path.replace(os.sep, '/'), train_percent)


def relative_path(path: str, root: str) -> str:
    prefix = root.rstrip('/') + '/'
    if path.startswith(prefix):  # the listed case; relpath normalises both paths
        return path[len(prefix):]
    return os.path.relpath(path, root).replace(os.sep, '/')


@functools.lru_cache(maxsize=4096)
def _real(path: str) -> str:
    return os.path.realpath(path)


def _check_inside(path: str, input_base: str) -> None:
    """Rejects a local file that resolves outside the input base: through its own symlink, or
    through a symlinked class folder (resolved once per folder; cached)."""
    base = _real(input_base)
    real = os.path.realpath(path) if os.path.islink(path) else os.path.join(
        _real(os.path.dirname(path)), os.path.basename(path))
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        raise BadImage('outside_input_base', f'symlink points outside the input base, to {real}')


def read_file(path: str, input_base: str) -> bytes:
    """Reads one listed file, or raises BadImage: a folder, an escaping symlink, unreadable.

    Local paths are resolved first: a symlink may point anywhere, and ingesting a file outside
    the input base would silently train on data nobody meant to include (or leak it). Local
    files are read with open(), several times cheaper per small file than tf.io.gfile, which
    reads every other file system (gs://, hdfs://, ...).
    """
    try:
        if '://' in path:
            if tf.io.gfile.isdir(path):
                raise IsADirectoryError(path)
            return storage.read(path)
        _check_inside(path, input_base)
        return files.read_regular(path)  # FIFOs, sockets, devices: rejected, never opened
    except (BadImage, storage.StoreUnanswered):   # an outage is the run's, not the file's
        raise
    except rules.BadRecord as error:  # from files.py, shared with CSV
        raise BadImage(error.reason, str(error)) from None
    except IsADirectoryError:
        raise BadImage('not_a_file', 'is a folder; images must sit directly in a class folder '
                       '(or, to be scored, in the folder scored)') from None
    except (OSError, tf.errors.OpError) as error:
        # The text names the cause: permission denied, no such file (dangling link), ...
        detail = getattr(error, 'message', None) or getattr(error, 'strerror', None) or str(error)
        raise BadImage('unreadable', f'cannot read: {detail}') from None


@dataclasses.dataclass(frozen=True)
class Stored:
    """What goes into the Example: the payload and the stored geometry and colour."""
    payload: bytes     # encoded bytes (PNG, JPEG, ...) or raw uint8 pixels, row-major HWC
    height: int
    width: int
    channels: int      # 0 for encoded bytes (the decoder decides), else the raw channel count
    mode: str = ''     # Pillow mode of what is stored: the file's own, or L / RGB if converted
    color: bool = False  # the stored pixels carry colour


def prepare(data: bytes, info: ImageInfo, size: Optional[Tuple[int, int]],
            storage: str, channels: int) -> Stored:
    """Applies the configured resize and storage. The default (no resize, encoded) keeps the
    original bytes, which are usually far smaller than pixels and lose nothing.

    channels 1 or 3 converts resized or raw images to grey or RGB; 0 keeps each image's own
    (grey stays 1 channel, colour becomes RGB), so nothing is converted that was not asked for.
    """
    if size is None and storage == 'encoded':
        if info.converted:
            png, mode = image_formats.to_png(data, info.color)
            return Stored(png, info.height, info.width, 0, mode, info.color)
        return Stored(data, info.height, info.width, 0, info.mode, info.color)
    channels = channels or (3 if info.color else 1)
    with Image.open(io.BytesIO(data)) as image:
        image.seek(0)  # GIF: the first frame
        pixels = image.convert(_MODES[channels])
    if size is not None:
        pixels = pixels.resize((size[1], size[0]), Image.BILINEAR)
    color = info.color and channels == 3
    if storage == 'raw':
        return Stored(pixels.tobytes(), pixels.height, pixels.width, channels, pixels.mode, color)
    buffer = io.BytesIO()
    pixels.save(buffer, 'PNG')  # lossless: resizing is the only change
    return Stored(buffer.getvalue(), pixels.height, pixels.width, 0, pixels.mode, color)
