"""Executor of ServedModelBaseline: names the served model, or marks the baseline empty or
incompatible.

The artifact is a reference, not a copy: `served_path` names the served version's folder
(`<serving>/<v>/`, a SavedModel) and the artifact's own folder stays empty. Copying it cost one
more model per run (about 100 MB for a ResNet-50) for a stage that only reads it; the Evaluator
gives TFMA the served folder directly (`model_path`, components/evaluate/served_model.py).

A served model whose class names or input differ from the candidate's (read from both
SavedModels, components/common/model_signature.py) is not a baseline: comparing a 4-class model
with a 10-class one measures nothing, and TFMA would even feed the candidate's examples to a
model that cannot parse them. It is then recorded, not copied: `served_version` says what is
served and `incompatible_reason` why it was not compared, and the Evaluator skips it.
"""
import copy
import os
from typing import Any, Dict, List, Optional

from absl import logging
from tfx import types
from tfx.dsl.io import fileio
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils, standard_artifacts
from tfx.utils import path_utils

from components.common import model_signature
from components.common import versions

# Custom properties of the baseline Model artifact; -1 means "nothing is served yet".
SERVED_VERSION = 'served_version'
SERVED_PATH = 'served_path'
INCOMPATIBLE_REASON = 'incompatible_reason'
NO_VERSION = -1


def has_model(baseline: types.Artifact) -> bool:
    """True unless the artifact is the empty baseline of a first run."""
    return baseline.get_int_custom_property(SERVED_VERSION) != NO_VERSION


def incompatible_reason(baseline: types.Artifact) -> Optional[str]:
    """Why the served model cannot be compared with the candidate, or None."""
    if baseline.has_custom_property(INCOMPATIBLE_REASON):
        reason = baseline.get_string_custom_property(INCOMPATIBLE_REASON)
        if reason:
            return reason
    if has_model(baseline) and not fileio.exists(model_path(baseline)):
        # A reference outlived its folder (an evaluation re-run long after): say so, not crash.
        return f'its folder {model_path(baseline)} no longer exists'
    return None


def is_comparable(baseline: types.Artifact) -> bool:
    """True when the Evaluator should compare the candidate with this baseline."""
    return has_model(baseline) and incompatible_reason(baseline) is None


def model_path(baseline: types.Artifact) -> str:
    """The SavedModel folder of a baseline that has a model: the served version it names, or,
    for an artifact written before baselines were references, the copy inside it."""
    copied = path_utils.serving_model_dir(baseline.uri)
    if fileio.exists(copied):
        return copied
    return baseline.get_string_custom_property(SERVED_PATH)


def in_place(baseline: types.Artifact) -> types.Artifact:
    """An in-memory copy of the baseline whose uri is the folder holding its SavedModel, for
    TFMA (components/evaluate/served_model.py); its id stays, for the blessing's lineage."""
    reference = standard_artifacts.Model()
    reference.set_mlmd_artifact(copy.deepcopy(baseline.mlmd_artifact))
    path = model_path(baseline)
    if path != path_utils.serving_model_dir(baseline.uri):
        reference.uri = path
    return reference


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        # The candidate keys the cache (component.py) and is what the served model must match.
        candidate = artifact_utils.get_single_instance(input_dict['candidate'])
        baseline = artifact_utils.get_single_instance(output_dict['baseline'])
        serving_dir = exec_properties['serving_dir']
        version = versions.served_version(serving_dir)
        if version is None:
            logging.info('No model is served under %s yet: evaluating without a baseline.',
                         serving_dir)
            baseline.set_int_custom_property(SERVED_VERSION, NO_VERSION)
            return
        source = os.path.join(serving_dir, str(version))
        baseline.set_int_custom_property(SERVED_VERSION, version)
        baseline.set_string_custom_property(SERVED_PATH, source)
        reason = model_signature.incompatibility(
            model_signature.read(source),
            model_signature.read(path_utils.serving_model_dir(candidate.uri)))
        if reason:
            baseline.set_string_custom_property(INCOMPATIBLE_REASON, reason)
            logging.warning('Served version %d is not comparable with this model (%s): '
                            'evaluating without a baseline.', version, reason)
            return
        # A reference, not a copy (module docstring). The served version is kept while it is
        # served, and the pipeline's retention (pipeline/retention.py) keeps serving/ as is.
        logging.info('Baseline: served version %d at %s (referenced, not copied)', version, source)
