"""What a SavedModel predicts and takes, written beside it, and whether two models agree on it.

The trainer's export writes `assets.extra/model_signature.json` into every SavedModel: the class
names in label-index order and the input (an image's height, width, channels and storage, or a
table's numeric and categorical columns). TensorFlow's loaders and TF Serving ignore
`assets.extra/` apart from their own warm-up file, so the model serves exactly as before.

The baseline (components/baseline) and the Pusher (components/push) read it from the candidate
and from the served version: a model for another label set or another input is then never
compared with the served model, nor pushed over it. Both sides are read from the SavedModels
themselves, not from ML Metadata, because the served folder is what clients actually get.

A served model without this file (exported by another tool or an earlier export) still says
something, so it is never pushed over blindly: the class count (the
`probabilities` output's static shape) and the input kind (image models have a
`predict_images` signature) are read from `saved_model.pb`. No TFX imports.
"""
import json
import os
from typing import Any, Dict, Optional, Sequence

from google.protobuf import message
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from core import inputs, storage

SIGNATURE_FILE = os.path.join('assets.extra', 'model_signature.json')
_IMAGES_SIGNATURE = 'predict_images'   # training/export.py; image models only
_MAX_NAMES_SHOWN = 12

Description = Dict[str, Any]


def describe(class_names: Sequence[str], image_shape: Sequence[int],
             spec: inputs.InputSpec) -> Description:
    """The description the export writes: classes and input (`image_shape` is ignored for a
    table)."""
    if spec.kind == 'tabular':
        model_input = {'kind': 'tabular', 'numeric': [name for name, _, _ in spec.numeric],
                       'categorical': list(spec.categorical)}
    else:
        height, width, channels = (int(d) for d in image_shape)
        model_input = {'kind': 'image', 'height': height, 'width': width,
                       'channels': channels, 'storage': spec.storage}
    return {'class_names': list(class_names), 'num_classes': len(class_names),
            'input': model_input}


def write(model_dir: str, description: Description) -> None:
    path = os.path.join(model_dir, SIGNATURE_FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.gfile.GFile(path, 'w') as handle:
        handle.write(json.dumps(description, indent=1, sort_keys=True))


def _from_graph(model_dir: str) -> Description:
    """What an older export (without the file) still tells: class count and input kind."""
    saved_model = saved_model_pb2.SavedModel()
    try:
        saved_model.ParseFromString(storage.read(os.path.join(model_dir, 'saved_model.pb')))
    except message.DecodeError:
        return {}  # not a readable graph: nothing is known, so nothing can differ
    signatures = saved_model.meta_graphs[0].signature_def if saved_model.meta_graphs else {}
    description: Description = {}
    if 'serving_default' in signatures:
        dims = signatures['serving_default'].outputs['probabilities'].tensor_shape.dim
        if len(dims) == 2 and dims[1].size > 0:
            description['num_classes'] = int(dims[1].size)
        description['input'] = {'kind': 'image' if _IMAGES_SIGNATURE in signatures
                                else 'tabular'}
    return description


def read(model_dir: str) -> Description:
    """The model's description: the file when present, else what its graph says."""
    text = storage.read_text(os.path.join(model_dir, SIGNATURE_FILE))
    return _from_graph(model_dir) if text is None else json.loads(text)


def _classes(description: Description, word: str = '') -> str:
    """"classes ['a', 'b']" (word='classes ') or "['a', 'b']", or "10 classes" when only the
    count is known."""
    names = description.get('class_names')
    if names is None:
        return f'{description["num_classes"]} classes'
    shown = ', '.join(repr(n) for n in names[:_MAX_NAMES_SHOWN])
    more = f', ... ({len(names)} classes)' if len(names) > _MAX_NAMES_SHOWN else ''
    return f'{word}[{shown}{more}]'


def _input(model_input: Dict[str, Any]) -> str:
    if model_input['kind'] == 'image':
        if 'height' not in model_input:
            return 'images'
        storage = ' stored as raw pixels' if model_input.get('storage') == 'raw' else ''
        return (f'{model_input["height"]}×{model_input["width"]}×{model_input["channels"]} '
                f'images{storage}')
    if 'numeric' not in model_input:
        return 'table rows'
    return 'table columns [{}]'.format(', '.join(
        [*model_input['numeric'], *(f'{c} (categorical)' for c in model_input['categorical'])]))


def _comparable_input(model_input: Dict[str, Any], keys: Sequence[str]) -> Dict[str, Any]:
    # Column order does not change what a client sends (serving parses by name).
    return {k: sorted(model_input[k]) if isinstance(model_input.get(k), list) else
            model_input.get(k) for k in keys}


def incompatibility(served: Description, candidate: Description) -> Optional[str]:
    """None when the candidate can replace the served model for its clients; else why not,
    e.g. "served model predicts classes ['0', '1']; this model predicts ['cat', 'dog']".

    Only what both descriptions state is compared, so an older served model is judged on its
    class count and input kind.
    """
    problems = []
    if served.get('class_names') is not None and candidate.get('class_names') is not None:
        differ = list(served['class_names']) != list(candidate['class_names'])
    else:
        differ = ('num_classes' in served and 'num_classes' in candidate
                  and served['num_classes'] != candidate['num_classes'])
    if differ:
        problems.append(f'served model predicts {_classes(served, "classes ")}; '
                        f'this model predicts {_classes(candidate)}')
    served_input, candidate_input = served.get('input'), candidate.get('input')
    if served_input and candidate_input:
        shared = [k for k in served_input if k in candidate_input]
        if (_comparable_input(served_input, shared)
                != _comparable_input(candidate_input, shared)):
            problems.append(f'served model takes {_input(served_input)}; '
                            f'this model takes {_input(candidate_input)}')
    return '; '.join(problems) or None
