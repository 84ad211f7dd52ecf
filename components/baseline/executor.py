"""Executor of ServedModelBaseline: names the served model, or marks the baseline empty or
incompatible.

The artifact is a reference, not a copy: `served_path` names the served version's folder
(`<serving>/<v>/`, a SavedModel) and the artifact's own folder stays empty (on a bucket it
holds one small `reference.json`: a bucket has no empty folders, and TFX reuses a cached output
only where its URI exists). Copying it cost one
more model per run (about 100 MB for a ResNet-50) for a stage that only reads it; the Evaluator
gives TFMA the served folder directly (`model_path`, components/evaluate/served_model.py).

A served model whose class names or input differ from the candidate's (read from both
SavedModels, core/model_signature.py) is not a baseline: comparing a 4-class model
with a 10-class one measures nothing, and TFMA would even feed the candidate's examples to a
model that cannot parse them. It is then recorded, not copied: `served_version` says what is
served and `incompatible_reason` why it was not compared, and the Evaluator skips it.
What the readers need of the artifact is core/served_baseline.py.
"""
import json
import os
from typing import Any, Dict, List

from absl import logging
import tensorflow as tf
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import path_utils

from core import model_signature, properties, storage, versions

REFERENCE_FILE = 'reference.json'   # on a bucket only (module docstring)


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        # The candidate keys the cache (component.py) and is what the served model must match.
        candidate = artifact_utils.get_single_instance(input_dict['candidate'])
        baseline = artifact_utils.get_single_instance(output_dict['baseline'])
        self._choose(candidate, baseline, exec_properties['serving_dir'])
        if storage.is_object_store(baseline.uri):
            # TFX reuses a cached output only if its URI exists (artifact_utils.verify_artifacts),
            # and a bucket has no empty folders: without an object there, this stage, and so the
            # Evaluator and the Pusher after it, would run again on every rerun on a bucket.
            with tf.io.gfile.GFile(os.path.join(baseline.uri, REFERENCE_FILE), 'w') as handle:
                handle.write(json.dumps({
                    properties.SERVED_VERSION: baseline.get_int_custom_property(
                        properties.SERVED_VERSION),
                    properties.SERVED_PATH: baseline.get_string_custom_property(
                        properties.SERVED_PATH)}) + '\n')

    @staticmethod
    def _choose(candidate, baseline, serving_dir: str) -> None:
        version = versions.served_version(serving_dir)
        if version is None:
            logging.info('No model is served under %s yet: evaluating without a baseline.',
                         serving_dir)
            baseline.set_int_custom_property(properties.SERVED_VERSION, properties.NO_VERSION)
            return
        source = os.path.join(serving_dir, str(version))
        baseline.set_int_custom_property(properties.SERVED_VERSION, version)
        baseline.set_string_custom_property(properties.SERVED_PATH, source)
        reason = model_signature.incompatibility(
            model_signature.read(source),
            model_signature.read(path_utils.serving_model_dir(candidate.uri)))
        if reason:
            baseline.set_string_custom_property(properties.INCOMPATIBLE_REASON, reason)
            logging.warning('Served version %d is not comparable with this model (%s): '
                            'evaluating without a baseline.', version, reason)
            return
        # A reference, not a copy (module docstring). The served version is kept while it is
        # served, and the pipeline's retention (pipeline/runs/retention.py) keeps serving/ as is.
        logging.info('Baseline: served version %d at %s (referenced, not copied)', version, source)
