"""Streaming, sharded TFRecord writing for the ingestion graph: records never wait in memory.

Why not `beam.io.WriteToTFRecord(num_shards=N)`: a fixed shard count makes it group every
*record* by shard, and the local DirectRunner holds a grouped collection in memory, so memory
would grow with the data (every image's bytes at once). Here each record is appended to a
per-bundle temporary file as soon as it is made, and only the temporary file *names* are
grouped; one task per final shard then streams its parts into `data_tfrecord-SSSSS-of-NNNNN`.
The records are written by the converting DoFn itself (`PartWriters`), not emitted: passing
each record to another transform costs the Python runner more than building it does.
The extra copy costs a sequential read and re-compression, cheap next to decoding images.

A record's shard is a hash of its split key (rules.shard_of, formats/rules.py), so which records
land in which shard does not depend on bundling or on the number of workers.
"""
import os
import uuid
from typing import Dict, Iterable, Iterator, Tuple

import apache_beam as beam
from apache_beam.transforms import window
import tensorflow as tf

from core import features


def shard_path(output_dir: str, split: str, shard: int, num_shards: int, compress: bool) -> str:
    suffix = features.FILE_SUFFIX if compress else ''
    return os.path.join(output_dir, f'Split-{split}',
                        f'{features.FILE_PREFIX}-{shard:05d}-of-{num_shards:05d}{suffix}')


class PartWriters:
    """One uncompressed part file per (split, shard) for one bundle of a converting DoFn.

    The DoFn writes each record here as soon as it is made and, when its bundle finishes,
    emits `finished()`: the ((split, shard), part path) pairs that the shards are built from.
    """

    def __init__(self, temp_dir: str):
        self._temp_dir = temp_dir
        self._writers: Dict[Tuple[str, int], tuple] = {}

    def write(self, split: str, shard: int, record: bytes) -> None:
        if (split, shard) not in self._writers:
            tf.io.gfile.makedirs(self._temp_dir)
            # A unique name per attempt: a retried bundle never appends to a failed one's file.
            path = os.path.join(self._temp_dir, f'{split}-{shard:05d}-{uuid.uuid4().hex}')
            self._writers[(split, shard)] = (tf.io.TFRecordWriter(path), path)
        self._writers[(split, shard)][0].write(record)

    def finished(self) -> Iterator:
        """Closes every part file and yields its (key, path) as a windowed value."""
        for key, (writer, path) in sorted(self._writers.items()):
            writer.close()
            yield window.GlobalWindows.windowed_value((key, path))
        self._writers = {}


class _AssembleShard(beam.DoFn):
    """Streams the parts of one (split, shard) into its final, optionally GZIP'd, file."""

    def __init__(self, output_dir: str, num_shards: Dict[str, int], compress: bool):
        self._output_dir = output_dir
        self._num_shards = num_shards
        self._compress = compress

    def process(self, element: Tuple[Tuple[str, int], Iterable[str]]) -> Iterator[str]:
        (split, shard), parts = element
        final = shard_path(self._output_dir, split, shard, self._num_shards[split],
                           self._compress)
        partial = f'{final}.incomplete'  # renamed when whole: a reader never sees half a shard
        tf.io.gfile.makedirs(os.path.dirname(final))
        options = tf.io.TFRecordOptions(compression_type='GZIP' if self._compress else '')
        with tf.io.TFRecordWriter(partial, options) as out:
            for part in sorted(parts):
                # A plain iterator: tf.data would log an end-of-sequence warning per part.
                for record in tf.compat.v1.io.tf_record_iterator(part):
                    out.write(record)
        tf.io.gfile.rename(partial, final, overwrite=True)
        for part in parts:
            tf.io.gfile.remove(part)
        yield final


def write_shards(parts: beam.PCollection, output_dir: str, num_shards: Dict[str, int],
                 compress: bool) -> beam.PCollection:
    """Assembles ((split, shard), part path) elements into shards; returns the shard paths."""
    return (parts
            | 'GroupPartsByShard' >> beam.GroupByKey()
            | 'AssembleShards' >> beam.ParDo(_AssembleShard(output_dir, num_shards, compress)))


def fill_empty_shards(output_dir: str, num_shards: Dict[str, int], compress: bool) -> None:
    """Writes an empty file for every shard that got no record, so a split always has exactly
    its N shards (and an empty split still exists for readers, which then see 0 examples)."""
    options = tf.io.TFRecordOptions(compression_type='GZIP' if compress else '')
    for split, count in num_shards.items():
        tf.io.gfile.makedirs(os.path.join(output_dir, f'Split-{split}'))
        for shard in range(count):
            path = shard_path(output_dir, split, shard, count, compress)
            if not tf.io.gfile.exists(path):
                tf.io.TFRecordWriter(path, options).close()
