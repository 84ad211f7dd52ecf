"""Writes scikit-learn's bundled 8x8 handwritten digits as PNG files, one folder per class.

Run once to (re)create the embedded default data set, `data/digits/<label>/<id>.png`. The
pipeline never imports scikit-learn: it reads these PNG files like any user's image folders.

    python data/make_digits.py [--out data/digits]

The digits are the UCI "Optical Recognition of Handwritten Digits" test set (1,797 images,
grey levels 0..16). Levels are rescaled to 0..255 so the PNGs look like ordinary images.
"""
import argparse
import os

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits


def write_digits(out_dir: str) -> int:
    """Writes every digit as `<out_dir>/<label>/<index:04d>.png`; returns the count written."""
    digits = load_digits()
    for index, (pixels, label) in enumerate(zip(digits.images, digits.target)):
        class_dir = os.path.join(out_dir, str(int(label)))
        os.makedirs(class_dir, exist_ok=True)
        # 16 is the data set's maximum grey level; round so the mapping is exact and stable.
        grey = np.round(pixels * (255.0 / 16.0)).astype(np.uint8)
        # optimize=False keeps the bytes stable across runs, so re-running is a no-op in git.
        Image.fromarray(grey, mode='L').save(
            os.path.join(class_dir, f'{index:04d}.png'), optimize=False)
    return len(digits.target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=os.path.join(os.path.dirname(__file__), 'digits'))
    args = parser.parse_args()
    count = write_digits(args.out)
    print(f'wrote {count} PNG files under {args.out}')


if __name__ == '__main__':
    main()
