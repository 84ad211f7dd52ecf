"""Which artifacts of older runs retention deletes: a pure decision over a description of the runs.

No ML Metadata and no files here (pipeline/runs/retention.py reads both and carries the plan out),
so every rule is tested on hand-made runs. An artifact is kept, with the first reason found, if:
  1. a run that is kept used it: the newest `keep_runs` runs, the current run, and every run
     that is not finished (an execution NEW or RUNNING: a concurrent run, or an interrupted one
     whose rerun may resume from it). "Used" is an input or an output of one of its executions,
     so an old artifact that a newer run took from the cache is that newer run's too;
  2. a training window still reads it: an Examples artifact whose folder holds a `uri` that a
     window names (the newest Examples' `window` property, a kept serving version's
     `assets.extra/training_data.json`);
  3. a kept serving version came from it: the Pusher execution whose PushedModel names that
     version's folder, its inputs (the Model, the blessing), and the inputs and outputs of the
     executions that made those (the trainer's Examples and schema, the Evaluator's evaluation).
Everything else that an execution of this pipeline wrote inside pipeline_root is deleted (also
the partial outputs of failed executions, and deletions a killed retention left MARKED); an
artifact no execution wrote, or outside pipeline_root, is never touched.
"""
import dataclasses
from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple

from core import storage

LIVE = 'LIVE'
MARKED = 'MARKED_FOR_DELETION'   # a deletion that a killed retention did not finish
# Never deleted: gone already, or outside the pipeline's care (TFX's external artifacts).
UNTOUCHED = ('DELETED', 'REFERENCE')
UNFINISHED = ('NEW', 'RUNNING')


@dataclasses.dataclass(frozen=True)
class Artifact:
    id: int
    uri: str
    type: str                          # 'Examples', 'Model', 'PushedModel', ...
    state: str = LIVE                  # ML Metadata's Artifact.State name
    pushed_to: Optional[str] = None    # a PushedModel's pushed_destination
    window: Tuple[str, ...] = ()       # an Examples' `window` property: its spans' folders


@dataclasses.dataclass(frozen=True)
class Execution:
    id: int
    run: str                           # the pipeline run (its context name) it belongs to
    state: str                         # ML Metadata's Execution.State name
    inputs: FrozenSet[int] = frozenset()
    outputs: FrozenSet[int] = frozenset()


@dataclasses.dataclass(frozen=True)
class Run:
    name: str
    created: Tuple[int, int]           # (create time in ms, context id): oldest first
    executions: Tuple[Execution, ...] = ()

    @property
    def finished(self) -> bool:
        return not any(e.state in UNFINISHED for e in self.executions)


@dataclasses.dataclass(frozen=True)
class Plan:
    kept_runs: Tuple[str, ...]                  # newest first
    delete: Tuple[Artifact, ...]
    deleted_runs: Tuple[str, ...]               # runs that lose at least one artifact
    kept: Mapping[int, str]                     # artifact id -> why it stays


def inside(path: str, folder: str) -> bool:
    """True when path is folder or lies below it (no prefix confusion: /a/bc is not in /a/b)."""
    path, folder = storage.normpath(path), storage.normpath(folder)
    return path == folder or path.startswith(folder.rstrip('/') + '/')


def decide(runs: Sequence[Run], artifacts: Mapping[int, Artifact], keep_runs: int,
           current_run: str, pipeline_root: str, window_uris: Iterable[Tuple[str, str]] = (),
           served_dirs: Iterable[Tuple[str, str]] = ()) -> Plan:
    """The plan. window_uris and served_dirs are (path, reason) pairs: the span folders some
    window reads, and the folders of the serving versions that stay."""
    newest_first = sorted(runs, key=lambda r: r.created, reverse=True)
    kept_runs = [r for i, r in enumerate(newest_first)
                 if i < keep_runs or r.name == current_run or not r.finished]
    kept: Dict[int, str] = {}

    def keep(ids: Iterable[int], reason: str) -> None:
        for artifact_id in ids:
            kept.setdefault(artifact_id, reason)

    for run in kept_runs:
        why = ('the current run' if run.name == current_run else
               f'run {run.name} is not finished' if not run.finished else
               f'run {run.name} is among the newest {keep_runs}')
        for execution in run.executions:
            keep(execution.inputs | execution.outputs, why)
    executions = [e for r in runs for e in r.executions]
    producer = {a: e for e in executions for a in e.outputs}
    for folder, reason in served_dirs:
        for pusher in _pushers_of(folder, artifacts, producer):
            keep(pusher.inputs | pusher.outputs, reason)
            for made_by in filter(None, (producer.get(i) for i in pusher.inputs)):
                keep(made_by.inputs | made_by.outputs, reason)
    # The windows of every Examples kept so far, then the windows the served versions name.
    windows = [(uri, f'in the window of Examples {a.id}') for a in
               (artifacts[i] for i in list(kept) if i in artifacts) for uri in a.window]
    for uri, reason in windows + list(window_uris):
        keep((a.id for a in artifacts.values() if a.type == 'Examples' and inside(uri, a.uri)),
             reason)

    delete = [artifacts[i] for i in sorted(producer) if i in artifacts and i not in kept
              and artifacts[i].state not in UNTOUCHED
              and inside(artifacts[i].uri, pipeline_root)
              and storage.normpath(artifacts[i].uri) != storage.normpath(pipeline_root)]
    doomed = {a.id for a in delete}
    deleted_runs = [r.name for r in newest_first
                    if any(e.outputs & doomed for e in r.executions)]
    return Plan(kept_runs=tuple(r.name for r in kept_runs), delete=tuple(delete),
                deleted_runs=tuple(deleted_runs), kept=kept)


def _pushers_of(folder: str, artifacts: Mapping[int, Artifact],
                producer: Mapping[int, Execution]) -> List[Execution]:
    """The executions whose PushedModel names `folder` (one per push or reuse of it)."""
    return [producer[a.id] for a in artifacts.values()
            if a.type == 'PushedModel' and a.pushed_to and a.id in producer
            and storage.normpath(a.pushed_to) == storage.normpath(folder)]
