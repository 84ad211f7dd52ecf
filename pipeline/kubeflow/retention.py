"""Retention on Kubeflow Pipelines: `--keep-runs K` over the run root, from the tasks' records.

The same rules as a local run's retention (pipeline/runs/retention_plan.py decides both): every
artifact of the newest K runs, of the current run and of every unfinished run stays; so does
what a training window still reads and what a kept serving version came from; the rest of the
older runs is deleted. What differs is where the facts come from. Locally ML Metadata is this
process's; on Kubeflow it is the cluster's, so the facts are the task records every task writes
into its task folder (pipeline/kubeflow/task_record.py), and a run is KFP's run folder:

    <pipeline_root>/<pipeline>/<run id>/<task>/<uuid>/<key>     (KFP's layout, 2.17)

The Pusher's task, the last of each run, calls `apply` with its own run id after the push
(pipeline/kubeflow/run_end.py).
Only that pipeline's folder is touched, plus the abandoned checkpoint folders under
`<pipeline_root>/_checkpoints` (as locally); the span index, the quarantine and serving/ never.

Runs. A run's start is its earliest task's start. It is finished once the task that ends it
recorded itself (`run_end` in its record), or a task recorded a failure. A run that is neither,
and started after the newest finished run, is running (a concurrent run): it is kept whole. One
that started before is treated as ended (a run stopped from the UI, or a killed pod): with the
recurring run's concurrency 1, no run that old still runs.

Deleting. First the plan's artifacts (each URI, as locally); then, in every run retention does
not keep, each task folder that holds no kept artifact is removed whole: its record, and what a
task killed before it wrote one left there (counted as leftovers). A task folder that still holds
a kept artifact keeps its record, which the next retention reads; the record that marked the run
ended is written back without its artifacts (a few hundred bytes per run), so that the run stays
known as ended. A local folder (the tests'
stand-in for gs://) is renamed out of sight before it is removed; a bucket has no rename.

The cache. KFP's cache ignores artifact state (backend/src/v2/driver/cache.go: a fingerprint's
newest cached execution's output URIs are handed over as they are, whether or not anything is
still there), so deleting an artifact cannot take it out of the cache. Instead a pipeline
compiled with retention has no cached task at all (pipeline/kubeflow/compiler.py, docs/kubeflow.md
"Retention"): nothing retention deletes can come back as a cache hit. And what a kept run
received from the cache before (a reused output is an input of the tasks after it, so it is in
their records) is kept with that run.

Errors come back as the note of the Outcome, never raised: the run stays completed.
"""
import logging
import os
from typing import Dict, List, Tuple

import tensorflow as tf

from core import storage
from pipeline.kubeflow import task_record as records_lib
from pipeline.runs import retention
from pipeline.runs import retention_plan as plan_lib


def apply(pipeline_root: str, pipeline_name: str, run_id: str, keep: int,
          serving_dir: str) -> retention.Outcome:
    """Applies --keep-runs `keep` after run run_id; never raises."""
    if keep == 0:
        return retention.Outcome(note='off (--keep-runs 0): every run is kept')
    try:
        return _apply(storage.to_s3(pipeline_root), pipeline_name, run_id, keep,
                      storage.to_s3(serving_dir))
    except Exception as error:  # pylint: disable=broad-except
        logging.exception('Retention failed')
        return retention.Outcome(note=f'failed ({type(error).__name__}: {error}); nothing else '
                                      'is affected, details in the log')


def describe(tasks: Dict[str, List[records_lib.TaskRecord]], current_run: str
             ) -> Tuple[List[plan_lib.Run], Dict[int, plan_lib.Artifact]]:
    """The runs and artifacts the records name, as retention_plan takes them (an artifact's id
    is a number given to its URI here; KFP's ML Metadata ids are not in every record)."""
    ids: Dict[str, int] = {}
    artifacts: Dict[int, plan_lib.Artifact] = {}

    def artifact_id(entry: dict) -> int:
        uri = storage.normpath(entry['uri'])
        if uri not in ids:
            ids[uri] = len(ids) + 1
        number = ids[uri]
        found = entry.get('properties', {})
        window, pushed_to = found.get('window'), found.get('pushed_destination')
        if number not in artifacts or window or pushed_to:   # an output's entry says more
            artifacts[number] = plan_lib.Artifact(
                id=number, uri=uri, type=entry.get('type', ''),
                pushed_to=storage.to_s3(pushed_to) if pushed_to else None,
                window=tuple(retention.window_uris(window)) if window else ())
        return number

    started = {run: _started_ms(run, found) for run, found in tasks.items()}
    finished = {run for run, found in tasks.items()
                if any(t.data.get('state') == records_lib.FAILED or t.data.get('run_end')
                       for t in found)}
    newest_finished = max((started[r] for r in finished if r != current_run), default=None)
    runs, number = [], 0
    for run, found in sorted(tasks.items()):
        executions = []
        for task in found:
            if not task.data:
                continue
            number += 1
            executions.append(plan_lib.Execution(
                id=number, run=run, state=task.data.get('state', records_lib.FAILED),
                inputs=frozenset(artifact_id(e) for e in task.data.get('inputs', ())),
                outputs=frozenset(artifact_id(e) for e in task.data.get('outputs', ()))))
        if run not in finished and run != current_run and (
                newest_finished is None or started[run] > newest_finished):
            number += 1   # running: retention_plan keeps a run with an unfinished execution
            executions.append(plan_lib.Execution(id=number, run=run, state='RUNNING'))
        runs.append(plan_lib.Run(name=run, created=(started[run], len(runs)),
                                 executions=tuple(executions)))
    return runs, artifacts


def _started_ms(run: str, found: List[records_lib.TaskRecord]) -> int:
    """When a run started: its earliest task's start; for a run without records, when anything
    in it was last written (a run older than records, or one whose tasks all died)."""
    starts = [t.data['started'] for t in found if t.data.get('started')]
    if starts:
        return int(min(starts) * 1000)
    written = [retention.newest_write_ms(t.folder) for t in found]
    return int(max((w for w in written if w is not None), default=0))


def _apply(pipeline_root: str, pipeline_name: str, run_id: str, keep: int,
           serving_dir: str) -> retention.Outcome:
    folder = os.path.join(pipeline_root, pipeline_name)
    tasks = records_lib.read_runs(folder)
    if run_id not in tasks:
        return retention.Outcome(note=f'not applied: run {run_id} is not under {folder}')
    runs, artifacts = describe(tasks, run_id)
    served, trained_on = retention.serving_versions(serving_dir)
    plan = plan_lib.decide(runs, artifacts, keep, run_id, folder, trained_on, served)
    size, error, removed = 0, None, set()
    for artifact in plan.delete:
        try:
            if not tf.io.gfile.exists(artifact.uri):
                continue   # deleted before; a kept record beside a kept artifact names it
            size += retention.remove_path(artifact.uri)
            removed.add(artifact.id)
        except (OSError, tf.errors.OpError) as failure:   # the next retention retries it
            logging.warning('Retention could not delete %s: %s', artifact.uri, failure)
            error = error or f'could not delete {artifact.uri}: {failure}'
    kept_uris = [artifacts[i].uri for i in plan.kept if i in artifacts]
    leftovers, leftover_bytes = 0, 0
    for run, found in tasks.items():
        if run in plan.kept_runs:
            continue
        for task in found:
            if any(plan_lib.inside(uri, task.folder) for uri in kept_uris):
                continue   # its record stays with the kept artifact
            held = retention.remove_path(task.folder)
            if not task.data:
                leftovers, leftover_bytes = leftovers + 1, leftover_bytes + held
            elif _ends_run(task.data):
                records_lib.write(_tombstone(task.data), task.folder)
        _remove_if_empty(os.path.join(folder, run))
    deleted_runs = {e.run for r in runs for e in r.executions if e.outputs & removed}
    kept_ms = [r.created[0] for r in runs if r.name in plan.kept_runs]
    abandoned, abandoned_bytes = retention.collect_abandoned_checkpoints(
        pipeline_root, min(kept_ms, default=None))
    baselines, baseline_bytes = retention.collect_drift_baselines(pipeline_root, serving_dir)
    unfinished = sum(1 for r in runs if r.name in plan.kept_runs and not r.finished)
    logging.info('Retention (keep %d runs): kept runs %s; deleted %d artifacts (%d bytes)',
                 keep, list(plan.kept_runs), len(plan.delete), size)
    return retention.Outcome(
        kept_runs=len(plan.kept_runs) - unfinished, unfinished_runs=unfinished,
        deleted=len(removed), deleted_runs=len(deleted_runs), bytes=size,
        leftovers=leftovers, leftover_bytes=leftover_bytes, abandoned=abandoned,
        abandoned_bytes=abandoned_bytes, baselines=baselines, baseline_bytes=baseline_bytes,
        note=error)


def _ends_run(data: dict) -> bool:
    return bool(data.get('run_end')) or data.get('state') == records_lib.FAILED


def _tombstone(data: dict) -> dict:
    """What stays of a record that marked its run ended, once its task folder is removed: the
    state, times and the mark, no artifacts. Without it, the next retention would take an
    older run whose other records stay (beside a kept artifact) for a running one."""
    return {key: data.get(key) for key in ('version', 'state', 'started', 'ended', 'run_end')}


def _remove_if_empty(run_folder: str) -> None:
    """A local run folder left empty goes too (a bucket has no empty folders)."""
    if storage.is_object_store(run_folder) or '://' in run_folder:
        return
    for root, _, _ in sorted(os.walk(run_folder), key=lambda x: -len(x[0])):
        if not os.listdir(root):
            os.rmdir(root)
