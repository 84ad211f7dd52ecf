"""Image folders cut from real photos, as a user's own data looks: mixed sizes, formats, modes.

scikit-learn ships two 427x640 RGB photos offline (load_sample_images). Each class is cut from
its own region of them, so the classes differ in content (sky and roofs, temple, flower) and a
model can learn them; within a class every patch is a different random crop, so no two images
are the same. Sizes, formats and colour vary by position in a fixed cycle, not by class, so
none of them gives the class away.
"""
import os
from typing import Dict, Sequence, Tuple

import numpy as np
from PIL import Image

# (photo index, top, left, bottom, right): the region each class is cut from.
REGIONS = {
    'flower': (1, 60, 120, 380, 520),
    'roofs': (0, 200, 0, 427, 300),
    'sky': (0, 0, 0, 150, 640),
}
# Per image, by position: sizes in a 10-cycle (6 x 28x28, 3 x 32x32, 1 x 40x40), every
# seventh image in colour (RGB; the rest grayscale), every third a JPEG (the rest PNG).
SIZES = ((28, 28),) * 6 + ((32, 32),) * 3 + ((40, 40),)
COLOR_EVERY = 7


def _photos():
    from sklearn.datasets import load_sample_images  # ships the photos; no download
    return load_sample_images().images


def make_folders(dest: str, per_class: int = 30,
                 classes: Sequence[str] = tuple(sorted(REGIONS)),
                 seed: int = 0) -> Dict[str, Dict]:
    """Writes dest/<class>/<n>.png|jpg; returns {relative path: {'size': (height, width),
    'mode': 'L' | 'RGB', 'format': 'PNG' | 'JPEG'}}."""
    photos = _photos()
    rng = np.random.default_rng(seed)
    written = {}
    for name in classes:
        photo, top, left, bottom, right = REGIONS[name]
        os.makedirs(os.path.join(dest, name), exist_ok=True)
        for i in range(per_class):
            crop = int(rng.integers(48, 80))
            y = int(rng.integers(top, bottom - crop))
            x = int(rng.integers(left, right - crop))
            patch = Image.fromarray(photos[photo][y:y + crop, x:x + crop])
            height, width = SIZES[i % len(SIZES)]
            patch = patch.resize((width, height), Image.BILINEAR)
            mode = 'RGB' if i % COLOR_EVERY == 0 else 'L'
            patch = patch.convert(mode)
            fmt, suffix = ('JPEG', 'jpg') if i % 3 == 1 else ('PNG', 'png')
            relative = f'{name}/{i:03d}.{suffix}'
            patch.save(os.path.join(dest, relative), fmt, **({'quality': 90} if fmt == 'JPEG'
                                                               else {}))
            written[relative] = {'size': (height, width), 'mode': mode, 'format': fmt}
    return written


def counts(written: Dict[str, Dict], paths: Sequence[str]) -> Tuple[Dict, int]:
    """{(height, width): count} and the number of colour images among `paths`."""
    sizes = {}
    for path in paths:
        sizes[written[path]['size']] = sizes.get(written[path]['size'], 0) + 1
    return sizes, sum(written[p]['mode'] == 'RGB' for p in paths)
