"""How TFMA loads the served model in place: the baseline is a reference, not a copy.

ServedModelBaseline records which served version to compare with (`served_path`, a folder
`<serving>/<v>/` that is itself a SavedModel) and copies nothing. The stock Evaluator executor
loads every model from `<artifact uri>/Format-Serving` (path_utils.serving_model_path), with no
way to give it another folder, except its documented hook: a `custom_eval_shared_model`
function in the module named by the `module_path` execution property. Our executor
(executor.py) names this module there and hands the stock executor a baseline Model whose uri
is the served folder; `custom_eval_shared_model` then loads `<served>/` when TFX asks for
`<served>/Format-Serving`. Every other model (the candidate) loads exactly as before.
"""
import os

import tensorflow as tf
import tensorflow_model_analysis as tfma

MODULE = __name__   # the `module_path` our executor gives the stock one
_SAVED_MODEL = 'saved_model.pb'
_SERVING_DIR = 'Format-Serving'   # tfx.utils.path_constants.SERVING_MODEL_DIR


def resolve(eval_saved_model_path: str) -> str:
    """`<folder>/Format-Serving` as TFX asks for it, or `<folder>` when that folder is the
    SavedModel itself (a served version) and holds no Format-Serving."""
    folder, name = os.path.split(eval_saved_model_path.rstrip('/'))
    if (name == _SERVING_DIR and not tf.io.gfile.exists(eval_saved_model_path)
            and tf.io.gfile.exists(os.path.join(folder, _SAVED_MODEL))):
        return folder
    return eval_saved_model_path


def custom_eval_shared_model(eval_saved_model_path, model_name, eval_config, **kwargs):
    """TFX's hook (tfx/components/evaluator/executor.py, `custom_eval_shared_model`)."""
    return tfma.default_eval_shared_model(
        eval_saved_model_path=resolve(eval_saved_model_path), model_name=model_name,
        eval_config=eval_config, **kwargs)
