"""Executor of our Pusher: the stock TFX Pusher executor with `core.versions`.

The stock executor names versions by Unix timestamp and copies files straight into the version
folder, so a killed push leaves a partial version that TF Serving may try to load, and a rerun
that misses the cache pushes the same model again under a new timestamp. This subclass keeps
the stock blessing check, model lookup and artifact properties (`pushed`, `pushed_version`,
`pushed_destination`), and replaces how the serving folder is written.

No archive copy: the stock executor also copies the model into the PushedModel artifact's own
folder "for lineage", a second full copy per push that nothing reads. Lineage is already there:
ML Metadata links the PushedModel to the Model it pushed, and `pushed_destination` names the
served copy. So the PushedModel's folder stays empty, and a push stores the model once, in
serving/ (pipeline/runs/retention.py keeps a served version's Model while the version is kept).

Serving guard: a model whose class names or input differ from the served model's (read from
both SavedModels at push time, core/model_signature.py) is never pushed over it,
blessed or not: its clients would get answers about other classes, or send inputs it cannot
read. A model that is not pushed records why (`not_pushed_reason`).
"""
import json
import os
from typing import Any, Dict, List, Optional

from absl import logging
from tfx import types
from tfx.components.pusher import executor as stock_executor
from tfx.proto import pusher_pb2
from tfx.types import artifact_utils
from tfx.types import standard_component_specs as specs
from tfx.utils import proto_utils

from core import model_signature, properties, serving_labels, versions
from components.push.params import PushParams

# In the stock Pusher's custom_config, beside the PushParams fields (params.py).
MODEL_NAME_KEY = 'model_name'         # the model's name in models.config


def served_incompatibility(model_path: str, base_dir: str) -> Optional[str]:
    """Why the model must not replace the one served under base_dir, or None."""
    served = versions.served_version(base_dir)
    if served is None:
        return None
    return model_signature.incompatibility(
        model_signature.read(os.path.join(base_dir, str(served))), model_signature.read(model_path))


def not_blessed_reason(input_dict: Dict[str, List[types.Artifact]]) -> str:
    """'not blessed: <the Evaluator's failed checks>'."""
    blessing = artifact_utils.get_single_instance(input_dict[specs.MODEL_BLESSING_KEY])
    reasons = (json.loads(blessing.get_string_custom_property(properties.BLESSING_REASONS) or '[]')
               if blessing.has_custom_property(properties.BLESSING_REASONS) else [])
    return 'not blessed' + (f': {"; ".join(reasons)}' if reasons else '')


class Executor(stock_executor.Executor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        self._log_startup(input_dict, output_dict, exec_properties)
        model_push = artifact_utils.get_single_instance(output_dict[specs.PUSHED_MODEL_KEY])
        blessed = self.CheckBlessing(input_dict)
        destination = pusher_pb2.PushDestination()
        proto_utils.json_to_proto(exec_properties[specs.PUSH_DESTINATION_KEY], destination)
        if blessed and destination.WhichOneof('destination') != 'filesystem':
            # Versions, atomic renames and retention are file-system notions; say so plainly.
            raise ValueError('This Pusher writes versioned folders: give a filesystem push '
                             f'destination, got {destination.WhichOneof("destination")!r}')
        base_dir = destination.filesystem.base_directory
        model_path = self.GetModelPath(input_dict)
        # The guard first: it holds whatever the blessing, and says what to do about it.
        incompatible = base_dir and served_incompatibility(model_path, base_dir)
        if incompatible or not blessed:
            reason = incompatible or not_blessed_reason(input_dict)
            logging.warning('Not pushed: %s', reason)
            self._MarkNotPushed(model_push)
            model_push.set_string_custom_property(versions.NOT_PUSHED_REASON_PROPERTY, reason)
            model_push.set_int_custom_property(versions.INCOMPATIBLE_PROPERTY,
                                               1 if incompatible else 0)
            return
        custom_config = json.loads(exec_properties.get(specs.CUSTOM_CONFIG_KEY) or 'null') or {}
        params = PushParams.from_properties(custom_config)
        keep = params.keep_versions

        result = versions.push(model_path, base_dir, keep, mode=params.mode,
                               name=custom_config.get(MODEL_NAME_KEY, 'model'))
        if result.created:
            logging.info('Model pushed as version %d: %s', result.version, result.path)
        else:
            logging.info('Version %d already serves this model; no new version.', result.version)
        logging.info('Labels in %s: %s', serving_labels.CONFIG_FILE, result.labels.text())
        if result.removed:
            logging.info('Retention (keep %d): removed versions %s', keep, list(result.removed))

        self._MarkPushed(model_push, pushed_destination=result.path,
                         pushed_version=str(result.version))
        model_push.set_int_custom_property(versions.REUSED_PROPERTY, 0 if result.created else 1)
        label = (serving_labels.CANARY if result.labels.canary == result.version
                 else serving_labels.STABLE if result.labels.stable == result.version else '')
        model_push.set_string_custom_property(properties.SERVING_LABEL, label)
        model_push.set_int_custom_property(properties.STABLE_VERSION, result.labels.stable or 0)
