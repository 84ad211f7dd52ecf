"""The schema kept for a pipeline root: inferred once, then reused. No TFX imports.

A schema inferred from each run's own span would compare the span with itself, and the data
gate could never notice that a span differs from the data the served model learnt from (a new
class, a column gone, a type changed). So the schema is inferred on the first run of a pipeline
root and kept in `<pipeline_root>/_schema/schema.pbtxt`; later runs judge their span against
it. It is written under a temporary name and renamed, and a schema already kept is never
replaced (two first runs racing keep the first one written), so every run reads a whole file.
To accept a change, delete the file (the next run infers it again from its span) or give a
curated schema with --schema FILE, which always wins.
"""
import os
import uuid
from typing import Optional

import tensorflow as tf
from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

from core import storage

FOLDER = '_schema'
FILE = 'schema.pbtxt'


def path(pipeline_root: str) -> str:
    return os.path.join(pipeline_root, FOLDER, FILE)


def read(pipeline_root: str) -> Optional[schema_pb2.Schema]:
    """The kept schema, or None before the first run inferred one."""
    text = storage.read_text(path(pipeline_root))
    return None if text is None else text_format.Parse(text, schema_pb2.Schema())


def keep(pipeline_root: str, schema: schema_pb2.Schema) -> schema_pb2.Schema:
    """Keeps `schema` unless one is kept already; returns the schema kept."""
    kept = path(pipeline_root)
    tf.io.gfile.makedirs(os.path.dirname(kept))
    temporary = os.path.join(os.path.dirname(kept), f'.tmp-{uuid.uuid4().hex}')
    with tf.io.gfile.GFile(temporary, 'w') as handle:
        handle.write(text_format.MessageToString(schema))
    try:
        tf.io.gfile.rename(temporary, kept, overwrite=False)
    except tf.errors.OpError:  # another run kept one first: that one holds
        tf.io.gfile.remove(temporary)
    return read(pipeline_root)


def hint(pipeline_root: str, schema_path: Optional[str]) -> str:
    """What to do when the data no longer matches the schema, for the data gate's message."""
    if schema_path:
        return (f'the schema is the one given ({schema_path}): correct the data, or edit that '
                'file or give another with --schema FILE')
    return (f'the schema was inferred on the first run and is kept in {path(pipeline_root)}: '
            'correct the data, or, if the change is intended, delete that file (the next run '
            'infers it again from its span) or give a curated schema with --schema FILE')
