"""Finds the model currently served: the newest version in a TF Serving model folder.

No TFX imports: plain file logic on tf.io.gfile, so the push destination may be a local folder or
a bucket (gs://, s3://) alike. TF Serving loads the highest integer version under its model base
path, and TFX's Pusher writes versions as integer folder names, so "newest" means the largest
integer whose folder holds a complete SavedModel.
"""
import os
from typing import Optional

import tensorflow as tf

_SAVED_MODEL_FILES = ('saved_model.pb', 'saved_model.pbtxt')


def _is_saved_model(folder: str) -> bool:
    # A version folder without the graph file is a push still being copied (or a broken one):
    # TF Serving would not load it either, so it is not "served".
    return any(tf.io.gfile.exists(os.path.join(folder, name)) for name in _SAVED_MODEL_FILES)


def newest_version(serving_dir: str) -> Optional[int]:
    """The largest integer version under serving_dir that holds a SavedModel, or None."""
    if not tf.io.gfile.isdir(serving_dir):
        return None
    versions = []
    for entry in tf.io.gfile.listdir(serving_dir):
        name = entry.rstrip('/')  # gfile lists sub-folders of buckets with a trailing slash
        if name.isdigit() and _is_saved_model(os.path.join(serving_dir, name)):
            versions.append(int(name))
    return max(versions) if versions else None
