"""Pure functions of image ingestion: class discovery, validation, deterministic splits.

No TFX and no Beam here, so that each rule can be unit-tested on its own. The Beam pipeline in
`beam_pipeline.py` applies these functions per file.
"""
import dataclasses
import hashlib
import io
import os
from typing import Dict, List

from PIL import Image

# Pillow format names we accept. Checked on the decoded content, not on the file extension,
# so a renamed file is judged by what it really is.
ACCEPTED_FORMATS = frozenset({'PNG', 'JPEG', 'BMP', 'GIF'})


# File signatures, to tell a damaged image from a file that never was one.
_SIGNATURES = ((b'\x89PNG', 'PNG'), (b'\xff\xd8\xff', 'JPEG'), (b'GIF8', 'GIF'), (b'BM', 'BMP'))


class BadImage(ValueError):
    """A file that cannot become a training example; the message is the reason."""


@dataclasses.dataclass(frozen=True)
class ImageInfo:
    format: str
    height: int
    width: int
    mode: str


def list_classes(root: str) -> List[str]:
    """Returns the sorted class-folder names under `root`; the label index is the position.

    Raises FileNotFoundError / ValueError with the path when there is nothing to ingest, because
    an empty class list would otherwise surface much later as a confusing training error.
    """
    if not os.path.isdir(root):
        raise FileNotFoundError(f'Input folder does not exist: {root}')
    classes = sorted(name for name in os.listdir(root)
                     if not name.startswith('.') and os.path.isdir(os.path.join(root, name)))
    if not classes:
        raise ValueError(f'No class folders under {root}: expected one sub-folder per class, '
                         'each holding that class\'s images.')
    return classes


def class_index(classes: List[str]) -> Dict[str, int]:
    return {name: index for index, name in enumerate(classes)}


def inspect_image(data: bytes) -> ImageInfo:
    """Fully decodes `data` and returns its format and size, or raises BadImage with a reason.

    A full decode (not only the header) is what catches truncated files, which otherwise pass
    ingestion and crash training hours later.
    """
    if not data:
        raise BadImage('empty file (0 bytes)')
    try:
        with Image.open(io.BytesIO(data)) as image:
            image_format = image.format
            image.load()
            width, height = image.size
            mode = image.mode
    except Image.UnidentifiedImageError:
        known = next((name for magic, name in _SIGNATURES if data.startswith(magic)), None)
        if known:  # the header says what it should be, so the rest is damaged
            raise BadImage(f'corrupt or truncated {known} image: cannot be identified') from None
        raise BadImage('not a recognised image format') from None
    except (OSError, SyntaxError, ValueError) as error:
        raise BadImage(f'corrupt or truncated image: {error}') from None
    if image_format not in ACCEPTED_FORMATS:
        raise BadImage(f'unsupported image format {image_format}; '
                       f'accepted: {", ".join(sorted(ACCEPTED_FORMATS))}')
    if width < 1 or height < 1:
        raise BadImage(f'image has no pixels ({width}x{height})')
    return ImageInfo(format=image_format, height=height, width=width, mode=mode)


def split_of(relative_path: str, train_percent: int) -> str:
    """Assigns 'train' or 'eval' from a stable hash of the path relative to the input base.

    sha256 (not Python's salted hash()) makes the split identical across processes, machines
    and worker counts, and adding files never moves an existing file to the other split.
    """
    normalized = relative_path.replace(os.sep, '/')
    bucket = int.from_bytes(hashlib.sha256(normalized.encode('utf-8')).digest()[:8], 'big') % 100
    return 'train' if bucket < train_percent else 'eval'


def relative_path(path: str, root: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, '/')
