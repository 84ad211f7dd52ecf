"""What ingestion measures besides the records: counts (Beam metrics), the train images' stored
sizes and modes (Beam metrics too), and numeric moments.

No TFX imports. The counts are Beam counters, read back after the run: the record counts
(`ingest` namespace), and per CSV column the empty numeric values (all splits) and the
rejections by (reason, column). The moments (per numeric CSV column over the train split: rows,
non-empty values, their mean and standard deviation) are a combine, so that the trainer and the
serving graph impute and standardise with exactly the same numbers.
"""
import json
import math
from typing import Dict, List, Optional, Tuple

import apache_beam as beam

from core import features, image_shape
from components.ingest.formats import rules

METRICS_NAMESPACE = 'ingest'
MISSING_NAMESPACE = 'ingest_missing'              # counter name: the column
REJECTED_COLUMN_NAMESPACE = 'ingest_rejected_by_column'   # name: rejected_column_key()
# Counters of the valid train images' stored sizes and modes: size_<h>x<w>, mode_<mode>, color.
IMAGES_NAMESPACE = 'ingest_images'


def empty_counts() -> Dict[str, int]:
    """Every count key, zero: found, rejected, written per split, rejected per reason, and
    images converted to PNG (formats/image_formats.py)."""
    counts = {'found': 0, 'rejected': 0, 'converted': 0}  # converted: of written images
    counts.update({f'written_{s}': 0 for s in features.SPLITS})
    counts.update({f'rejected_{reason}': 0 for reason in rules.REASONS})
    return counts


def read_counts(result: beam.runners.runner.PipelineResult) -> Dict[str, int]:
    """The ingest counters of a finished pipeline run, with every key present."""
    counts = empty_counts()
    query = result.metrics().query(
        beam.metrics.MetricsFilter().with_namespace(METRICS_NAMESPACE))
    for counter in query['counters']:
        counts[counter.key.metric.name] += counter.committed
    return counts


def rejected_column_key(reason: str, column: str) -> str:
    # JSON, not a separator: a column name may contain any character.
    return json.dumps([reason, column])


def _read_namespace(result: beam.runners.runner.PipelineResult, namespace: str) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    query = result.metrics().query(beam.metrics.MetricsFilter().with_namespace(namespace))
    for counter in query['counters']:
        name = counter.key.metric.name
        counts[name] = counts.get(name, 0) + counter.committed
    return counts


def read_missing(result: beam.runners.runner.PipelineResult) -> Dict[str, int]:
    """Empty numeric values per CSV column, over all splits (columns with none are absent)."""
    return dict(sorted(_read_namespace(result, MISSING_NAMESPACE).items()))


def read_rejected_by_column(
        result: beam.runners.runner.PipelineResult) -> Dict[Tuple[str, str], int]:
    """Rejections per (reason, column), for the reasons that name a column."""
    return {tuple(json.loads(key)): n
            for key, n in _read_namespace(result, REJECTED_COLUMN_NAMESPACE).items()}


def read_image_shapes(result: beam.runners.runner.PipelineResult) -> Dict[str, object]:
    """The Examples properties describing the stored train images (common/image_shape.py):
    image_sizes and color_modes as JSON; color_images, resized_ and grayscaled_at_ingestion
    as counts."""
    sizes, modes = {}, {}
    flags = {'color': 0, 'resized': 0, 'grayscaled': 0}
    for name, count in _read_namespace(result, IMAGES_NAMESPACE).items():
        kind, _, value = name.partition('_')
        if kind == 'size':
            key = tuple(int(n) for n in value.split('x'))
            sizes[key] = sizes.get(key, 0) + count
        elif kind == 'mode':
            modes[value] = modes.get(value, 0) + count
        else:
            flags[kind] += count
    return {image_shape.SIZES_PROPERTY: image_shape.sizes_json(sizes),
            image_shape.MODES_PROPERTY: json.dumps(
                dict(sorted(modes.items(), key=lambda mode: (-mode[1], mode[0])))),
            image_shape.COLOR_PROPERTY: flags['color'],
            image_shape.RESIZED_PROPERTY: flags['resized'],
            image_shape.GRAYSCALED_PROPERTY: flags['grayscaled']}


def empty_moments(width: int):
    """A moments accumulator of `width` columns: (rows, per-column counts of non-empty values,
    sums, sums of squares)."""
    return 0, [0] * width, [0.0] * width, [0.0] * width


def add_row(accumulator, values: List[Optional[float]]):
    """Adds one row (None = an empty value) to an accumulator; returns the accumulator."""
    rows, counts, sums, squares = accumulator
    for i, value in enumerate(values):
        if value is not None:
            counts[i] += 1
            sums[i] += value
            squares[i] += value * value
    return rows + 1, counts, sums, squares


class Moments(beam.CombineFn):
    """Per column: mean and population standard deviation of the non-empty values, how many
    there were, and how many rows had none; from partial accumulators.

    Each converting DoFn accumulates its bundle's rows (add_row) and emits one accumulator, so
    no per-row element crosses a transform. Counts, sums and sums of squares (Python doubles)
    merge in any order: the result does not depend on how the runner splits the work.
    """

    def __init__(self, width: int):
        self._width = width

    def create_accumulator(self):
        return empty_moments(self._width)

    def add_input(self, accumulator, partial):
        return self.merge_accumulators([accumulator, partial])

    def merge_accumulators(self, accumulators):
        rows, counts, sums, squares = self.create_accumulator()
        for other_rows, other_counts, other_sums, other_squares in accumulators:
            rows += other_rows
            counts = [a + b for a, b in zip(counts, other_counts)]
            sums = [a + b for a, b in zip(sums, other_sums)]
            squares = [a + b for a, b in zip(squares, other_squares)]
        return rows, counts, sums, squares

    def extract_output(self, accumulator) -> List[Dict[str, float]]:
        rows, counts, sums, squares = accumulator
        result = []
        for count, total, square in zip(counts, sums, squares):
            # A column with no value in the train split is imputed with 0.
            mean = total / count if count else 0.0
            variance = max(0.0, square / count - mean * mean) if count else 0.0
            # A constant column gets std 1, so standardising leaves it at 0 rather than NaN.
            result.append({'mean': mean, 'std': math.sqrt(variance) or 1.0, 'count': count,
                           'missing': rows - count})
        return result
