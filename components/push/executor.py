"""Executor of our Pusher: the stock TFX Pusher executor with `components.push.versions`.

The stock executor names versions by Unix timestamp and copies files straight into the version
folder, so a killed push leaves a partial version that TF Serving may try to load, and a rerun
that misses the cache pushes the same model again under a new timestamp. This subclass keeps
the stock blessing check, model lookup, archive copy and artifact properties (`pushed`,
`pushed_version`, `pushed_destination`), and replaces only how the serving folder is written.
"""
import json
from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.components.pusher import executor as stock_executor
from tfx.proto import pusher_pb2
from tfx.types import artifact_utils
from tfx.types import standard_component_specs as specs
from tfx.utils import io_utils
from tfx.utils import proto_utils

from components.push import versions

KEEP_VERSIONS_KEY = 'keep_versions'   # in the stock Pusher's custom_config


class Executor(stock_executor.Executor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        self._log_startup(input_dict, output_dict, exec_properties)
        model_push = artifact_utils.get_single_instance(output_dict[specs.PUSHED_MODEL_KEY])
        if not self.CheckBlessing(input_dict):
            self._MarkNotPushed(model_push)
            return
        model_path = self.GetModelPath(input_dict)
        destination = pusher_pb2.PushDestination()
        proto_utils.json_to_proto(exec_properties[specs.PUSH_DESTINATION_KEY], destination)
        if destination.WhichOneof('destination') != 'filesystem':
            # Versions, atomic renames and retention are file-system notions; say so plainly.
            raise ValueError('This Pusher writes versioned folders: give a filesystem push '
                             f'destination, got {destination.WhichOneof("destination")!r}')
        custom_config = json.loads(exec_properties.get(specs.CUSTOM_CONFIG_KEY) or 'null') or {}
        keep = int(custom_config.get(KEEP_VERSIONS_KEY, 5))

        result = versions.push(model_path, destination.filesystem.base_directory, keep)
        if result.created:
            logging.info('Model pushed as version %d: %s', result.version, result.path)
        else:
            logging.info('Version %d already serves this model; no new version.', result.version)
        if result.removed:
            logging.info('Retention (keep %d): removed versions %s', keep, list(result.removed))

        # As the stock executor: archive the model under the artifact's own URI for lineage.
        io_utils.copy_dir(model_path, model_push.uri)
        self._MarkPushed(model_push, pushed_destination=result.path,
                         pushed_version=str(result.version))
        model_push.set_int_custom_property(versions.REUSED_PROPERTY, 0 if result.created else 1)
