"""The report's pictures, drawn with matplotlib into PNG files (no display needed).

Each function takes plain data from `pipeline.report.readers`, writes one PNG into `folder` and
returns its file name, so the HTML refers to it by a relative path and opens offline.
Class names can be long ('class_with_a_rather_long_name_7'): tick labels are rotated, figures
grow with the number of classes and the length of their names, legends sit outside the axes so
they cover no bars, and the saved image is cropped to everything drawn (axis titles included).
"""
import os
from typing import Dict, List, Optional, Sequence, Tuple

import matplotlib
matplotlib.use('Agg')  # files only: runs on machines and CI workers without a display
from matplotlib import pyplot as plt  # noqa: E402  (the backend must be chosen first)
import numpy as np  # noqa: E402

_DPI = 100
_MAX_LABEL = 40          # longer class names are shortened in the middle on the axes
_CHAR_INCHES = 0.075     # width of one tick-label character at the default 10 pt font
_ANNOTATE_UP_TO = 30     # classes; beyond that, cell numbers would not fit, the colours remain


def _save(figure, folder: str, name: str) -> str:
    # bbox 'tight' grows or crops the image to every artist, so rotated labels and outside
    # legends are never cut off, whatever the estimate of the figure size was.
    figure.savefig(os.path.join(folder, name), dpi=_DPI, bbox_inches='tight', pad_inches=0.15)
    plt.close(figure)
    return name


def short_label(name: str, limit: int = _MAX_LABEL) -> str:
    """The name, or its start and end around an ellipsis (names often differ at the end)."""
    if len(name) <= limit:
        return name
    keep = limit - 1
    return name[:(keep + 1) // 2] + '\u2026' + name[-(keep // 2):]


def _label_inches(labels: Sequence[str]) -> float:
    """Room a 45-degree tick label needs below (or beside) the axes."""
    longest = max((len(label) for label in labels), default=1)
    return 0.3 + longest * _CHAR_INCHES * 0.75


def _rotate_if_crowded(axes, labels: Sequence[str], inches_per_label: float) -> None:
    """Turns the x tick labels 45 degrees, anchored at their tick, when they would overlap."""
    if max((len(label) for label in labels), default=0) * _CHAR_INCHES > 0.9 * inches_per_label:
        plt.setp(axes.get_xticklabels(), rotation=45, ha='right', rotation_mode='anchor')


def class_counts(counts_by_split: Dict[str, Dict[str, int]], folder: str,
                 name: str = 'data_classes.png') -> str:
    """Grouped bars: examples per class, one colour per split; legend right of the axes."""
    classes = sorted({c for counts in counts_by_split.values() for c in counts})
    labels = [short_label(c) for c in classes]
    width = max(5.0, 0.5 * len(classes) + 2.5)
    figure, axes = plt.subplots(figsize=(width, 2.8 + _label_inches(labels)),
                                layout='constrained')
    bar = 0.8 / max(1, len(counts_by_split))
    positions = np.arange(len(classes))
    for i, (split, counts) in enumerate(sorted(counts_by_split.items())):
        axes.bar(positions + i * bar, [counts.get(c, 0) for c in classes], bar, label=split)
    axes.set_xticks(positions + bar * (len(counts_by_split) - 1) / 2, labels)
    _rotate_if_crowded(axes, labels, (width - 2.0) / max(1, len(classes)))
    axes.set_xlabel('class')
    axes.set_ylabel('examples')
    axes.legend(title='split', loc='upper left', bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(figure, folder, name)


def training_curves(curves: Dict[str, List[Tuple[int, float]]], folder: str,
                    name: str = 'training_curves.png') -> str:
    """Loss and accuracy against step: train as lines, the final eval as points."""
    figure, panels = plt.subplots(1, 2, figsize=(10, 3.5), layout='constrained')
    for axes, metric in zip(panels, ('loss', 'accuracy')):
        for split, style in (('train', '-o'), ('eval', 's')):
            points = curves.get(f'{split}/{metric}', [])
            if points:
                steps, values = zip(*sorted(points))
                axes.plot(steps, values, style, label=split, markersize=4)
        axes.set_xlabel('step')
        axes.set_ylabel(metric)
        axes.grid(alpha=0.3)
    handles, labels = panels[0].get_legend_handles_labels()
    if handles:  # one legend for both panels, outside them: it hides no point of a curve
        figure.legend(handles, labels, loc='outside right upper')
    return _save(figure, folder, name)


def confusion_matrix(matrix: np.ndarray, class_names: Sequence[str], folder: str,
                     name: str = 'confusion_matrix.png') -> str:
    """Counts of (actual, predicted) pairs, each cell annotated while the cells are big enough."""
    n = len(class_names)
    labels = [short_label(c) for c in class_names]
    cell = 0.5 if n <= 15 else 0.3          # inches per class
    label_room = _label_inches(labels)
    side = max(2.5, cell * n)
    figure, axes = plt.subplots(figsize=(side + label_room + 1.3, side + label_room + 0.6),
                                layout='constrained')
    image = axes.imshow(matrix, cmap='Blues')
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.02, label='examples')
    ticks = np.arange(n)
    font = 9 if n <= 15 else 7
    axes.set_xticks(ticks, labels, fontsize=font)
    axes.set_yticks(ticks, labels, fontsize=font)
    _rotate_if_crowded(axes, labels, side / max(1, n) * 10 / font)  # a smaller font is narrower
    axes.set_xlabel('predicted class')
    axes.set_ylabel('actual class')
    axes.set_title('eval split, examples per (actual, predicted)', fontsize=10)
    if n <= _ANNOTATE_UP_TO:
        threshold = matrix.max() / 2 if matrix.size else 0
        for (row, col), value in np.ndenumerate(matrix):
            axes.text(col, row, f'{value:g}', ha='center', va='center',
                      fontsize=8 if n <= 15 else 6,
                      color='white' if value > threshold else 'black')
    return _save(figure, folder, name)


def accuracy_per_version(labels: Sequence[str], accuracies: Sequence[float], served: int,
                         folder: str, name: str = 'history_accuracy.png',
                         served_then: Optional[Sequence[Optional[float]]] = None,
                         canary: int = -1) -> str:
    """Per version, oldest first: its (the candidate's) eval accuracy, and beside it the
    accuracy of the model served when it was evaluated, on the same examples (served_then; None
    where nothing was compared), each value on top. The candidate bar at index `served` (stable
    now) darker, the one at `canary` hatched; y from the lowest value, so differences show."""
    served_then = list(served_then) if served_then is not None else [None] * len(labels)
    pairs = any(v is not None for v in served_then)
    lines = max((label.count('\n') + 1 for label in labels), default=1)
    width = max(5.0, (1.1 if pairs else 0.6) * len(labels) + 2.5)
    figure, axes = plt.subplots(
        figsize=(width, 3.2 + _label_inches([max(label.split('\n'), key=len)
                                             for label in labels]) / 2 + 0.15 * lines),
        layout='constrained')
    positions = np.arange(len(labels))
    bar = 0.38 if pairs else 0.6
    offset = bar / 2 if pairs else 0.0
    colours = ['#1f4e79' if i == served else '#9dc3e6' for i in range(len(labels))]
    bars = axes.bar(positions - offset, accuracies, bar, color=colours,
                    hatch=['//' if i == canary else '' for i in range(len(labels))],
                    edgecolor='#1f4e79', linewidth=0.6, label='candidate (the version)')
    axes.bar_label(bars, labels=[f'{a:.4f}' for a in accuracies], fontsize=8, padding=2)
    values = list(accuracies)
    if pairs:
        shown = [(i, v) for i, v in enumerate(served_then) if v is not None]
        others = axes.bar([positions[i] + offset for i, _ in shown], [v for _, v in shown], bar,
                          color='#bdbdbd', edgecolor='#616161', linewidth=0.6,
                          label='served then, same examples')
        axes.bar_label(others, labels=[f'{v:.4f}' for _, v in shown], fontsize=8, padding=2)
        values += [v for _, v in shown]
        axes.legend(loc='upper left', bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize=8)
    low = min(values, default=0.0)
    axes.set_ylim(max(0.0, low - max(0.05, (1.0 - low) * 0.5)), 1.0)
    axes.set_xticks(positions, labels, fontsize=8)
    _rotate_if_crowded(axes, [max(label.split('\n'), key=len) for label in labels],
                       width / max(1, len(labels)))
    axes.set_xlabel('version (dark: stable now; hatched: canary)')
    axes.set_ylabel("eval accuracy on its run's examples")
    return _save(figure, folder, name)
