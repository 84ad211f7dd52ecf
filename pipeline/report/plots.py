"""The report's pictures, drawn with matplotlib into PNG files (no display needed).

Each function takes plain data from `pipeline.report.readers`, writes one PNG and returns its
file name, relative to the report's folder, so the HTML refers to it and opens offline.
"""
import os
from typing import Dict, List, Sequence, Tuple

import matplotlib
matplotlib.use('Agg')  # files only: runs on machines and CI workers without a display
from matplotlib import pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

_DPI = 100


def _save(figure, folder: str, name: str) -> str:
    figure.tight_layout()
    figure.savefig(os.path.join(folder, name), dpi=_DPI)
    plt.close(figure)
    return name


def class_counts(counts_by_split: Dict[str, Dict[str, int]], folder: str,
                 name: str = 'data_classes.png') -> str:
    """Grouped bars: examples per class, one colour per split."""
    classes = sorted({c for counts in counts_by_split.values() for c in counts})
    figure, axes = plt.subplots(figsize=(max(5.0, 0.6 * len(classes) + 2), 3.2))
    width = 0.8 / max(1, len(counts_by_split))
    positions = np.arange(len(classes))
    for i, (split, counts) in enumerate(sorted(counts_by_split.items())):
        axes.bar(positions + i * width, [counts.get(c, 0) for c in classes], width, label=split)
    axes.set_xticks(positions + width * (len(counts_by_split) - 1) / 2, classes)
    axes.set_xlabel('class')
    axes.set_ylabel('examples')
    axes.legend()
    return _save(figure, folder, name)


def training_curves(curves: Dict[str, List[Tuple[int, float]]], folder: str,
                    name: str = 'training_curves.png') -> str:
    """Loss and accuracy against step: train as lines, the final eval as points."""
    figure, panels = plt.subplots(1, 2, figsize=(10, 3.5))
    for axes, metric in zip(panels, ('loss', 'accuracy')):
        for split, style in (('train', '-o'), ('eval', 's')):
            points = curves.get(f'{split}/{metric}', [])
            if points:
                steps, values = zip(*sorted(points))
                axes.plot(steps, values, style, label=split, markersize=4)
        axes.set_xlabel('step')
        axes.set_ylabel(metric)
        axes.grid(alpha=0.3)
        axes.legend()
    return _save(figure, folder, name)


def confusion_matrix(matrix: np.ndarray, class_names: Sequence[str], folder: str,
                     name: str = 'confusion_matrix.png') -> str:
    """Counts of (actual, predicted) pairs, each cell annotated."""
    size = max(4.0, 0.5 * len(class_names) + 2)
    figure, axes = plt.subplots(figsize=(size, size * 0.85))
    image = axes.imshow(matrix, cmap='Blues')
    figure.colorbar(image, ax=axes, fraction=0.046)
    ticks = np.arange(len(class_names))
    axes.set_xticks(ticks, class_names)
    axes.set_yticks(ticks, class_names)
    axes.set_xlabel('predicted')
    axes.set_ylabel('actual')
    threshold = matrix.max() / 2 if matrix.size else 0
    for (row, col), value in np.ndenumerate(matrix):
        axes.text(col, row, f'{value:g}', ha='center', va='center', fontsize=8,
                  color='white' if value > threshold else 'black')
    return _save(figure, folder, name)
