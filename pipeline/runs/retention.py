"""Retention: after a local run, deletes the artifacts of older runs from pipeline_root.

`runner.py --local --keep-runs K` (pipeline/local/run.py calls `apply` under the output lock it
holds). What stays is decided by pipeline/runs/retention_plan.py from what ML Metadata and the
serving folder say: the newest K runs, every unfinished run, what the training window reads,
and what each serving version under serving/ was trained from and evaluated on (found through
its PushedModel and through its `assets.extra/training_data.json`).

Each deleted artifact is, in this order: marked MARKED_FOR_DELETION in ML Metadata (from then
on TFX's cache ignores it: tfx/orchestration/portable/cache_utils.py takes only LIVE outputs, so
no cache hit ever points at a missing folder), renamed out of sight in its own parent folder,
removed, and marked DELETED. A kill at any point leaves nothing half-deleted visible: the next
retention finishes a MARKED artifact and removes hidden folders left behind.

Also collected: TFX's per-execution scratch folders (`<node>/.system/executor_execution/<id>`,
where a killed execution leaves its `.temp`) of executions that ended, or that were left
RUNNING by a run older than the newest finished one; and the empty checkpoint folders of
finished trainings (`_checkpoints/<node>/<key>`); the checkpoint folders of trainings no kept
run touched (abandoned: only a run retention no longer keeps could resume them); and the logs,
JSON summaries and report pages of runs beyond the newest K. A rollback's copy keeps the Model
of the version it copies (rollbacks.jsonl). Never touched: `_quarantine/` (a failed
ingestion's kept records, small), the checkpoint folder of an unfinished kept training (its
resume point), serving/ (the Pusher's own retention, push.keep_versions), and anything an
execution of another pipeline wrote.

Errors are returned as text for the summary, never raised: a completed run stays completed.
ML Metadata here is this process's (a local run). On Kubeflow, pipeline/kubeflow/retention.py
applies the same plan from the records each task writes beside its outputs (docs/kubeflow.md,
"Retention on Kubeflow"), with remove_path, serving_versions and collect_abandoned_checkpoints from
here.
"""
import dataclasses
import glob
import json
import logging
import os
import shutil
from typing import Dict, List, Optional, Tuple

from ml_metadata import metadata_store
import tensorflow as tf
from ml_metadata.proto import metadata_store_pb2

from core import storage, versions
from pipeline.runs import retention_plan as plan_lib
from pipeline.runs import rollback as rollback_lib
from pipeline.runs import run_files, runlock

TRAINING_DATA = os.path.join('assets.extra', 'training_data.json')   # contract: the window
HIDDEN_PREFIX = '.deleting-'
_SCRATCH = os.path.join('.system', 'executor_execution')
_CHECKPOINTS = '_checkpoints'
_ARTIFACT_STATES = {v: k for k, v in metadata_store_pb2.Artifact.State.items()}
_EXECUTION_STATES = {v: k for k, v in metadata_store_pb2.Execution.State.items()}


@dataclasses.dataclass(frozen=True)
class Outcome:
    kept_runs: int = 0
    unfinished_runs: int = 0
    deleted: int = 0
    deleted_runs: int = 0
    bytes: int = 0
    leftovers: int = 0
    leftover_bytes: int = 0
    abandoned: int = 0              # checkpoint folders of trainings no kept run touched
    abandoned_bytes: int = 0
    old_run_files: int = 0          # runs whose logs, summaries and report pages were deleted
    baselines: int = 0              # drift baselines of windows no serving version was trained on
    baseline_bytes: int = 0
    note: Optional[str] = None      # why nothing was done, or the error that stopped it

    def text(self) -> str:
        """One line for the summary, e.g. 'kept 3 runs, deleted 5 artifacts of 2 runs (41.2 MB)'."""
        if self.note and not (self.deleted or self.leftovers or self.abandoned
                              or self.old_run_files or self.baselines):
            return self.note
        unfinished = f' ({self.unfinished_runs} unfinished)' if self.unfinished_runs else ''
        text = f'kept {self.kept_runs} run{"s" * (self.kept_runs != 1)}{unfinished}, '
        text += (f'deleted {self.deleted} artifact{"s" * (self.deleted != 1)} of '
                 f'{self.deleted_runs} run{"s" * (self.deleted_runs != 1)} '
                 f'({megabytes(self.bytes)})' if self.deleted else 'nothing to delete')
        if self.leftovers:
            text += (f'; removed {self.leftovers} leftover folder{"s" * (self.leftovers != 1)} '
                     f'({megabytes(self.leftover_bytes)})')
        if self.abandoned:
            text += (f'; removed {self.abandoned} abandoned checkpoint folder'
                     f'{"s" * (self.abandoned != 1)} ({megabytes(self.abandoned_bytes)})')
        if self.baselines:
            text += (f'; removed {self.baselines} drift baseline{"s" * (self.baselines != 1)} '
                     f'({megabytes(self.baseline_bytes)})')
        if self.old_run_files:
            text += (f'; removed the logs and report pages of {self.old_run_files} older run'
                     f'{"s" * (self.old_run_files != 1)}')
        return text + (f'; {self.note}' if self.note else '')


def megabytes(size: int) -> str:
    return f'{size / 1e6:.1f} MB'


def folder_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(path) for name in names
               if not os.path.islink(os.path.join(root, name)))


def apply(config, run_id: str, lock: Optional[runlock.OutputLock] = None) -> Outcome:
    """Applies config.retention after run run_id; never raises. Without `lock` (the caller's,
    held), takes the output lock itself and does nothing while another run holds it."""
    keep = config.retention.keep_runs
    if keep == 0:
        return Outcome(note='off (--keep-runs 0): every run is kept')
    if config.metadata_path is None:
        return Outcome(note='not applied: the run root is on cluster storage (local runs only)')
    own = None
    try:
        if lock is None:
            own = runlock.OutputLock(os.path.dirname(config.metadata_path))
            own.acquire(wait=False)
        return _apply(config, run_id, keep)
    except runlock.OutputBusy as busy:
        return Outcome(note=f'not applied: the output is in use by {busy}')
    except Exception as error:  # pylint: disable=broad-except
        logging.exception('Retention failed')
        return Outcome(note=f'failed ({type(error).__name__}: {error}); nothing else is '
                            'affected, details in the log')
    finally:
        if own is not None:
            own.release()


def open_store(metadata_path: str) -> metadata_store.MetadataStore:
    connection = metadata_store_pb2.ConnectionConfig()
    connection.sqlite.filename_uri = metadata_path
    connection.sqlite.connection_mode = metadata_store_pb2.SqliteMetadataSourceConfig.READWRITE
    return metadata_store.MetadataStore(connection)


def _apply(config, run_id: str, keep: int) -> Outcome:
    if not os.path.isfile(config.metadata_path):
        return Outcome(note='nothing recorded yet')
    store = open_store(config.metadata_path)
    runs, artifacts, records = describe(store, config.name)
    served, trained_on = serving_versions(config.serving_dir, config.output_dir)
    root = config.pipeline_root
    plan = plan_lib.decide(runs, artifacts, keep, run_id, root, trained_on, served)
    size, error = 0, None
    for artifact in plan.delete:
        try:
            size += delete(store, records[artifact.id], artifact.uri)
        except OSError as failure:  # this one stays MARKED: the next retention retries it
            logging.warning('Retention could not delete %s: %s', artifact.uri, failure)
            error = error or f'could not delete {artifact.uri}: {failure.strerror or failure}'
    kept = [r for r in runs if r.name in plan.kept_runs]
    count, leftover_bytes = collect_leftovers(root, runs)
    abandoned, abandoned_bytes = collect_abandoned_checkpoints(
        root, min((r.created[0] for r in kept), default=None))
    old_runs = collect_run_files(config.output_dir, set(plan.kept_runs), keep)
    baselines, baseline_bytes = collect_drift_baselines(root, config.serving_dir)
    unfinished = sum(1 for r in kept if not r.finished)
    logging.info('Retention (keep %d runs): kept runs %s; deleted %d artifacts (%d bytes)',
                 keep, list(plan.kept_runs), len(plan.delete), size)
    return Outcome(kept_runs=len(plan.kept_runs) - unfinished, unfinished_runs=unfinished,
                   deleted=len(plan.delete), deleted_runs=len(plan.deleted_runs), bytes=size,
                   leftovers=count, leftover_bytes=leftover_bytes, abandoned=abandoned,
                   abandoned_bytes=abandoned_bytes, old_run_files=old_runs,
                   baselines=baselines, baseline_bytes=baseline_bytes, note=error)


def describe(store, pipeline_name: str) -> Tuple[List[plan_lib.Run],
                                                 Dict[int, plan_lib.Artifact],
                                                 Dict[int, metadata_store_pb2.Artifact]]:
    """The pipeline's runs and the artifacts its executions used, as retention_plan takes
    them, and the ML Metadata records of those artifacts by id."""
    pipeline = store.get_context_by_type_and_name('pipeline', pipeline_name)
    if pipeline is None:
        return [], {}, {}
    ours = {e.id: e for e in store.get_executions_by_context(pipeline.id)}
    events = store.get_events_by_execution_ids(list(ours))
    inputs: Dict[int, set] = {i: set() for i in ours}
    outputs: Dict[int, set] = {i: set() for i in ours}
    for event in events:
        side = outputs if event.type in (metadata_store_pb2.Event.OUTPUT,
                                         metadata_store_pb2.Event.DECLARED_OUTPUT) else inputs
        side[event.execution_id].add(event.artifact_id)
    runs = []
    for context in store.get_contexts_by_type('pipeline_run'):
        mine = [ours[e.id] for e in store.get_executions_by_context(context.id) if e.id in ours]
        if mine:
            runs.append(plan_lib.Run(
                name=context.name, created=(context.create_time_since_epoch, context.id),
                executions=tuple(plan_lib.Execution(
                    id=e.id, run=context.name,
                    state=_EXECUTION_STATES.get(e.last_known_state, 'UNKNOWN'),
                    inputs=frozenset(inputs[e.id]), outputs=frozenset(outputs[e.id]))
                    for e in mine)))
    records = {a.id: a for a in store.get_artifacts_by_id(list({e.artifact_id for e in events}))}
    type_names = {t.id: t.name for t in store.get_artifact_types()}
    described = {i: plan_lib.Artifact(
        id=i, uri=a.uri, type=type_names.get(a.type_id, ''),
        state=_ARTIFACT_STATES.get(a.state, 'UNKNOWN'),
        pushed_to=_string(a, 'pushed_destination') or None,
        window=tuple(window_uris(_string(a, 'window')))) for i, a in records.items()}
    return runs, described, records


def serving_versions(serving_dir: str, output_dir: Optional[str] = None
                     ) -> Tuple[List[Tuple[str, str]], List[Tuple[str, str]]]:
    """([(version folder, reason)], [(span folder it was trained on, reason)]) of serving/.

    A rollback's copy (output_dir's rollbacks.jsonl) names the folder it was copied from too,
    through every rollback in between: no PushedModel names the copy, and the Model it came
    from must outlive the version it was first pushed as."""
    copies = {r.get('version'): r.get('copy_of')
              for r in (rollback_lib.read_rollbacks(output_dir) if output_dir else [])}
    served, trained_on = [], []
    for version in versions.list_versions(serving_dir):
        folder = os.path.join(serving_dir, str(version))
        served.append((folder, f'serving version {version} came from it'))
        source, seen = copies.get(version), {version}
        while source is not None and source not in seen:
            seen.add(source)
            served.append((os.path.join(serving_dir, str(source)),
                           f'serving version {version} is a rollback copy of version {source}'))
            source = copies.get(source)
        text = storage.read_text(os.path.join(folder, TRAINING_DATA))
        if text is not None:   # local, gs:// or s3:// alike
            window = json.dumps(json.loads(text).get('window', []))
            trained_on += [(uri, f'serving version {version} was trained on it')
                           for uri in window_uris(window)]
    return served, trained_on


def _string(artifact: metadata_store_pb2.Artifact, key: str) -> str:
    value = artifact.custom_properties.get(key) or artifact.properties.get(key)
    return value.string_value if value is not None else ''


def window_uris(text: str) -> List[str]:
    """The span folders of a `window` JSON list (the window contract: entries with a uri)."""
    if not text:
        return []
    return [entry['uri'] for entry in json.loads(text) if entry.get('uri')]


def delete(store, record: metadata_store_pb2.Artifact, uri: str) -> int:
    """Deletes one artifact (see the module docstring for the order); returns its bytes."""
    record.state = metadata_store_pb2.Artifact.MARKED_FOR_DELETION
    store.put_artifacts([record])
    size = remove_path(uri)
    record.state = metadata_store_pb2.Artifact.DELETED
    store.put_artifacts([record])
    return size


def remove_path(uri: str) -> int:
    """Deletes a file or folder, local or in a bucket; returns its bytes (0 when absent).

    A local one is renamed out of sight in its own parent first (HIDDEN_PREFIX), so a kill
    leaves nothing half-deleted in sight. A bucket has no rename (a copy per object): there it
    is deleted where it is; the caller's record (MARKED in ML Metadata locally) says it was
    being deleted, so the next retention finishes it."""
    if _is_uri(uri):
        return _remove_uri(uri)
    if not os.path.lexists(uri):
        return 0
    parent, name = os.path.split(os.path.normpath(uri))
    hidden = os.path.join(parent, HIDDEN_PREFIX + name)
    shutil.rmtree(hidden, ignore_errors=True)   # from a killed retention
    os.rename(uri, hidden)
    size = folder_size(hidden) if os.path.isdir(hidden) else os.path.getsize(hidden)
    _remove(hidden)
    return size


def _is_uri(path: str) -> bool:
    return '://' in path


def _remove_uri(uri: str) -> int:
    """Deletes every object under uri (or the one object); returns bytes. Nothing there (S3 has
    no empty folders) is 0, not an error. On S3 by one listing and batched deletes
    (storage.remove); elsewhere (gs://) through tf.io.gfile."""
    if storage.is_object_store(uri):
        return storage.remove(uri)
    gfile = tf.io.gfile
    if not gfile.isdir(uri):
        if not gfile.exists(uri):
            return 0
        size = gfile.stat(uri).length
        gfile.remove(uri)
        return size
    size = sum(_object_size(os.path.join(root, name))
               for root, _, names in gfile.walk(uri) for name in names)
    gfile.rmtree(uri)
    return size


def _object_size(uri: str) -> int:
    """An object's bytes; 0 for a name a listing gives without an object behind it (a store
    with folder entries, e.g. SeaweedFS's filer, lists an emptied folder as a name)."""
    try:
        return tf.io.gfile.stat(uri).length
    except tf.errors.NotFoundError:
        return 0


def _remove(path: str) -> None:
    (shutil.rmtree if os.path.isdir(path) and not os.path.islink(path) else os.remove)(path)


def collect_leftovers(root: str, runs: List[plan_lib.Run]) -> Tuple[int, int]:
    """Removes what executions leave behind (module docstring); returns (folders, bytes)."""
    finished = [r.created for r in runs if r.finished]
    newest_finished = max(finished) if finished else None
    ended = {e.id for r in runs for e in r.executions
             if e.state not in plan_lib.UNFINISHED
             or (newest_finished is not None and r.created < newest_finished)}
    if _is_uri(root):
        return _collect_uri_scratch(root, ended)
    doomed = []
    for scratch in glob.glob(os.path.join(root, '*', _SCRATCH, '*')):
        name = os.path.basename(scratch)
        if name.isdigit() and int(name) in ended:
            doomed.append(scratch)
    doomed += glob.glob(os.path.join(root, '*', '*', HIDDEN_PREFIX + '*'))
    count, size = 0, 0
    for path in doomed:
        held = folder_size(path) if os.path.isdir(path) else os.path.getsize(path)
        _remove(path)
        # An ended execution's empty scratch folder is removed without a word; one that held
        # something (a killed execution's .temp) is counted.
        count, size = count + (held > 0), size + held
    for folder in glob.glob(os.path.join(root, _CHECKPOINTS, '*', '*')):
        if os.path.isdir(folder) and not any(os.scandir(folder)):
            os.rmdir(folder)   # a finished training's: a resume needs a non-empty one
    return count, size


def _collect_uri_scratch(root: str, ended) -> Tuple[int, int]:
    """collect_leftovers on a bucket: the ended executions' scratch folders. Nothing there is
    hidden by renaming, and a bucket holds no empty checkpoint folder."""
    count, size = 0, 0
    for scratch in tf.io.gfile.glob(os.path.join(root, '*', _SCRATCH, '*')):
        name = os.path.basename(scratch.rstrip('/'))
        if name.isdigit() and int(name) in ended:
            held = _remove_uri(scratch)
            count, size = count + (held > 0), size + held
    return count, size


def newest_write_ms(folder: str) -> Optional[float]:
    """When anything under folder was last written (ms since the epoch), or None if empty."""
    if _is_uri(folder):
        stamps = [tf.io.gfile.stat(os.path.join(root, name)).mtime_nsec / 1e6
                  for root, _, names in tf.io.gfile.walk(folder) for name in names]
    else:
        stamps = [os.path.getmtime(os.path.join(root, name)) * 1000
                  for root, _, names in os.walk(folder) for name in names]
    return max(stamps, default=None)


def collect_abandoned_checkpoints(root: str, oldest_kept_ms: Optional[float]) -> Tuple[int, int]:
    """Deletes the checkpoint folders of trainings no kept run touched: written to last before
    the oldest kept run started, they can only be resumed by a run with the same data and
    settings as a run retention no longer keeps. An unfinished kept run's resume point was
    written after it started, so it stays. Returns (folders, bytes)."""
    if oldest_kept_ms is None:
        return 0, 0
    pattern = os.path.join(root, _CHECKPOINTS, '*', '*')
    folders = tf.io.gfile.glob(pattern) if _is_uri(root) else glob.glob(pattern)
    count, size = 0, 0
    for folder in folders:
        written = newest_write_ms(folder)
        if written is not None and written < oldest_kept_ms:
            count, size = count + 1, size + _remove_folder(root, folder)
    return count, size


def _remove_folder(root: str, folder: str) -> int:
    """Deletes a folder under root (a local folder or a bucket path); returns its bytes."""
    if _is_uri(root):
        return _remove_uri(folder)
    held = folder_size(folder)
    shutil.rmtree(folder)
    return held


def collect_drift_baselines(root: str, serving_dir: str) -> Tuple[int, int]:
    """Deletes the drift baselines (`<root>/_drift/<window key>`, components/drift/
    training_data.py) of windows no version under serving/ was trained on. DriftCheck compares
    a new span only with the served version's window, and a version the Pusher's retention
    removed is never served again (a rollback serves a kept one, whose copy records its
    window), so such a baseline is never read again. Returns (folders, bytes)."""
    from components.drift import training_data   # TFDV: imported when retention runs only
    keys = set()
    for version in versions.list_versions(serving_dir):
        window = training_data.read_window(os.path.join(serving_dir, str(version)))
        if window:
            keys.add(training_data.cache_key(window))
    pattern = os.path.join(root, training_data.CACHE_FOLDER, '*')
    count, size = 0, 0
    for folder in (tf.io.gfile.glob(pattern) if _is_uri(root) else glob.glob(pattern)):
        if os.path.basename(folder.rstrip('/')) not in keys:
            count, size = count + 1, size + _remove_folder(root, folder)
    return count, size


def collect_run_files(output_dir: str, kept_runs, keep: int) -> int:
    """Deletes the per-run logs, JSON summaries and report pages of runs beyond the newest
    `keep` (run ids sort as times) that retention does not keep; returns how many runs'.
    report.html (the newest run's page) stays. Runs that never reached ML Metadata count by
    their log alone."""
    logs_dir = os.path.join(output_dir, run_files.LOGS_DIR)
    if not os.path.isdir(logs_dir):
        return 0
    run_ids = sorted({name[:-len('.log')] for name in os.listdir(logs_dir)
                      if name.endswith('.log') and name[:4].isdigit()}, reverse=True)
    doomed = []
    for run_id in run_ids[keep:]:
        if run_id in kept_runs:
            continue
        report = os.path.join(output_dir, run_files.REPORTS_DIR, run_files.run_file_name(run_id))
        doomed += [os.path.join(logs_dir, f'{run_id}.log'),
                   os.path.join(logs_dir, f'{run_id}.summary.json'), report + '.html', report]
    for path in doomed:
        if os.path.lexists(path):
            _remove(path)
    return len(doomed) // 4
