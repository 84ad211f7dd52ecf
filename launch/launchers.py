"""The ways the trainer's job can run, by name, each loaded on first use (no TFX imports).

    choice = launchers.Choice.from_json(exec_properties.get('launcher', ''))
    result = launchers.get(choice.name).train(job, choice.spec, name, serving_dir=...,
                                              log_dir=..., checkpoint_dir=...)

The trainer component records one `launcher` property, a Choice: a name from this registry and
that launcher's own settings as JSON. Its executor asks the registry and knows no launcher, so a
new way to run a job (a cluster API, Ray) is its module and one line in `_LAUNCHERS`, and
touches no stage of components/. The Kubeflow adapter's launcher is named here by its path
only, and loaded when a task asks for it: nothing below pipeline/kubeflow/ imports it, and
removing the adapter removes its line.
"""
import abc
import dataclasses
import json

from core import plugins
from training.result import TrainResult

# name -> 'module:class'. 'local' is the default: this process, or --workers processes here.
_LAUNCHERS = plugins.Registry('launcher', {
    'local': 'launch.local:LocalLauncher',
    'kubernetes': 'pipeline.kubeflow.jobs.launcher:KubernetesLauncher',
})
NAMES = _LAUNCHERS.names
DEFAULT = 'local'


@dataclasses.dataclass(frozen=True)
class Choice:
    """The trainer's `launcher` property: which launcher, and its settings as that launcher's
    JSON ('' = none). The default is recorded as '' (to_json), so a local training's settings,
    and with them the digest that finds an unchanged served model, are those of before."""
    name: str = DEFAULT
    spec: str = ''

    def __post_init__(self):
        _LAUNCHERS.check(self.name)

    def to_json(self) -> str:
        if self == Choice():
            return ''
        return json.dumps({'name': self.name, 'spec': self.spec}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> 'Choice':
        return cls(**json.loads(text)) if text else cls()


class Launcher(abc.ABC):
    """Runs one training job (training/job.py TrainJob) into the trainer's folders."""

    def check(self, spec: str, params) -> None:
        """Refuses settings that cannot train `params` (TrainParams), when the component is
        made: a compile fails at once instead of a task at run time."""

    def readers(self, spec: str, params) -> int:
        """How many processes read train shards of their own (ingestion leaves at least one
        shard for each)."""
        return params.workers

    @abc.abstractmethod
    def train(self, job, spec: str, name: str, serving_dir: str, log_dir: str,
              checkpoint_dir: str) -> TrainResult:
        """Trains and exports `job`; returns the chief's result. `name` is unique to the
        trainer's execution and the same for its retries (a cluster job's name)."""


def get(name: str) -> Launcher:
    """The launcher called `name` (one shared instance: launchers hold no state)."""
    return _LAUNCHERS.get(name)
