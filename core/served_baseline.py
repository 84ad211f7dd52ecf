"""Reading the served-model baseline (ServedModelBaseline's Model artifact): what it names.

The baseline stage writes it (components/baseline/executor.py); the drift check and the
Evaluator read it, through these functions, so that no stage imports another stage's executor.
The artifact is a reference: `served_path` names the served version's folder. An artifact
without `served_path` holds a copy of the model inside it; such artifacts stay in ML Metadata
and cached runs hand them over, so they are still read. Imports TFX (the
artifact types), so the training library does not use it.
"""
import copy
from typing import Optional

from tfx import types
from tfx.dsl.io import fileio
from tfx.types import standard_artifacts
from tfx.utils import path_utils

from core import properties


def has_model(baseline: types.Artifact) -> bool:
    """True unless the artifact is the empty baseline of a first run."""
    return baseline.get_int_custom_property(properties.SERVED_VERSION) != properties.NO_VERSION


def incompatible_reason(baseline: types.Artifact) -> Optional[str]:
    """Why the served model cannot be compared with the candidate, or None."""
    if baseline.has_custom_property(properties.INCOMPATIBLE_REASON):
        reason = baseline.get_string_custom_property(properties.INCOMPATIBLE_REASON)
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
    for an artifact without `served_path`, the copy inside it."""
    copied = path_utils.serving_model_dir(baseline.uri)
    if fileio.exists(copied):
        return copied
    return baseline.get_string_custom_property(properties.SERVED_PATH)


def in_place(baseline: types.Artifact) -> types.Artifact:
    """An in-memory copy of the baseline whose uri is the folder holding its SavedModel, for
    TFMA (components/evaluate/served_model.py); its id stays, for the blessing's lineage."""
    reference = standard_artifacts.Model()
    reference.set_mlmd_artifact(copy.deepcopy(baseline.mlmd_artifact))
    path = model_path(baseline)
    if path != path_utils.serving_model_dir(baseline.uri):
        reference.uri = path
    return reference
