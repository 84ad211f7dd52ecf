"""Reads a run's artifacts into plain data for the report, with the stock readers.

TFDV statistics via `tfdv.load_stats_binary`, anomalies via the gate's reader, training curves
via TensorBoard's EventAccumulator, and metrics, plots and the validation result via TFMA's
loaders. Inputs are the ML Metadata artifacts that `pipeline.runs.summary` already read, so the
report and the printed summary describe the same run.

The examples per class of the training window (`window_class_counts`) are counted from the
window's records: StatisticsGen describes the newest span only, ingestion records per span the
counts per split but not per class, and the statistics of an older span belong to the run
that ingested it (or to none: spans converted into `Span-<N>/` on a first run). Only the label
feature is parsed. A span folder never changes (an artifact's files are immutable), so its
counts are kept by folder in `reports/.window_class_counts.json` and each span is read once.
"""
import collections
import dataclasses
import json
import os
from typing import Dict, List, Mapping, Optional, Tuple

from ml_metadata.proto import metadata_store_pb2
import tensorflow_data_validation as tfdv
import tensorflow_model_analysis as tfma
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util
import tensorflow as tf

from core import features, image_shape, inputs, window as window_lib
from core import properties as property_names
from components.evaluate import checks
from components.gate import anomalies as anomalies_lib
from pipeline.runs import summary_text
from pipeline.runs.summary import custom_property
from training import plan
from training.result import TrainResult

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


@dataclasses.dataclass
class WindowData:
    entries: List[window_lib.SpanEntry]       # oldest span first
    class_counts: Dict[str, Dict[str, int]]   # split -> label name -> examples, over the window


def window_entries(examples: Artifact) -> List[window_lib.SpanEntry]:
    """The spans the run trained and evaluated on (the Examples' `window`), or the Examples'
    own span for Examples that record no window."""
    text = custom_property(examples, window_lib.PROPERTY)
    if text:
        return window_lib.from_json(text)
    return [window_lib.SpanEntry(
        span=int(custom_property(examples, 'span') or 0), uri=examples.uri, fingerprint='',
        num_train=int(custom_property(examples, property_names.NUM_WRITTEN_TRAIN) or 0),
        num_eval=int(custom_property(examples, property_names.NUM_WRITTEN_EVAL) or 0))]


def _count_labels(folder: str) -> Dict[str, int]:
    """Examples per label name in one Split-<name> folder of TFRecords (gzip'd or not)."""
    if not tf.io.gfile.isdir(folder):
        raise FileNotFoundError(f'{folder} is no longer there')
    counts: Dict[str, int] = collections.Counter()
    for path in sorted(tf.io.gfile.glob(os.path.join(folder, '*'))):
        records = tf.data.TFRecordDataset(
            path, compression_type='GZIP' if path.endswith(features.FILE_SUFFIX) else '')
        for batch in records.batch(4096):
            parsed = tf.io.parse_example(batch, {
                features.LABEL_NAME_KEY: tf.io.VarLenFeature(tf.string)})
            counts.update(v.decode('utf-8') for v in
                          parsed[features.LABEL_NAME_KEY].values.numpy())
    return dict(counts)


def _read_cache(path: Optional[str]) -> dict:
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (TypeError, OSError, ValueError):
        return {}


def _write_cache(path: Optional[str], kept: dict) -> None:
    if not path:
        return
    partial = f'{path}.tmp-{os.getpid()}'
    try:
        with open(partial, 'w', encoding='utf-8') as handle:
            json.dump(kept, handle, sort_keys=True)
        os.replace(partial, path)  # whole or not at all; two runs writing agree
    except OSError:
        pass  # a cache: the next report counts again


def window_class_counts(examples: Artifact, splits: List[str],
                        cache_path: Optional[str] = None) -> WindowData:
    """Examples per class and split, summed over the window's spans. Raises OSError (or
    tf.errors.OpError) when a span's records can no longer be read."""
    entries = window_entries(examples)
    cache = _read_cache(cache_path)
    kept, totals = {}, {split: collections.Counter() for split in splits}
    for entry in entries:
        per_split = cache.get(entry.uri)
        if not isinstance(per_split, dict) or set(per_split) != set(splits):
            per_split = {split: _count_labels(os.path.join(entry.uri, f'Split-{split}'))
                         for split in splits}
        kept[entry.uri] = per_split
        for split in splits:
            totals[split].update(per_split[split])
    _write_cache(cache_path, kept)  # the current window's spans only: it stays small
    return WindowData(entries, {split: dict(sorted(counts.items()))
                                for split, counts in totals.items()})


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


def _number(value) -> str:
    return f'{value:g}' if isinstance(value, float) else str(value)


def model_input(model: Optional[Artifact]) -> Optional[image_shape.InputShape]:
    """The image input the trainer recorded on its Model, or None (no Model, a table, or a
    Model recorded before the trainer chose the shape)."""
    if model is None:
        return None
    values = [custom_property(model, f'input_{name}') for name in ('height', 'width', 'channels')]
    if any(value is None for value in values):
        return None
    return image_shape.InputShape(
        *(int(value) for value in values),
        statement=custom_property(model, property_names.INPUT_STATEMENT) or '')


def training_settings(asked: Mapping[str, object], result: Optional[TrainResult],
                      shape: Optional[image_shape.InputShape],
                      examples: Optional[Artifact]) -> List[Tuple[str, str]]:
    """(setting, value) rows saying how the model was trained.

    `asked` are the trainer execution's properties (what was asked); `result` and `shape` what
    the trainer recorded on the Model that it did (TrainResult.from_properties, model_input).
    A trainer that failed has no Model (result None): its rows then come from `asked` alone.
    """
    spec = inputs.InputSpec.from_json((custom_property(examples, property_names.INPUT_SPEC)
                                       if examples is not None else None) or '')
    num_train = (custom_property(examples, property_names.NUM_WRITTEN_TRAIN)
                 if examples is not None else None) or 0
    done = result or TrainResult()
    batch = done.global_batch_size or asked.get('global_batch_size') or None
    return (_input_rows(asked, shape, spec) + _spread_rows(asked, done, batch)
            + _length_rows(asked, done, batch, num_train)
            + _asked_rows(asked) + _image_rows(asked, done, spec)
            + _warm_start_rows(asked, done, trained=result is not None))


def _input_rows(asked, shape, spec) -> List[Tuple[str, str]]:
    """The input: a table's columns, or the image size used (else the one asked)."""
    if spec.kind == 'tabular':
        return [('input', f'table: {len(spec.numeric)} numeric, '
                          f'{len(spec.categorical)} categorical columns')]
    rows = []
    size = shape.shape if shape else [asked.get(name) for name in (
        'image_height', 'image_width', 'channels')]
    if all(v is not None for v in size):
        rows.append(('input size', '\u00d7'.join(str(int(v)) for v in size)
                     + ' (height \u00d7 width \u00d7 channels)'))
    if shape and shape.statement:
        rows.append(('input shape chosen', shape.statement))
    return rows


def _spread_rows(asked, done: TrainResult, batch) -> List[Tuple[str, str]]:
    """Replicas and processes, the precision policy, the batch and its accumulation."""
    replicas = done.num_replicas
    rows = [('replicas', 'not recorded' if replicas is None else str(replicas))]
    if done.num_workers is not None:
        rows.append(('training processes', str(done.num_workers)))
    policy, policy_asked = done.mixed_precision, asked.get('mixed_precision')
    if summary_text.precision_text(done):  # with the reason when auto chose it
        rows.append(('precision policy', summary_text.precision_text(done)))
    elif policy is not None:
        rows.append(('precision policy', policy + (
            f' (asked: {policy_asked})' if policy_asked and policy_asked != policy else '')))
    elif policy_asked:
        rows.append(('precision policy', f'{policy_asked} (asked; no policy recorded)'))
    if batch is None:
        return rows
    per_replica = f'; {int(batch) // replicas} per replica' if replicas else ''
    rows.append(('batch', f'{int(batch)} per micro-batch (all replicas together{per_replica})'))
    accumulation = asked.get('accumulation_steps')
    if accumulation is not None:
        plural = 'es' if int(accumulation) > 1 else ''
        rows.append(('accumulation', f'{accumulation} micro-batch{plural} per update, so '
                                     f'{int(batch) * int(accumulation)} examples per update'))
    return rows


def _length_rows(asked, done: TrainResult, batch, num_train: int) -> List[Tuple[str, str]]:
    """The updates (run, else the most asked), how long and fast it trained, early stopping."""
    rows = []
    length_asked = {'train_steps', 'train_epochs', 'global_batch_size',
                    'accumulation_steps'} <= set(asked)
    if length_asked and done.steps_run is not None:  # what the trainer did
        rows.append(('steps', f'{done.steps_run} updates'))
    elif length_asked:  # what was asked: with epochs, the most the trainer could take
        steps = plan.resolve_train_steps(asked, num_train)
        epochs = float(asked['train_epochs'] or 0)
        length = f'{epochs:g} epochs' if epochs > 0 else 'epochs from the data'
        rows.append(('steps', (f'up to {steps} updates ({length} over about '
                               f'{num_train} train examples)') if int(asked['train_steps']) <= 0
                     else f'{steps} updates'))
    for label, text in (('training length', summary_text.training_text),
                        ('train step', summary_text.step_text),
                        ('speed', summary_text.speed_text)):
        if text(done):
            rows.append((label, text(done)))
    if asked.get('validation_percent') is not None and not int(asked.get('train_steps') or 0):
        budget = float(asked.get('time_budget_minutes') or 0)
        rows.append(('early stopping', f'patience {asked.get("patience")} epochs on '
                     f'{asked["validation_percent"]}% of the train split held out'
                     + (f'; time budget {_number(asked["time_budget_minutes"])} min'
                        if budget else '')))
    return rows


def _asked_rows(asked) -> List[Tuple[str, str]]:
    """The learning rate, the optimizer and the model, as asked."""
    rows = []
    if asked.get('learning_rate') is not None:
        warmup = int(asked.get('warmup_steps') or 0)
        rows.append(('learning rate', f'{_number(asked["learning_rate"])}, cosine decay to 0'
                                      + (f' after {warmup} warm-up steps' if warmup else '')))
    return rows + [(label, str(asked[key])) for key, label in (
        ('optimizer', 'optimizer'), ('model_builder', 'model')) if asked.get(key)]


def _image_rows(asked, done: TrainResult, spec) -> List[Tuple[str, str]]:
    """The augmentation of train images, with the flips used (else asked: on, or 1 as the
    property was recorded before flip auto)."""
    if spec.kind == 'tabular' or not asked.get(property_names.AUGMENT):
        return []
    flip = done.flip if done.flip is not None else asked.get(property_names.FLIP) in (1, 'on')
    reason = done.flip_reason
    return [('augmentation', f'{asked[property_names.AUGMENT]}{" + flip" if flip else ""} '
                             '(train images only)'
             + (f'; flip {reason}' if reason and reason != 'asked' else ''))]


def _warm_start_rows(asked, done: TrainResult, trained: bool) -> List[Tuple[str, str]]:
    """The served version warm-started from, else the warm start asked and why it did not."""
    if done.warm_start_version is not None and done.warm_start_version >= 0:
        return [('warm start', f'from served version {done.warm_start_version}')]
    # warm_start_from: the serving folder, as executions before TrainParams recorded it.
    source = asked.get('warm_start_from') or asked.get('serving_dir')
    if not (int(asked.get('warm_start') or 0) or asked.get('warm_start_from')):
        return []
    return [('warm start', f'asked, from {source}' + (
        '; nothing was served, so training started from scratch' if trained else ''))]
