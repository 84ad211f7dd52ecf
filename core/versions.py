"""Integer model versions in a TF Serving base folder: atomic, idempotent, labelled, with
retention.

No TFX imports, so it can be tested alone. The layout is what TF Serving's file-system source
watches: `<base>/<version>/saved_model.pb`, where only children named by an integer count as
versions. Which of them clients get is `<base>/models.config`, TF Serving's model config with
`stable` and `canary` labels (core/serving_labels.py); a folder without it serves
the highest version (TF Serving's default "latest" policy).

- **Atomic:** on a local disk a model is copied into a hidden `.tmp-push-*` folder in the same
  base folder, then renamed to its version number. A rename within one file system is atomic,
  so a version folder either does not exist or is complete; TF Serving ignores the hidden
  folder, and the next push removes any left by a killed one. On a bucket (s3://, gs://) a
  rename is a copy of every object, so the files go straight to the version folder with
  saved_model.pb last, and a version without it does not count (docs/storage.md).
- **Monotonic:** the next version is the highest existing one plus one (on a bucket, a killed
  push's number is taken again once its partial folder is removed).
- **Idempotent:** if the newest version already holds a byte-identical model, no new version is
  made. Only the newest is compared: an older copy does not count, because pushing again is
  then what makes that model served.
- **Retention:** the newest `keep` versions stay; the stable and canary ones always.
"""
import dataclasses
import hashlib
import os
import uuid
from typing import List, Optional, Tuple

import tensorflow as tf

from core import serving_labels, storage, store_watch

TMP_PREFIX = '.tmp-push-'
# Custom property on the PushedModel: 1 when the served version already held the model.
REUSED_PROPERTY = 'pushed_version_reused'
# Custom properties on a PushedModel that was not pushed: why, and (1) whether the reason is a
# served model for other classes or another input, which no push into this folder can fix.
NOT_PUSHED_REASON_PROPERTY = 'not_pushed_reason'
INCOMPATIBLE_PROPERTY = 'served_model_incompatible'
_SAVED_MODEL = 'saved_model.pb'


@dataclasses.dataclass(frozen=True)
class PushResult:
    version: int
    path: str
    created: bool                 # False: the served version already held this model
    removed: Tuple[int, ...] = ()  # versions deleted by retention
    labels: Optional[serving_labels.Labels] = None   # after the push (models.config)


def _names(base_dir: str) -> List[str]:
    """What is directly under base_dir ([] when it does not exist). On an object store an
    outage raises (storage.children) instead of reading as an empty folder."""
    if storage.is_object_store(base_dir):
        return storage.children(base_dir)
    if not tf.io.gfile.isdir(base_dir):
        return []
    return [n.rstrip('/') for n in tf.io.gfile.listdir(base_dir)]




def _isdir(path: str) -> bool:
    return storage.exists(path) if storage.is_object_store(path) else tf.io.gfile.isdir(path)


def list_versions(base_dir: str) -> List[int]:
    """The integer version folders under base_dir, oldest first (what TF Serving would see)."""
    return sorted(int(n) for n in _names(base_dir)
                  if n.isdigit() and _isdir(os.path.join(base_dir, n)))


def complete_versions(base_dir: str) -> List[int]:
    """The versions holding a saved_model.pb, oldest first. A version folder without the graph
    file is a broken or foreign copy (or a push still copying to a bucket) that TF Serving
    would not load either, so it does not count."""
    return [v for v in list_versions(base_dir)
            if storage.exists(os.path.join(base_dir, str(v), _SAVED_MODEL))]


def served_version(base_dir: str) -> Optional[int]:
    """The version clients get by default, or None: the one labelled stable in models.config
    (core/serving_labels.py), else the newest complete one (TF Serving's default
    "latest" policy, for a folder without the file)."""
    complete = complete_versions(base_dir)
    labels = serving_labels.read(base_dir) if complete else None
    if labels is not None and labels.stable in complete:
        return labels.stable
    return complete[-1] if complete else None


def _files(model_dir: str) -> List[str]:
    """Paths relative to model_dir of every file below it, sorted."""
    found = []
    for root, _, files in tf.io.gfile.walk(model_dir):
        rel_root = os.path.relpath(root, model_dir)
        found.extend(os.path.normpath(os.path.join(rel_root, f)) for f in files)
    return sorted(found)


def model_digest(model_dir: str) -> str:
    """sha256 over every file's relative path and bytes: equal digests mean the same model."""
    digest = hashlib.sha256()
    for rel in _files(model_dir):
        digest.update(rel.encode('utf-8') + b'\0')
        digest.update(hashlib.sha256(storage.read(os.path.join(model_dir, rel))).digest())
    return digest.hexdigest()


def remove_leftovers(base_dir: str) -> None:
    """Deletes what killed pushes left: staging folders, and on a bucket a version folder
    without its saved_model.pb (pushed there directly, the graph file last: `stage`).
    Assumes one pusher per base folder."""
    for name in _names(base_dir):  # none when nothing was pushed yet
        path = os.path.join(base_dir, name)
        if name.startswith(TMP_PREFIX) or (
                _is_uri(base_dir) and name.isdigit() and _isdir(path)
                and not storage.exists(os.path.join(path, _SAVED_MODEL))):
            tf.io.gfile.rmtree(path)


def _is_uri(path: str) -> bool:
    """gs://, s3://: a store where a folder's rename copies object by object."""
    return '://' in path


def copy_model(model_dir: str, target: str) -> str:
    """Copies the model's files into target, saved_model.pb last, and returns target."""
    if not tf.io.gfile.exists(os.path.join(model_dir, _SAVED_MODEL)):
        raise ValueError(f'Not a SavedModel (no {_SAVED_MODEL}): {model_dir}')
    # saved_model.pb last: until it is there, neither TF Serving nor served_version loads it.
    files = sorted(_files(model_dir), key=lambda rel: rel == _SAVED_MODEL)
    try:
        for rel in files:
            tf.io.gfile.makedirs(os.path.dirname(os.path.join(target, rel)))
            storage.copy_file(os.path.join(model_dir, rel), os.path.join(target, rel))
    except BaseException:
        if tf.io.gfile.exists(target):
            tf.io.gfile.rmtree(target)
        raise
    return target


def stage(model_dir: str, base_dir: str) -> str:
    """Copies the model into a hidden staging folder of base_dir and returns its path."""
    return copy_model(model_dir, os.path.join(base_dir, TMP_PREFIX + uuid.uuid4().hex))


def commit(staged: str, base_dir: str, attempts: int = 5) -> int:
    """Renames a staged model to the next version number and returns that number."""
    for _ in range(attempts):
        version = max(list_versions(base_dir), default=0) + 1
        try:
            tf.io.gfile.rename(staged, os.path.join(base_dir, str(version)), overwrite=False)
            return version
        except tf.errors.AlreadyExistsError:
            continue  # another push took this number between listing and renaming
    raise RuntimeError(f'Could not commit {staged}: version numbers kept being taken')


def push_new(model_dir: str, base_dir: str) -> int:
    """A new version of model_dir in base_dir; returns its number.

    On a local disk the model is staged in a hidden folder and renamed to its number, which is
    atomic. On a bucket a rename copies every object again and is not atomic either, so the
    files go straight to the version folder, saved_model.pb last: a version without it is not
    served by TF Serving nor counted by served_version, and remove_leftovers deletes it if the
    push was killed (docs/storage.md, "Pushing to a bucket")."""
    if _is_uri(base_dir):
        version = max(list_versions(base_dir), default=0) + 1
        target = os.path.join(base_dir, str(version))
        with store_watch.doing(f'writing {target}/'):  # named if the store stops answering
            copy_model(model_dir, target)
        return version
    staged = stage(model_dir, base_dir)
    try:
        return commit(staged, base_dir)
    except BaseException:
        tf.io.gfile.rmtree(staged)
        raise


def apply_retention(base_dir: str, keep: int, served: int,
                    labelled: Tuple[int, ...] = ()) -> Tuple[int, ...]:
    """Deletes all but the newest `keep` versions, never `served` nor a labelled one; returns
    the deleted ones."""
    if keep < 1:
        raise ValueError(f'keep must be >= 1, got {keep}')
    old = [v for v in list_versions(base_dir)[:-keep] if v != served and v not in labelled]
    for version in old:
        folder = os.path.join(base_dir, str(version))
        if _is_uri(base_dir):
            # No rename on a bucket: the graph file goes first, so the version stops counting
            # as one TF Serving or served_version would load, then the rest.
            tf.io.gfile.remove(os.path.join(folder, _SAVED_MODEL))
            tf.io.gfile.rmtree(folder)
            continue
        # Renamed out of sight first, so a kill mid-delete leaves no partial version visible.
        doomed = os.path.join(base_dir, f'{TMP_PREFIX}old-{version}')
        tf.io.gfile.rename(folder, doomed, overwrite=True)
        tf.io.gfile.rmtree(doomed)
    return tuple(old)


def label(base_dir: str, name: str, labels: serving_labels.Labels) -> serving_labels.Labels:
    """Writes models.config for these labels (before any retention, so TF Serving is never
    told to load a version being deleted); returns them."""
    serving_labels.write(base_dir, name, labels)
    return labels


def push(model_dir: str, base_dir: str, keep: int, mode: str = 'auto',
         name: str = 'model') -> PushResult:
    """Makes model_dir a version of base_dir (creating one only if needed) and labels it as the
    push mode says (serving_labels.after_push): stable in `auto` mode, canary in `candidate`
    mode once a stable version exists. `name` is the model's name in models.config."""
    if keep < 1:
        raise ValueError(f'keep must be >= 1, got {keep}')
    tf.io.gfile.makedirs(base_dir)
    remove_leftovers(base_dir)
    versions = list_versions(base_dir)
    newest = versions[-1] if versions else None
    current = serving_labels.read(base_dir) if versions else None
    if current is None and versions:   # no models.config: TF Serving serves the newest
        current = serving_labels.Labels(stable=served_version(base_dir))
    if newest is not None and (model_digest(os.path.join(base_dir, str(newest)))
                               == model_digest(model_dir)):
        version, created = newest, False
    else:
        version, created = push_new(model_dir, base_dir), True
    labels = label(base_dir, name, serving_labels.after_push(current, version, mode))
    removed = apply_retention(base_dir, keep, served=labels.stable, labelled=labels.versions())
    return PushResult(version=version, path=os.path.join(base_dir, str(version)),
                      created=created, removed=removed, labels=labels)
