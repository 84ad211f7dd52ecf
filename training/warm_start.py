"""Warm start: initialise a new model from the model currently served (no TFX imports).

Retraining on a new data span usually starts better from production's weights than from random
ones. The served model is the newest complete version in the push destination (the same lookup
the Pusher and the Evaluator's baseline use). Its SavedModel holds the Keras model's variables
in the model's own order (keras.export.ExportArchive tracks `model.variables`), so they are
copied position by position, after checking that every shape matches: a model whose
architecture or class count changed trains from scratch, with a warning, rather than failing.
Matching shapes are not enough: a served model for other class names (or another input size,
which a fully convolutional model would not notice) holds weights for another task, so the
served model's description (common/model_signature.py) must agree with this model's too.
"""
import os
from typing import Optional

from absl import logging
import keras
import tensorflow as tf

from components.common import model_signature
from components.common import versions


def warm_start(model: keras.Model, serving_dir: str,
               description: Optional[model_signature.Description] = None) -> Optional[int]:
    """Loads the served model's weights into `model`; returns the version used, or None.

    `description` (model_signature.describe of the model being trained) is compared with the
    served model's; None skips that check."""
    version = versions.served_version(serving_dir)
    if version is None:
        logging.info('Warm start: nothing is served under %s yet; training from scratch.',
                     serving_dir)
        return None
    path = os.path.join(serving_dir, str(version))
    other = description and model_signature.incompatibility(model_signature.read(path),
                                                            description)
    if other:
        logging.warning('Warm start: served version %d is for another task (%s); training '
                        'from scratch.', version, other)
        return None
    served = list(tf.saved_model.load(path).variables)
    target = model.variables
    shapes = [tuple(v.shape) for v in target]
    if len(served) != len(target) or shapes != [tuple(v.shape) for v in served]:
        logging.warning('Warm start: served version %d at %s does not match this model '
                        '(%d vs %d variables, or other shapes); training from scratch.',
                        version, path, len(served), len(target))
        return None
    for variable, value in zip(target, served):
        variable.assign(value)
    logging.info('Warm start from served version %d (%s): %d variables.', version, path,
                 len(target))
    return version
