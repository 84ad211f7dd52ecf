"""Landing spans for bench/bench_retraining.py: Fashion-MNIST images arriving one span a day.

Scheduled retraining as a team meets it: four classes, a new `span-<N>/` folder per
day holding images no earlier span had, and one day whose label mix drifted (mostly bags). The
held-out set is the official test set restricted to the same classes: balanced, never ingested,
so it says how good each served version is on the data it will meet.
"""
import os
from typing import Dict, List, Tuple

import numpy as np

from bench import quality_data

CLASSES = ('T-shirt_top', 'Trouser', 'Sneaker', 'Bag')
PER_CLASS = 250                      # a normal day: this many images of each class
# The drifted day: many bags, few of the rest (the day 3).
DRIFTED = {'Bag': 400, 'T-shirt_top': 25, 'Trouser': 25, 'Sneaker': 25}


def day_counts(span: int, drifted_span: int) -> Dict[str, int]:
    return dict(DRIFTED) if span == drifted_span else {name: PER_CLASS for name in CLASSES}


def _by_class(images: np.ndarray, labels: np.ndarray) -> Dict[str, List[int]]:
    wanted = {quality_data.CLASS_NAMES.index(name): name for name in CLASSES}
    found = {name: [] for name in CLASSES}
    for index, label in enumerate(labels):
        if int(label) in wanted:
            found[wanted[int(label)]].append(index)
    return found


def write_span(base: str, span: int, drifted_span: int) -> Tuple[str, Dict[str, int]]:
    """Writes base/span-<span>/<class>/<index>.png with images no other span uses."""
    from PIL import Image
    images, labels = quality_data.read_idx('train')
    indices = _by_class(images, labels)
    counts = day_counts(span, drifted_span)
    folder = os.path.join(base, f'span-{span}')
    # Each span takes its own slice of each class's images: PER_CLASS * span onward is never
    # used by another span (the drifted day's 400 bags stay inside its 2 * PER_CLASS slice).
    for name, count in counts.items():
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        start = (span - 1) * 2 * PER_CLASS
        for index in indices[name][start:start + count]:
            Image.fromarray(images[index]).save(os.path.join(folder, name, f'{index:05d}.png'))
    return folder, counts


def held_out() -> Tuple[np.ndarray, List[str]]:
    """The official test images of CLASSES (1,000 each) and their class names."""
    images, labels = quality_data.read_idx('t10k')
    indices = _by_class(images, labels)
    order = [i for name in CLASSES for i in indices[name]]
    return images[order], [quality_data.CLASS_NAMES[int(labels[i])] for i in order]
