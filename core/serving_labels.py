"""Which serving versions TF Serving loads, and under which label: `<serving>/models.config`.

No TFX imports. The file is TF Serving's own model config (`ModelServerConfig` in text format,
tensorflow_serving/config/model_server_config.proto), read by `tensorflow_model_server
--model_config_file=... --model_config_file_poll_wait_seconds=N` (docs/serving.md, "Labels").
It names the model, its base path, a `specific` version policy listing the versions to load,
and `version_labels`:

- `stable`: what clients get by default (the pipeline's "served version": the baseline new models
  are compared with, the serving guard's reference, what rollback replaces);
- `canary`: a candidate pushed in `candidate` mode, loaded beside stable for canary traffic until
  a person promotes or rejects it (`runner.py --promote/--reject`).

Push modes: `auto` makes every pushed version stable (the file then names only the newest, which
is also what TF Serving's default "latest" policy serves); `candidate` pushes a new version as the
canary, and only the first version ever pushed becomes stable on its own.

The file is the source of truth for the labels; without one (a folder filled by hand or by
another tool) the newest complete version is stable, which is what TF Serving serves by default.
It is written whole: on a local disk through a temporary file and a rename, on a bucket as one
object (a PUT replaces an object atomically).
"""
import dataclasses
import os
import uuid
from typing import Optional, Tuple

from core import storage

CONFIG_FILE = 'models.config'
STABLE, CANARY = 'stable', 'canary'
MODES = ('auto', 'candidate')


class LabelError(ValueError):
    """A promotion or rejection that cannot be done; the message is the user's one line."""


@dataclasses.dataclass(frozen=True)
class Labels:
    stable: Optional[int] = None
    canary: Optional[int] = None

    def versions(self) -> Tuple[int, ...]:
        """The versions TF Serving loads: the labelled ones, oldest first."""
        return tuple(sorted({v for v in (self.stable, self.canary) if v is not None}))

    def text(self) -> str:
        """'stable 6, canary 7' / 'stable 6' / 'none'."""
        parts = [f'{name} {value}' for name, value in ((STABLE, self.stable),
                                                        (CANARY, self.canary)) if value]
        return ', '.join(parts) or 'none'


def after_push(current: Optional[Labels], version: int, mode: str) -> Labels:
    """The labels once `version` holds the model just pushed (or found identical)."""
    if mode not in MODES:
        raise ValueError(f'push mode must be one of {MODES}, got {mode!r}')
    if mode == 'auto' or current is None or current.stable is None:
        return Labels(stable=version)
    if version in (current.stable, current.canary):
        return current   # the same model again: nothing moves
    return Labels(stable=current.stable, canary=version)


def promote(current: Labels, version: int) -> Labels:
    if version == current.stable:
        raise LabelError(f'version {version} is already stable; nothing to do')
    return Labels(stable=version, canary=None if current.canary == version else current.canary)


def reject(current: Labels, version: int) -> Labels:
    if current.canary != version:
        raise LabelError(f'version {version} is not the canary (labels: {current.text()}); only '
                         'the canary can be rejected')
    return Labels(stable=current.stable)


def _gfile():
    import tensorflow as tf  # pylint: disable=import-outside-toplevel  (callers have it loaded)
    return tf.io.gfile


def config_path(serving_dir: str) -> str:
    return os.path.join(serving_dir, CONFIG_FILE)


def read(serving_dir: str) -> Optional[Labels]:
    """The labels models.config names, or None when there is no file."""
    found = read_config(serving_dir)
    return found and found[1]


def read_config(serving_dir: str) -> Optional[Tuple[str, Labels]]:
    """(the model's name, its labels) in models.config, or None when there is no file."""
    from google.protobuf import text_format  # pylint: disable=import-outside-toplevel
    from tensorflow_serving.config import model_server_config_pb2  # pylint: disable=import-outside-toplevel
    # On a bucket, an outage raises rather than reading as "no file", and the bytes are the
    # file's (storage.read_if_exists): the labels would otherwise be lost by the push that
    # rewrites the file.
    text = storage.read_text(config_path(serving_dir))
    if text is None:
        return None
    config = text_format.Parse(text, model_server_config_pb2.ModelServerConfig())
    models = config.model_config_list.config
    if not models:
        return '', Labels()
    labels = models[0].version_labels
    return models[0].name, Labels(stable=labels.get(STABLE) or None,
                                  canary=labels.get(CANARY) or None)


def render(serving_dir: str, name: str, labels: Labels) -> str:
    """models.config's text for these labels."""
    from google.protobuf import text_format  # pylint: disable=import-outside-toplevel
    from tensorflow_serving.config import model_server_config_pb2  # pylint: disable=import-outside-toplevel
    config = model_server_config_pb2.ModelServerConfig()
    model = config.model_config_list.config.add(
        name=name, base_path=serving_dir, model_platform='tensorflow')
    model.model_version_policy.specific.versions.extend(labels.versions())
    for label, version in ((STABLE, labels.stable), (CANARY, labels.canary)):
        if version is not None:
            model.version_labels[label] = version
    return text_format.MessageToString(config)


def write(serving_dir: str, name: str, labels: Labels) -> str:
    """Writes models.config whole (see the module docstring); returns its path."""
    path, text = config_path(serving_dir), render(serving_dir, name, labels)
    gfile = _gfile()
    if '://' in serving_dir:
        with gfile.GFile(path, 'w') as handle:   # one object, replaced whole
            handle.write(text)
        return path
    temporary = f'{path}.tmp-{uuid.uuid4().hex}'
    with gfile.GFile(temporary, 'w') as handle:
        handle.write(text)
    gfile.rename(temporary, path, overwrite=True)
    return path
