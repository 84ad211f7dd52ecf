"""Which image formats ingestion stores, converts or rejects, and the size limit on pixels.

No TFX and no Beam here. PNG, JPEG, BMP and GIF are stored as they are (TensorFlow decodes
them). Other formats Pillow reads (WebP, TIFF, ...) are decoded at ingestion and stored as
PNG: always when that loses nothing (a single frame in a mode PNG holds: 1, L, LA, P, RGB,
RGBA), and otherwise (CMYK, 16-bit or float pixels, several frames) only for the formats the
user lists in `ingest.convert_formats`; there the first frame is kept as 8-bit grey or RGB(A).
Formats outside both lists are never decoded: Pillow's EPS reader, for one, runs Ghostscript.

Size: an image's width and height are in its header, which Pillow reads on `Image.open`
without decoding; an image over `ingest.max_image_pixels` is rejected as `too_large` from
that, before a byte of pixels is allocated. Pillow's own guard (MAX_IMAGE_PIXELS, which raises
DecompressionBombError at twice the value) is set to the same limit, and its error is caught,
so a decompression bomb is a rejection, never a crash.
"""
import io
import re
import warnings
from typing import Iterable, Tuple

from PIL import Image

from components.ingest.formats import rules

STORED_FORMATS = frozenset({'PNG', 'JPEG', 'BMP', 'GIF'})
CONVERTED_FORMATS = frozenset({'WEBP', 'TIFF', 'PPM', 'TGA', 'ICO', 'PCX', 'SGI', 'MPO'})
PNG_MODES = frozenset({'1', 'L', 'LA', 'P', 'RGB', 'RGBA'})
# 100 megapixels: a 12,000 x 8,000 photo; decoded as RGB about 300 MB in one worker.
DEFAULT_MAX_IMAGE_PIXELS = 100_000_000
SETTING = '--convert-formats (ingest.convert_formats)'

class BadImage(rules.BadRecord):
    """A file that cannot become a training example; the message is the detail."""


# Ingestion decides on size itself (above); Pillow's warning between 1x and 2x its limit
# would only repeat that decision in the log.
warnings.simplefilter('ignore', Image.DecompressionBombWarning)


def guard(max_pixels: int) -> None:
    """Sets Pillow's own decompression-bomb limit to ours (process-wide; set before each open,
    as every ingestion worker uses the same value)."""
    Image.MAX_IMAGE_PIXELS = max_pixels


def too_large(width: int, height: int, max_pixels: int) -> BadImage:
    return BadImage(
        'too_large', f'image of {width}x{height} = {width * height:,} pixels is over '
        f'ingest.max_image_pixels {max_pixels:,} (--max-image-pixels); not decoded')


def bomb(error: Exception, max_pixels: int) -> BadImage:
    """Pillow's DecompressionBombError, as a rejection naming the size and the setting."""
    found = re.search(r'\((\d+) pixels\)', str(error))
    size = f'{int(found.group(1)):,} pixels' if found else 'too many pixels'
    return BadImage('too_large', f'image of {size} is over ingest.max_image_pixels '
                             f'{max_pixels:,} (--max-image-pixels); not decoded')


def check_format(image_format: str) -> None:
    """Rejects, before decoding, a format that is neither stored nor converted."""
    if image_format not in STORED_FORMATS | CONVERTED_FORMATS:
        raise BadImage(
            'unsupported_format', f'unsupported image format {image_format}; accepted: '
            f'{", ".join(sorted(STORED_FORMATS))}, and converted to PNG: '
            f'{", ".join(sorted(CONVERTED_FORMATS))}')


def conversion_loss(image: Image.Image) -> str:
    """What storing this decoded image as PNG would lose ('' for nothing)."""
    losses = []
    if image.mode not in PNG_MODES:
        losses.append(f'mode {image.mode} becomes 8-bit')
    frames = getattr(image, 'n_frames', 1)
    if frames > 1:
        losses.append(f'only the first of {frames} frames is kept')
    return ', '.join(losses)


def check_conversion(image: Image.Image, allowed: Iterable[str]) -> None:
    """Rejects a lossy conversion the user did not allow, naming the setting."""
    loss = conversion_loss(image)
    if loss and image.format not in allowed:
        raise BadImage(
            'unsupported_format', f'{image.format} image cannot be stored as PNG without loss '
            f'({loss}); allow it with {SETTING} {image.format}')


def to_png(data: bytes, color: bool) -> Tuple[bytes, str]:
    """(PNG bytes, stored mode) of an image in a converted format: its first frame, in its own
    mode when PNG holds it, else 8-bit grey or RGB, with alpha kept when it has some."""
    with Image.open(io.BytesIO(data)) as image:
        image.seek(0)
        pixels = image
        if image.mode not in PNG_MODES:
            alpha = 'A' in image.getbands() or 'a' in image.getbands()
            pixels = image.convert(('RGB' if color else 'L') + ('A' if alpha else ''))
        buffer = io.BytesIO()
        pixels.save(buffer, 'PNG')
        return buffer.getvalue(), pixels.mode
