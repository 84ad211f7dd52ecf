"""What ingestion measures besides the records: counts (Beam metrics), the train images' stored
sizes and modes (Beam metrics too), and numeric moments.

No TFX imports. The counts are Beam counters, read back after the run; the moments (mean and
standard deviation of every numeric CSV column over the train split) are a combine, so that the
trainer and the serving graph can standardise features with exactly the same numbers.
"""
import json
import math
from typing import Dict, List

import apache_beam as beam

from components.common import features, image_shape
from components.ingest import records

METRICS_NAMESPACE = 'ingest'
# Counters of the valid train images' stored sizes and modes: size_<h>x<w>, mode_<mode>, color.
IMAGES_NAMESPACE = 'ingest_images'


def empty_counts() -> Dict[str, int]:
    """Every count key, zero: found, rejected, written per split and rejected per reason."""
    counts = {'found': 0, 'rejected': 0}
    counts.update({f'written_{s}': 0 for s in features.SPLITS})
    counts.update({f'rejected_{reason}': 0 for reason in records.REASONS})
    return counts


def read_counts(result: beam.runners.runner.PipelineResult) -> Dict[str, int]:
    """The ingest counters of a finished pipeline run, with every key present."""
    counts = empty_counts()
    query = result.metrics().query(
        beam.metrics.MetricsFilter().with_namespace(METRICS_NAMESPACE))
    for counter in query['counters']:
        counts[counter.key.metric.name] += counter.committed
    return counts


def read_image_shapes(result: beam.runners.runner.PipelineResult) -> Dict[str, object]:
    """The Examples properties describing the stored train images (common/image_shape.py):
    image_sizes and color_modes as JSON; color_images, resized_ and grayscaled_at_ingestion
    as counts."""
    sizes, modes = {}, {}
    flags = {'color': 0, 'resized': 0, 'grayscaled': 0}
    query = result.metrics().query(beam.metrics.MetricsFilter().with_namespace(IMAGES_NAMESPACE))
    for counter in query['counters']:
        kind, _, value = counter.key.metric.name.partition('_')
        if kind == 'size':
            key = tuple(int(n) for n in value.split('x'))
            sizes[key] = sizes.get(key, 0) + counter.committed
        elif kind == 'mode':
            modes[value] = modes.get(value, 0) + counter.committed
        else:
            flags[kind] += counter.committed
    return {image_shape.SIZES_PROPERTY: image_shape.sizes_json(sizes),
            image_shape.MODES_PROPERTY: json.dumps(
                dict(sorted(modes.items(), key=lambda mode: (-mode[1], mode[0])))),
            image_shape.COLOR_PROPERTY: flags['color'],
            image_shape.RESIZED_PROPERTY: flags['resized'],
            image_shape.GRAYSCALED_PROPERTY: flags['grayscaled']}


def empty_moments(width: int):
    """A moments accumulator: (count, sums, sums of squares) of `width` columns."""
    return 0, [0.0] * width, [0.0] * width


def add_row(accumulator, values: List[float]):
    """Adds one row of values to an accumulator; returns the accumulator."""
    count, sums, squares = accumulator
    for i, value in enumerate(values):
        sums[i] += value
        squares[i] += value * value
    return count + 1, sums, squares


class Moments(beam.CombineFn):
    """Mean and population standard deviation per column, from partial accumulators.

    Each converting DoFn accumulates its bundle's rows (add_row) and emits one accumulator, so
    no per-row element crosses a transform. Count, sum and sum of squares (Python doubles)
    merge in any order: the result does not depend on how the runner splits the work.
    """

    def __init__(self, width: int):
        self._width = width

    def create_accumulator(self):
        return empty_moments(self._width)

    def add_input(self, accumulator, partial):
        return self.merge_accumulators([accumulator, partial])

    def merge_accumulators(self, accumulators):
        count, sums, squares = self.create_accumulator()
        for other_count, other_sums, other_squares in accumulators:
            count += other_count
            sums = [a + b for a, b in zip(sums, other_sums)]
            squares = [a + b for a, b in zip(squares, other_squares)]
        return count, sums, squares

    def extract_output(self, accumulator) -> List[Dict[str, float]]:
        count, sums, squares = accumulator
        result = []
        for total, square in zip(sums, squares):
            mean = total / count if count else 0.0
            variance = max(0.0, square / count - mean * mean) if count else 0.0
            # A constant column gets std 1, so standardising leaves it at 0 rather than NaN.
            result.append({'mean': mean, 'std': math.sqrt(variance) or 1.0})
        return result
