"""Pusher: the stock TFX Pusher component, run by our versioning executor.

A subclass that only swaps EXECUTOR_SPEC, rather than the stock component with
`custom_executor_spec=` (deprecated in TFX 1.16, with a warning on every run). Keeping the class
name `Pusher` keeps the node id and the execution type's short name that ML Metadata records,
so the run summary, the caches and the Kubeflow task names see the same "Pusher" as before.
"""
from typing import Any, Dict, Optional

from tfx import components as tfx_components
from tfx.proto import pusher_pb2
from tfx.dsl.components.base import executor_spec
from tfx.types import Channel

from components.push import executor
from components.push.params import PushParams


class Pusher(tfx_components.Pusher):
    """Pushes blessed models to `<serving_dir>/<integer version>/`
    (see core/versions.py)."""
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, model: Channel, model_blessing: Channel, serving_dir: str,
                 params: PushParams, model_name: str = 'model',
                 orchestrator_config: Optional[Dict[str, Any]] = None):
        """orchestrator_config: entries the orchestrator adds to custom_config for its own
        task code (Kubeflow's run end); the executor reads its own keys only."""
        super().__init__(
            model=model, model_blessing=model_blessing,
            push_destination=pusher_pb2.PushDestination(
                filesystem=pusher_pb2.PushDestination.Filesystem(base_directory=serving_dir)),
            custom_config={**params.to_properties(), executor.MODEL_NAME_KEY: model_name,
                           **(orchestrator_config or {})})
