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
from typing import Dict, List, Optional, Tuple

from ml_metadata.proto import metadata_store_pb2
import tensorflow_data_validation as tfdv
import tensorflow_model_analysis as tfma
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util
import tensorflow as tf

from core import features, inputs, window as window_lib
from core import properties as property_names
from components.evaluate import checks
from components.gate import anomalies as anomalies_lib
from pipeline.runs import summary_text
from pipeline.runs.summary import custom_property
from training import plan

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


def training_settings(properties: Dict[str, object], model: Optional[Artifact],
                      examples: Optional[Artifact]) -> List[Tuple[str, str]]:
    """(setting, value) rows saying how the model was trained.

    `properties` are the trainer execution's (what was asked); the Model's custom properties
    are what the trainer recorded it did (policy, replicas, the input shape it used). A trainer
    that failed has no Model: its rows then come from the properties alone.
    """
    recorded = (lambda key: custom_property(model, key)) if model is not None else (
        lambda key: None)
    spec = inputs.InputSpec.from_json((custom_property(examples, property_names.INPUT_SPEC)
                                       if examples is not None else None) or '')
    rows = []
    if spec.kind == 'tabular':
        rows.append(('input', f'table: {len(spec.numeric)} numeric, '
                              f'{len(spec.categorical)} categorical columns'))
    else:
        shape = [recorded(new) if recorded(new) is not None else properties.get(old)
                 for new, old in (('input_height', 'image_height'), ('input_width', 'image_width'),
                                  ('input_channels', 'channels'))]
        if all(v is not None for v in shape):
            rows.append(('input size', '\u00d7'.join(str(int(v)) for v in shape)
                         + ' (height \u00d7 width \u00d7 channels)'))
    if recorded('input_statement'):
        rows.append(('input shape chosen', str(recorded('input_statement'))))
    # 'replicas' is the property's other stored name; stored Models carry either.
    replicas = recorded('num_replicas') if recorded('num_replicas') is not None else \
        recorded('replicas')
    rows.append(('replicas', 'not recorded' if replicas is None else str(int(replicas))))
    if recorded('num_workers') is not None:
        rows.append(('training processes', str(int(recorded('num_workers')))))
    policy, asked = recorded('mixed_precision'), properties.get('mixed_precision')
    precision = summary_text.precision_text(model) if model is not None else None
    if precision:  # with the reason when auto chose it
        rows.append(('precision policy', precision))
    elif policy is not None:
        rows.append(('precision policy', policy + (f' (asked: {asked})' if asked and asked != policy
                                                    else '')))
    elif asked:
        rows.append(('precision policy', f'{asked} (asked; no policy recorded)'))
    # What the trainer used (recorded), else what was asked (0: from the data, not yet known).
    batch = recorded('global_batch_size') or properties.get('global_batch_size') or None
    if batch is not None:
        batch = int(batch)
        per_replica = f'; {int(batch) // int(replicas)} per replica' if replicas else ''
        rows.append(('batch', f'{batch} per micro-batch (all replicas together{per_replica})'))
    accumulation = properties.get('accumulation_steps')
    if accumulation is not None and batch is not None:
        plural = 'es' if int(accumulation) > 1 else ''
        rows.append(('accumulation', f'{accumulation} micro-batch{plural} per update, so '
                                     f'{int(batch) * int(accumulation)} examples per update'))
    if {'train_steps', 'train_epochs', 'global_batch_size', 'accumulation_steps'} <= set(
            properties):
        num_train = (custom_property(examples, property_names.NUM_WRITTEN_TRAIN)
                     if examples is not None else None) or 0
        by_epochs = int(properties['train_steps']) <= 0
        epochs = float(properties['train_epochs'] or 0)
        if recorded('steps_run') is not None:  # what the trainer did
            rows.append(('steps', f'{int(recorded("steps_run"))} updates'))
        else:  # what was asked: with epochs, the most the trainer could take
            steps = plan.resolve_train_steps(properties, num_train)
            length = f'{epochs:g} epochs' if epochs > 0 else 'epochs from the data'
            rows.append(('steps', (f'up to {steps} updates ({length} over about '
                                   f'{num_train} train examples)') if by_epochs
                         else f'{steps} updates'))
    if model is not None and summary_text.training_text(model):
        rows.append(('training length', summary_text.training_text(model)))
    for label, text in (('train step', summary_text.step_text),
                        ('speed', summary_text.speed_text)):
        if model is not None and text(model):
            rows.append((label, text(model)))
    if properties.get('validation_percent') is not None and not int(properties['train_steps']):
        rows.append(('early stopping', f'patience {properties.get("patience")} epochs on '
                     f'{properties["validation_percent"]}% of the train split held out'
                     + (f'; time budget {_number(properties["time_budget_minutes"])} min'
                        if float(properties.get('time_budget_minutes') or 0) else '')))
    if properties.get('learning_rate') is not None:
        warmup = int(properties.get('warmup_steps') or 0)
        rows.append(('learning rate', f'{_number(properties["learning_rate"])}, cosine decay to 0'
                                      + (f' after {warmup} warm-up steps' if warmup else '')))
    for key, label in (('optimizer', 'optimizer'), ('model_builder', 'model')):
        if properties.get(key):
            rows.append((label, str(properties[key])))
    if spec.kind != 'tabular' and properties.get(property_names.AUGMENT):
        # What the trainer did (recorded on the Model), else what was asked: on, or 1 as the
        # property was recorded before flip auto.
        used = recorded(property_names.FLIP)
        flip = used if used is not None else properties.get(property_names.FLIP) in (1, 'on')
        reason = recorded('flip_reason')
        rows.append(('augmentation', f'{properties["augment"]}{" + flip" if flip else ""} '
                                     '(train images only)' + (
                                         f'; flip {reason}' if reason and reason != 'asked'
                                         else '')))
    warm = recorded('warm_start_version')
    if warm is not None and warm >= 0:
        rows.append(('warm start', f'from served version {int(warm)}'))
    elif int(properties.get('warm_start') or 0) or properties.get('warm_start_from'):
        # warm_start_from: the serving folder, as executions before TrainParams recorded it.
        source = properties.get('warm_start_from') or properties.get('serving_dir')
        rows.append(('warm start', f'asked, from {source}' + (
            '; nothing was served, so training started from scratch' if model is not None
            else '')))
    return rows
