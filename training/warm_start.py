"""Warm start: initialise a new model from the model currently served (no TFX imports).

Retraining on a new data span usually starts better from production's weights than from random
ones. Which SavedModel that is (the newest complete version in the push destination) is the
trainer's adapter's to say (components/trainer/executor.py): this module takes its folder and
knows nothing of the serving layout. The SavedModel holds the Keras model's variables
in the model's own order (keras.export.ExportArchive tracks `model.variables`), so they are
copied position by position, after checking that every shape matches: a model whose
architecture or class count changed trains from scratch, with a warning, rather than failing.
Matching shapes are not enough: a served model for other class names (or another input size,
which a fully convolutional model would not notice) holds weights for another task, so the
served model's description (common/model_signature.py) must agree with this model's too.
"""
from typing import Optional

from absl import logging
import keras
import tensorflow as tf

from core import model_signature


def warm_start(model: keras.Model, path: str,
               description: Optional[model_signature.Description] = None) -> bool:
    """Loads the weights of the SavedModel at `path` into `model`; False when it does not fit.

    `description` (model_signature.describe of the model being trained) is compared with the
    served model's; None skips that check."""
    other = description and model_signature.incompatibility(model_signature.read(path),
                                                            description)
    if other:
        logging.warning('Warm start: the served model %s is for another task (%s); training '
                        'from scratch.', path, other)
        return False
    served = list(tf.saved_model.load(path).variables)
    target = model.variables
    shapes = [tuple(v.shape) for v in target]
    if len(served) != len(target) or shapes != [tuple(v.shape) for v in served]:
        logging.warning('Warm start: the served model %s does not match this model '
                        '(%d vs %d variables, or other shapes); training from scratch.',
                        path, len(served), len(target))
        return False
    for variable, value in zip(target, served):
        variable.assign(value)
    logging.info('Warm start from the served model %s: %d variables.', path, len(target))
    return True
