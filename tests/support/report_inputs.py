"""Small report inputs written as the stock components write them: ML Metadata artifacts,
TFDV statistics (FeatureStats.pb per split) and anomalies (SchemaDiff.pb per split)."""
import json
import os

from tensorflow_metadata.proto.v0 import anomalies_pb2, statistics_pb2

from helpers import mlmd_artifact


def artifact(uri, splits=('train', 'eval'), artifact_id=1, **custom):
    """An ML Metadata Artifact at uri with split_names and custom properties (mlmd_artifact)."""
    found = mlmd_artifact(**custom)
    found.uri, found.id = str(uri), artifact_id
    found.properties['split_names'].string_value = json.dumps(list(splits))
    return found


def write_statistics(uri, counts_by_split, image_sizes=True):
    """Statistics with label counts per split, and image heights or a table's column."""
    for split, counts in counts_by_split.items():
        stats = statistics_pb2.DatasetFeatureStatisticsList()
        dataset = stats.datasets.add(num_examples=sum(counts.values()))
        label = dataset.features.add()
        label.path.step.append('label_name')
        for name, count in counts.items():
            label.string_stats.rank_histogram.buckets.add(label=name, sample_count=count)
        if image_sizes:
            height = dataset.features.add()
            height.path.step.append('image/height')
            height.num_stats.min, height.num_stats.max = 8, 12
        else:  # a table: numeric columns, no image features
            column = dataset.features.add()
            column.path.step.append('alcohol')
            column.num_stats.min, column.num_stats.max = 11.0, 14.8
        os.makedirs(os.path.join(uri, f'Split-{split}'))
        with open(os.path.join(uri, f'Split-{split}', 'FeatureStats.pb'), 'wb') as handle:
            handle.write(stats.SerializeToString())
    return artifact(uri, splits=tuple(counts_by_split))


def write_anomalies(uri, anomalous_split):
    """Anomalies of both splits, one label anomaly in anomalous_split."""
    for split in ('train', 'eval'):
        found = anomalies_pb2.Anomalies()
        if split == anomalous_split:
            found.anomaly_info['label_name'].short_description = 'Unexpected string values'
            found.anomaly_info['label_name'].description = 'Examples contain value "x".'
        os.makedirs(os.path.join(uri, f'Split-{split}'))
        with open(os.path.join(uri, f'Split-{split}', 'SchemaDiff.pb'), 'wb') as handle:
            handle.write(found.SerializeToString())
    return artifact(uri)


def write_span_records(uri, counts_by_split, compress=True):
    """A span folder as ingestion writes it: Split-<split>/ of TFRecords (gzip'd by default),
    one Example per counted image with its label and label_name (core/features)."""
    import tensorflow as tf
    from core import features
    for split, counts in counts_by_split.items():
        os.makedirs(os.path.join(uri, f'Split-{split}'))
        path = os.path.join(uri, f'Split-{split}', 'data_tfrecord-00000-of-00001'
                            + (features.FILE_SUFFIX if compress else ''))
        options = tf.io.TFRecordOptions(compression_type='GZIP' if compress else '')
        with tf.io.TFRecordWriter(path, options) as writer:
            for index, (name, count) in enumerate(sorted(counts.items())):
                for _ in range(count):
                    writer.write(features.make_example(
                        b'png', index, name, 8, 8, f'{name}/x.png').SerializeToString())
    return str(uri)
