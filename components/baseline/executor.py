"""Executor of ServedModelBaseline: copies the served model, or marks the baseline empty."""
import os
from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import io_utils, path_utils

from components.push import versions

# Custom properties of the baseline Model artifact; -1 means "nothing is served yet".
SERVED_VERSION = 'served_version'
SERVED_PATH = 'served_path'
NO_VERSION = -1


def has_model(baseline: types.Artifact) -> bool:
    """True unless the artifact is the empty baseline of a first run."""
    return baseline.get_int_custom_property(SERVED_VERSION) != NO_VERSION


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        # input_dict['candidate'] is deliberately unused: it only keys the cache (component.py).
        baseline = artifact_utils.get_single_instance(output_dict['baseline'])
        serving_dir = exec_properties['serving_dir']
        version = versions.served_version(serving_dir)
        if version is None:
            logging.info('No model is served under %s yet: evaluating without a baseline.',
                         serving_dir)
            baseline.set_int_custom_property(SERVED_VERSION, NO_VERSION)
            return
        source = os.path.join(serving_dir, str(version))
        # A copy, not a reference: the evaluation stays reproducible after old versions are
        # cleaned up, and the Evaluator finds the model where it looks (Format-Serving).
        io_utils.copy_dir(source, path_utils.serving_model_dir(baseline.uri))
        baseline.set_int_custom_property(SERVED_VERSION, version)
        baseline.set_string_custom_property(SERVED_PATH, source)
        logging.info('Baseline: served version %d from %s', version, source)
