"""The span index: which spans were ingested, with which parameters, and where their data is.

Each run of ImageExampleGen ingests only what is new. For every span of its window it looks up
`<pipeline_root>/_spans/ImageExampleGen/<key>.json` (core/stable_paths.py), the key
hashing the span's identity: the input base, the span number, the span's input fingerprint (file
names' count, sizes and modification times, as TFX's FileBasedDriver computes it) and the
execution properties that change what ingestion writes (`OUTPUT_PARAMETERS`). A hit names a
folder holding that span's Split-train/ and Split-eval/ and the properties its ingestion
recorded, so the span is referenced (or, for the newest span, its shards linked) instead of
converted again. A changed file, a new parameter or another input base is another key: a miss.

Design points:
- One file per span entry, written to a unique temporary name and renamed into place, so two
  concurrent runs never clobber each other: both write complete files for the same key (either
  is correct) and a reader sees one whole file or none.
- Entries are never trusted blindly: an entry lists its data files, and one whose files are gone
  (deleted by retention, or by hand) is ignored, so the span is ingested again (self-healing).
- Paths come from the `pipeline_root` execution property, never from artifact URIs, whose
  layout is the orchestrator's.
No TFX imports.
"""
import json
import os
import shutil
import uuid
from typing import Any, Dict, List, Optional

from absl import logging
import tensorflow as tf

from core import stable_paths, storage, window
from components.ingest.graph import params

NODE = 'ImageExampleGen'
# What changes the records ingestion writes for the same files: every setting but those marked
# same_records (graph/params.py); max_rejected_fraction only decides whether a run fails, window
# says how many spans, pipeline_root where.
OUTPUT_PARAMETERS = params.record_parameters()
_DATA_PREFIXES = ('Split-', 'Quarantine')  # what belongs to one span in its folder


def _normal(value: Any) -> Any:
    # Under Kubeflow integers can arrive as JSON numbers (2.0): the same parameter, one key.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def parameters(exec_properties: Dict[str, Any]) -> Dict[str, Any]:
    """The execution properties that shape the records, normalised."""
    found = {name: _normal(exec_properties.get(name)) for name in OUTPUT_PARAMETERS}
    # The cap shapes the records only when the share comes from the data (train_percent 0);
    # left out otherwise, so the keys stored before it existed still match.
    if found.get('train_percent') != 0:
        found.pop('max_eval_records', None)
    # Only when set, so the keys training runs stored (and their cache hits) still match.
    if exec_properties.get('unlabelled'):
        found['unlabelled'] = 1
    return found


def identity(input_base: str, span: int, fingerprint: str,
             exec_properties: Dict[str, Any]) -> Dict[str, Any]:
    return {'input_base': input_base.rstrip('/'), 'span': int(span), 'fingerprint': fingerprint,
            'parameters': parameters(exec_properties)}


def data_files(folder: str) -> List[str]:
    """The files of one span in its folder (relative paths): its splits and quarantine, not
    the `Span-<N>/` sub-folders of older spans."""
    found = []
    for name in sorted(tf.io.gfile.listdir(folder)) if tf.io.gfile.isdir(folder) else []:
        name = name.rstrip('/')
        if not name.startswith(_DATA_PREFIXES):
            continue
        for root, _, files in tf.io.gfile.walk(os.path.join(folder, name)):
            found += [os.path.relpath(os.path.join(root, f), folder) for f in sorted(files)]
    return found


def lookup(pipeline_root: str, key: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The index record of a span ingested with this identity and whose data still exists:
    {'entry': SpanEntry, 'properties': {...}, 'files': [...]}; else None."""
    if not key['fingerprint']:
        return None  # unknown input: never reused
    text = storage.read_text(stable_paths.span_index_path(pipeline_root, NODE, key))
    if text is None:
        return None
    record = json.loads(text)
    if record.get('identity') != key:  # a digest collision: treat as unknown
        return None
    entry = window.SpanEntry.from_dict(record['entry'])
    missing = [f for f in record['files'] if not tf.io.gfile.exists(os.path.join(entry.uri, f))]
    if missing or not record['files']:
        logging.warning('Span %d was ingested into %s, but its data is gone (%s): ingesting it '
                        'again', entry.span, entry.uri, missing[0] if missing else 'no files')
        return None
    return dict(record, entry=entry)


def record(pipeline_root: str, key: Dict[str, Any], entry: window.SpanEntry,
           properties: Dict[str, Any]) -> str:
    """Writes (or replaces) the index record of a span ingested into entry.uri; atomically."""
    path = stable_paths.span_index_path(pipeline_root, NODE, key)
    tf.io.gfile.makedirs(os.path.dirname(path))
    text = json.dumps({'identity': key, 'entry': entry.to_dict(), 'properties': properties,
                       'files': data_files(entry.uri)}, indent=2, sort_keys=True)
    temp = f'{path}.{uuid.uuid4().hex}.tmp'  # unique: concurrent writers never share one
    with tf.io.gfile.GFile(temp, 'w') as handle:
        handle.write(text)
    tf.io.gfile.rename(temp, path, overwrite=True)
    return path


def _is_local(path: str) -> bool:
    return '://' not in path


def link_files(source: str, destination: str, files: List[str]) -> str:
    """Puts a span's ingested files into another folder: hard links on a local disk (no extra
    space; deleting either folder leaves the other whole), else copies (object stores copy on
    the server side). Returns 'linked' or 'copied'."""
    how = 'linked'
    for name in files:
        target = os.path.join(destination, name)
        tf.io.gfile.makedirs(os.path.dirname(target))
        if _is_local(source) and _is_local(destination):
            try:
                if os.path.exists(target):
                    os.remove(target)
                os.link(os.path.join(source, name), target)
                continue
            except OSError:  # another file system, or links not allowed
                shutil.copyfile(os.path.join(source, name), target)
        else:
            storage.copy_file(os.path.join(source, name), target)
        how = 'copied'
    return how
