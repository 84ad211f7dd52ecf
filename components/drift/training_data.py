"""The drift baseline: statistics of the data the served model was trained on. No TFX imports.

Where the data is: every pushed version says what it was trained on in
`serving/<v>/assets.extra/training_data.json` = {"window": [{"span", "uri", "fingerprint", ...}]}
(written by the trainer's export), so no ML Metadata query and no resolver is needed, and the
answer travels with the model.

How the statistics are made: once per window, with TFDV in-process over the window's train
files, then kept in `<pipeline_root>/_drift/<key>/train_stats.pb`, keyed by the window (spans,
fingerprints, folders). Per-span statistics cannot simply be merged instead: TFDV offers no merge
of finished statistics (histograms and quantiles are not additive), and the statistics of an
older span were written by an earlier run's StatisticsGen at a path no window entry names. A
window is computed once, then every later run that compares with the same served version reads
the kept file; the file is written under a temporary name and renamed, so an interrupted run
leaves no half-written baseline behind.
"""
import hashlib
import json
import os
import tempfile
import uuid
from typing import List, Optional

import tensorflow as tf
import tensorflow_data_validation as tfdv
from apache_beam.options.pipeline_options import PipelineOptions
from tensorflow_metadata.proto.v0 import statistics_pb2

from core import storage

TRAINING_DATA_FILE = os.path.join('assets.extra', 'training_data.json')
CACHE_FOLDER = '_drift'
STATS_FILE = 'train_stats.pb'


class MissingData(RuntimeError):
    """The served model's training data can no longer be read; the message says which."""


def read_window(served_path: str) -> Optional[List[dict]]:
    """The window (oldest span first) the model at served_path was trained on, or None when it
    does not record one (a model from another tool, or copied in by hand)."""
    text = storage.read_text(os.path.join(served_path, TRAINING_DATA_FILE))
    if text is None:
        return None
    window = json.loads(text).get('window')
    return list(window) if window else None


def cache_key(window: List[dict]) -> str:
    """Names a window by what is in it: its spans, their fingerprints and their folders."""
    identity = [(e.get('span'), e.get('fingerprint'), e.get('uri')) for e in window]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]


def train_files(window: List[dict]) -> List[str]:
    """The train files of every span of the window; MissingData when a span has none."""
    files = []
    for entry in window:
        found = tf.io.gfile.glob(os.path.join(entry['uri'], 'Split-train', '*'))
        if not found:
            raise MissingData(f'the train data of span {entry.get("span")} is no longer at '
                              f'{entry["uri"]}')
        files.extend(found)
    return files


def _compute(files: List[str]) -> statistics_pb2.DatasetFeatureStatisticsList:
    # Beam in this process: a window of a few spans is small, and the result is kept.
    options = PipelineOptions(['--direct_running_mode=in_memory', '--direct_num_workers=1'])
    with tempfile.TemporaryDirectory() as scratch:
        return tfdv.generate_statistics_from_tfrecord(
            data_location=files, output_path=os.path.join(scratch, 'stats.tfrecord'),
            pipeline_options=options)


def statistics(window: List[dict], pipeline_root: str
               ) -> statistics_pb2.DatasetFeatureStatisticsList:
    """The window's train statistics: the kept ones, else computed now and kept."""
    folder = os.path.join(pipeline_root, CACHE_FOLDER, cache_key(window))
    path = os.path.join(folder, STATS_FILE)
    kept = storage.read_if_exists(path)
    if kept is not None:
        return statistics_pb2.DatasetFeatureStatisticsList.FromString(kept)
    stats = _compute(train_files(window))
    tf.io.gfile.makedirs(folder)
    temporary = os.path.join(folder, f'.tmp-{uuid.uuid4().hex}')
    with tf.io.gfile.GFile(temporary, 'wb') as handle:
        handle.write(stats.SerializeToString())
    tf.io.gfile.rename(temporary, path, overwrite=True)  # two runs computing it agree
    return stats
