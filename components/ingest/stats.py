"""What ingestion measures besides the records: counts (Beam metrics) and numeric moments.

No TFX imports. The counts are Beam counters, read back after the run; the moments (mean and
standard deviation of every numeric CSV column over the train split) are a combine, so that the
trainer and the serving graph can standardise features with exactly the same numbers.
"""
import math
from typing import Dict, List

import apache_beam as beam

from components.common import features
from components.ingest import records

METRICS_NAMESPACE = 'ingest'


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
