"""The training window: which spans a run trains and evaluates on, as recorded on its Examples.

Ingestion (components/ingest/) records on the Examples artifact a custom property `window`: a
JSON list, oldest span first, of one entry per span, each naming a folder that holds that span's
`Split-train/` and `Split-eval/` only. The newest span's folder is the artifact itself; the older
ones are folders of earlier runs' Examples (referenced, never converted again) or sub-folders
`Span-<N>/` of this one (spans this run had to ingest too, e.g. on a first run over several
span folders). The trainer and the Evaluator read the entries' files directly, so no TFX
resolver is needed and every orchestrator (open-source KFP included) sees the same window.

An Examples artifact without the property (built by hand, or stored by an ingestion that
recorded no window) is a one-entry window of itself. The Model records the list too, and the
exported SavedModel carries it as `assets.extra/training_data.json`, so a served version says
what it learnt from.

No TFX imports: artifacts are read through the methods every TFX Artifact has.
"""
import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Sequence

import tensorflow as tf

from core import storage

PROPERTY = 'window'          # the Examples' and the Model's custom property (JSON list)
SPANS_PROPERTY = 'spans'     # the Model's: "2,3,4"
# The Examples': JSON of the ingestion parameters that shaped the records (another train/eval
# split of the same files is other data), and the spans left out of the window and why.
PARAMETERS_PROPERTY = 'ingest_parameters'
NOTE_PROPERTY = 'window_note'
TRAINING_DATA_FILE = os.path.join('assets.extra', 'training_data.json')


@dataclasses.dataclass(frozen=True)
class SpanEntry:
    span: int
    uri: str                      # holds Split-train/ and Split-eval/ of this span only
    fingerprint: str              # the span's input fingerprint ('' when none could be made)
    num_train: int
    num_eval: int
    image_sizes: Optional[Dict[str, int]] = None   # as ingestion records them (images only)
    color_modes: Optional[Dict[str, int]] = None

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, value: Dict[str, Any]) -> 'SpanEntry':
        # Unknown keys are left out: a newer writer may add fields.
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in value.items() if k in names})


def to_json(window: Sequence[SpanEntry]) -> str:
    return json.dumps([entry.to_dict() for entry in window], sort_keys=True)


def from_json(text: str) -> List[SpanEntry]:
    return [SpanEntry.from_dict(value) for value in json.loads(text)]


def _string(artifact, name: str) -> str:
    return artifact.get_string_custom_property(name) if artifact.has_custom_property(name) else ''


def _int(artifact, name: str) -> int:
    # Typed getter: under Kubeflow a JSON 0 would read as None through the untyped one.
    return artifact.get_int_custom_property(name) if artifact.has_custom_property(name) else 0


def _json_or_none(text: str) -> Optional[Dict[str, int]]:
    return json.loads(text) if text else None


def ingest_parameters(examples) -> str:
    """The Examples' `ingest_parameters` ('' for Examples that record no window)."""
    return _string(examples, PARAMETERS_PROPERTY)


def own_entry(examples) -> SpanEntry:
    """The entry of the artifact's own span (its own Split-* folders)."""
    return SpanEntry(span=_int(examples, 'span'), uri=examples.uri,
                     fingerprint=_string(examples, 'input_fingerprint'),
                     num_train=_int(examples, 'num_written_train'),
                     num_eval=_int(examples, 'num_written_eval'),
                     image_sizes=_json_or_none(_string(examples, 'image_sizes')),
                     color_modes=_json_or_none(_string(examples, 'color_modes')))


def read(examples) -> List[SpanEntry]:
    """The window of an Examples artifact, oldest span first; one entry of itself when the
    artifact records none."""
    text = _string(examples, PROPERTY)
    return from_json(text) if text else [own_entry(examples)]


def _patterns(window: Sequence[SpanEntry], split: str) -> tuple:
    return tuple(os.path.join(entry.uri, f'Split-{split}', '*') for entry in window)


def train_patterns(window: Sequence[SpanEntry]) -> tuple:
    return _patterns(window, 'train')


def eval_patterns(window: Sequence[SpanEntry]) -> tuple:
    return _patterns(window, 'eval')


def uris(window: Sequence[SpanEntry]) -> List[str]:
    return [entry.uri for entry in window]


def spans_text(window: Sequence[SpanEntry]) -> str:
    """'2,3,4': the Model's `spans` property."""
    return ','.join(str(entry.span) for entry in window)


def fingerprint(window: Sequence[SpanEntry]) -> str:
    """One fingerprint of the window's input: the span's own for a one-entry window (so a
    one-span model's skip-unchanged digest, components/trainer/executor.py, matches a served
    model trained on that span alone), else one line per span; '' when any span has none
    (unknown input)."""
    if any(not entry.fingerprint for entry in window):
        return ''
    if len(window) == 1:
        return window[0].fingerprint
    return '\n'.join(f'span {entry.span}: {entry.fingerprint}' for entry in window)


def describe(window: Sequence[SpanEntry]) -> str:
    """'spans 2-4, 2,391 train / 597 eval examples' (or 'span 3, ...', or 'spans 1,3,4, ...')."""
    spans = [entry.span for entry in window]
    if len(spans) == 1:
        which = f'span {spans[0]}'
    elif spans == list(range(spans[0], spans[-1] + 1)):
        which = f'spans {spans[0]}-{spans[-1]}'
    else:
        which = 'spans ' + ','.join(map(str, spans))
    train = sum(entry.num_train for entry in window)
    evaluation = sum(entry.num_eval for entry in window)
    return f'{which}, {train:,} train / {evaluation:,} eval examples'


def write_training_data(model_dir: str, window: Sequence[SpanEntry]) -> str:
    """Writes `assets.extra/training_data.json` ({"window": [...]}) into an exported model
    folder (TF Serving ignores assets.extra), atomically; returns its path."""
    path = os.path.join(model_dir, TRAINING_DATA_FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(path + '.tmp', 'w') as handle:
        json.dump({'window': [entry.to_dict() for entry in window]}, handle, indent=2,
                  sort_keys=True)
    tf.io.gfile.rename(path + '.tmp', path, overwrite=True)
    return path


def read_training_data(model_dir: str) -> Optional[List[SpanEntry]]:
    """The window a model folder (e.g. serving/<version>/) was trained on; None when the model
    predates training_data.json."""
    text = storage.read_text(os.path.join(model_dir, TRAINING_DATA_FILE))
    if text is None:
        return None
    return [SpanEntry.from_dict(value) for value in json.loads(text)['window']]
