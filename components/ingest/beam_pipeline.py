"""The Beam graph of image ingestion: list files, decode and validate, split, write shards.

No TFX imports: the executor builds a pipeline with TFX's Beam options and calls
`build_ingest`, and tests can run the same graph on a plain `beam.Pipeline`.

Every matched file ends in exactly one place: a split's TFRecords or the rejected list, and
each is counted (Beam metrics in the `ingest` namespace), so the counts reconcile:
`found == written_train + written_eval + rejected`.
"""
import dataclasses
import json
import os
from typing import Dict, Iterator

import apache_beam as beam
from apache_beam.metrics import Metrics
import tensorflow as tf

from components.common import features
from components.ingest import images

METRICS_NAMESPACE = 'ingest'
REJECTED_TAG = 'rejected'
REJECTED_DIR = 'Rejected'


@dataclasses.dataclass(frozen=True)
class IngestOptions:
    """What the Beam graph needs; validated here so a bad value fails before Beam starts."""
    root: str                 # folder holding one sub-folder per class
    classes: tuple            # sorted class names; the label is the index
    train_percent: int = 80
    num_shards: int = 2

    def __post_init__(self):
        if not 0 < self.train_percent < 100:
            raise ValueError(f'train_percent must be in 1..99, got {self.train_percent}')
        if self.num_shards < 1:
            raise ValueError(f'num_shards must be >= 1, got {self.num_shards}')
        if not self.classes:
            raise ValueError('classes must not be empty')


def list_class_folder(class_name: str, root: str) -> Iterator[str]:
    """Yields every non-hidden entry of one class folder, sorted.

    Everything listed is counted downstream. A plain directory listing is used rather than a glob
    match because file-system matchers silently drop entries they cannot stat (a dangling
    symlink, for example); here such an entry is listed, fails to read, and is rejected with
    the reason, so nothing disappears without a trace. tf.io.gfile also lists gs:// and hdfs://.
    """
    folder = os.path.join(root, class_name)
    for name in sorted(tf.io.gfile.listdir(folder)):
        name = name.rstrip('/')
        if not name.startswith('.'):  # .DS_Store and editor droppings are not data
            yield os.path.join(folder, name)


class _ToExample(beam.DoFn):
    """Reads one listed file; emits its serialized Example to its split, or a rejection."""

    def __init__(self, options: IngestOptions):
        self._options = options
        self._index: Dict[str, int] = {}

    def setup(self):
        self._index = images.class_index(list(self._options.classes))
        self._counters = {name: Metrics.counter(METRICS_NAMESPACE, name) for name in
                          ('found', 'rejected') + tuple(f'written_{s}' for s in features.SPLITS)}

    def process(self, path: str) -> Iterator:
        relative = images.relative_path(path, self._options.root)
        label_name = relative.split('/', 1)[0]
        self._counters['found'].inc()
        try:
            # Reading is inside the try: an unreadable file is a rejection, not a crash.
            if tf.io.gfile.isdir(path):
                raise images.BadImage('is a folder; images must sit directly in a class folder')
            with tf.io.gfile.GFile(path, 'rb') as handle:
                data = handle.read()
            info = images.inspect_image(data)
        except (images.BadImage, OSError, tf.errors.OpError) as error:
            self._counters['rejected'].inc()
            yield beam.pvalue.TaggedOutput(
                REJECTED_TAG, json.dumps({'path': path, 'reason': str(error)}))
            return
        split = images.split_of(relative, self._options.train_percent)
        example = features.make_example(
            encoded=data, label=self._index[label_name], label_name=label_name,
            height=info.height, width=info.width, source_path=relative)
        self._counters[f'written_{split}'].inc()
        yield beam.pvalue.TaggedOutput(split, example.SerializeToString())


def build_ingest(pipeline: beam.Pipeline, options: IngestOptions, output_dir: str) -> None:
    """Adds the ingestion graph to `pipeline`, writing `Split-<name>/` folders under output_dir."""
    outputs = (
        pipeline
        | 'ClassFolders' >> beam.Create(list(options.classes))
        | 'ListFiles' >> beam.FlatMap(list_class_folder, options.root)
        # Spreads the files over workers; without it one worker would read a whole class.
        | 'Redistribute' >> beam.Reshuffle()
        | 'ToExample' >> beam.ParDo(_ToExample(options)).with_outputs(
            REJECTED_TAG, *features.SPLITS))
    for split in features.SPLITS:
        _ = (outputs[split]
             | f'Write{split.title()}' >> beam.io.WriteToTFRecord(
                 os.path.join(output_dir, f'Split-{split}', features.FILE_PREFIX),
                 file_name_suffix=features.FILE_SUFFIX, num_shards=options.num_shards))
    _ = (outputs[REJECTED_TAG]
         | 'WriteRejected' >> beam.io.WriteToText(
             os.path.join(output_dir, REJECTED_DIR, 'rejected'), file_name_suffix='.jsonl',
             num_shards=1, shard_name_template=''))


def read_counts(result: beam.runners.runner.PipelineResult) -> Dict[str, int]:
    """Returns the ingest counters of a finished pipeline run, with every key present."""
    counts = {name: 0 for name in ('found', 'rejected')}
    counts.update({f'written_{s}': 0 for s in features.SPLITS})
    query = result.metrics().query(
        beam.metrics.MetricsFilter().with_namespace(METRICS_NAMESPACE))
    for counter in query['counters']:
        counts[counter.key.metric.name] += counter.committed
    return counts
