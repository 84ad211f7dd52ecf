"""Reads a run's artifacts into plain data for the report, with the stock readers.

TFDV statistics via `tfdv.load_stats_binary`, anomalies via the gate's reader, training curves
via TensorBoard's EventAccumulator, and metrics, plots and the validation result via TFMA's
loaders. Inputs are the ML Metadata artifacts that `pipeline.summary` already read, so the
report and the printed summary describe the same run.
"""
import dataclasses
import json
import os
from typing import Dict, List, Optional, Tuple

from ml_metadata.proto import metadata_store_pb2
import tensorflow_data_validation as tfdv
import tensorflow_model_analysis as tfma
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util

from components.common import features
from components.evaluate import checks
from components.gate import anomalies as anomalies_lib

Artifact = metadata_store_pb2.Artifact
# Written by the stock StatisticsGen and ExampleValidator in each Split-<name> folder.
_STATS_FILE = 'FeatureStats.pb'
_ANOMALIES_FILE = 'SchemaDiff.pb'
# TFMA names the candidate 'candidate' when a baseline is compared, else leaves it unnamed.
_CANDIDATE_NAMES = ('', 'candidate')


@dataclasses.dataclass
class SplitData:
    num_examples: int
    class_counts: Dict[str, int]             # label name -> examples
    image_sizes: Dict[str, Tuple[float, float]]  # 'height'/'width' -> (min, max)


@dataclasses.dataclass
class Evaluation:
    overall: Dict[str, float]                 # metric name -> value (the candidate's)
    per_class: Dict[str, Dict[str, float]]    # label name -> metric name -> value
    diffs: Dict[str, float]                   # metric name -> candidate minus baseline
    confusion: Optional[Dict[Tuple[int, int], float]]  # (actual, predicted) -> examples


def split_names(artifact: Artifact) -> List[str]:
    return json.loads(artifact.properties['split_names'].string_value or '[]')


def _split_dir(artifact: Artifact, split: str) -> str:
    return os.path.join(artifact.uri, f'Split-{split}')


def data_summary(statistics: Artifact) -> Dict[str, SplitData]:
    """Examples per split and per class, and the image size range, from TFDV statistics."""
    result = {}
    for split in split_names(statistics):
        stats = tfdv.load_stats_binary(os.path.join(_split_dir(statistics, split), _STATS_FILE))
        dataset = stats.datasets[0]
        counts, sizes = {}, {}
        for feature in dataset.features:
            name = feature.path.step[-1] if feature.path.step else feature.name
            if name == features.LABEL_NAME_KEY:
                # The rank histogram lists every value (up to 1,000), top values only the top 20.
                buckets = feature.string_stats.rank_histogram.buckets
                counts = {b.label: int(b.sample_count) for b in buckets}
            elif name in (features.HEIGHT_KEY, features.WIDTH_KEY):
                sizes[name.split('/')[-1]] = (feature.num_stats.min, feature.num_stats.max)
        result[split] = SplitData(int(dataset.num_examples), dict(sorted(counts.items())), sizes)
    return result


def anomalies_by_split(anomalies: Artifact) -> Dict[str, str]:
    """Split -> the anomalies as text ('' when the split is clean)."""
    result = {}
    for split in split_names(anomalies):
        found = anomalies_lib.load(os.path.join(_split_dir(anomalies, split), _ANOMALIES_FILE))
        result[split] = anomalies_lib.describe(found) if anomalies_lib.has_anomalies(found) else ''
    return result


def training_curves(model_run: Artifact) -> Dict[str, List[Tuple[int, float]]]:
    """TensorBoard scalar tag -> [(step, value)], from the trainer's event files."""
    accumulator = event_accumulator.EventAccumulator(
        model_run.uri, size_guidance={event_accumulator.TENSORS: 0})
    accumulator.Reload()
    tags = accumulator.Tags()[event_accumulator.TENSORS]
    return {tag: [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
                  for e in accumulator.Tensors(tag)] for tag in tags}


def _slice_label(metrics: 'tfma.MetricsForSlice') -> Optional[str]:
    """None for the overall slice, the label name for a per-class slice."""
    for key in metrics.slice_key.single_slice_keys:
        if key.column == features.LABEL_NAME_KEY:
            return key.bytes_value.decode('utf-8')
    return None


def blessing_checks(evaluation_artifact: Artifact) -> List[checks.Check]:
    """Every check of the blessing (value, threshold, pass or fail), from TFMA's results."""
    return checks.load_checks(evaluation_artifact.uri)


def evaluation(evaluation_artifact: Artifact) -> Evaluation:
    """The candidate's metrics overall and per class, and its confusion matrix."""
    uri = evaluation_artifact.uri
    overall, per_class, diffs = {}, {}, {}
    for metrics in tfma.load_metrics(uri):
        label = _slice_label(metrics)
        for item in metrics.metric_keys_and_values:
            if (item.key.model_name not in _CANDIDATE_NAMES
                    or not item.value.HasField('double_value')):
                continue
            value = item.value.double_value.value
            if item.key.is_diff:  # candidate minus baseline; only the overall one is reported
                if label is None:
                    diffs[item.key.name] = value
            elif label is not None:
                per_class.setdefault(label, {})[item.key.name] = value
            else:
                overall[item.key.name] = value
    confusion = None
    for plots in tfma.load_plots(uri):
        if _slice_label(plots) is not None or plots.slice_key.single_slice_keys:
            continue
        for item in plots.plot_keys_and_values:
            matrices = item.value.multi_class_confusion_matrix_at_thresholds.matrices
            if item.key.model_name in _CANDIDATE_NAMES and matrices:
                confusion = {(e.actual_class_id, e.predicted_class_id): e.num_weighted_examples
                             for e in matrices[0].entries}
    return Evaluation(overall, dict(sorted(per_class.items())), diffs, confusion)
