"""`runner.py --rollback VERSION`: serve a kept version again, as a new highest version.

TF Serving serves the highest version under `<output>/serving/` (its default "latest" policy),
so rolling back cannot just delete the newer versions (they may be wanted back, and a run may
be comparing with them) nor rename an old one upward in place (the old number would vanish). A
rollback copies the kept version into a new highest version with core/versions.py,
the Pusher's own way: staged in a hidden folder, then renamed to the next number, so TF Serving
never sees a partial version. It holds the output folder's run lock (pipeline/runs/runlock.py), so
it never races a local run's push or its retention. It deletes nothing: the next push's
retention (which never deletes the served version) trims serving/ again.

Each rollback is appended, as one JSON line written with one write(), to
`<output>/rollbacks.jsonl`, next to serving/: the report's history reads it (rollback: version
4 = copy of version 1). A file rather than ML Metadata: the store is TFX's record of pipeline
executions (a rollback is none, and TFX's readers of a run would have to skip a foreign
execution type), and the file lives with the serving folder it describes, readable without
ML Metadata.
"""
import datetime
import json
import os
import sys
from typing import List, Optional

from pipeline.runs import runlock
from pipeline.definition.config import PipelineConfig

ROLLBACKS_FILE = 'rollbacks.jsonl'


class RollbackError(Exception):
    """The version cannot be served again; the message is the one line the user sees."""


def read_rollbacks(output_dir: str) -> List[dict]:
    """Every rollback recorded for this output folder, oldest first ([] when none)."""
    path = os.path.join(os.path.abspath(output_dir), ROLLBACKS_FILE)
    if not os.path.isfile(path):
        return []
    records = []
    with open(path, encoding='utf-8') as handle:
        for line in handle:
            try:
                records.append(json.loads(line))
            except ValueError:  # a line cut by a full disk: the others still count
                continue
    return records


def rollback(output_dir: str, version: int, serving: Optional[str] = None) -> dict:
    """Copies <serving>/<version> (serving: <output_dir>/serving unless given, a folder or a
    bucket) to a new highest version; returns its record. The caller holds the output lock.
    RollbackError when the version is not kept or is served already."""
    # TensorFlow: only once the flags are known good.
    from core import serving_labels, versions
    import tensorflow as tf
    serving = serving or os.path.join(os.path.abspath(output_dir), 'serving')
    kept = [v for v in versions.list_versions(serving)
            if tf.io.gfile.exists(os.path.join(serving, str(v), 'saved_model.pb'))]
    if version not in kept:
        raise RollbackError(f'version {version} is not kept under {serving}; kept: '
                            + (', '.join(map(str, kept)) or 'none'))
    served = versions.served_version(serving)
    if served == version:
        raise RollbackError(f'version {version} is already the served one (the highest under '
                            f'{serving}); nothing to do')
    source = os.path.join(serving, str(version))
    if versions.model_digest(source) == versions.model_digest(os.path.join(serving, str(served))):
        raise RollbackError(f'the served version {served} already holds the same model as '
                            f'version {version}; nothing to do')
    versions.remove_leftovers(serving)
    new = versions.push_new(source, serving)
    # The copy becomes stable (what clients get by default); a canary stays one.
    # A folder without models.config names no model: the pipeline's default name.
    name, labels = serving_labels.read_config(serving) or ('', None)
    versions.label(serving, name or PipelineConfig.name, serving_labels.Labels(
        stable=new, canary=labels and labels.canary))
    record = {'time': datetime.datetime.now().isoformat(timespec='seconds'),
              'version': new, 'copy_of': version, 'previously_served': served,
              'digest': versions.model_digest(os.path.join(serving, str(new)))}
    append_record(output_dir, ROLLBACKS_FILE, record)
    return record


def append_record(output_dir: str, file_name: str, record: dict) -> None:
    """Appends record to <output_dir>/<file_name> as one JSON line with one write(): a reader
    never sees half a line, and two appends never interleave."""
    fd = os.open(os.path.join(os.path.abspath(output_dir), file_name),
                 os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (json.dumps(record) + '\n').encode('utf-8'))
    finally:
        os.close(fd)


def output_folder(output: Optional[str], config_file: Optional[str]) -> str:
    """--output, else the config file's output_dir, else runs/default (as --local)."""
    if output:
        return os.path.abspath(output)
    if config_file:
        from pipeline.definition import config_file as config_file_lib
        found = config_file_lib.read(config_file).get('output_dir')
        if found:
            return found
    return os.path.abspath(os.path.join('runs', 'default'))


def serving_folder(folder: str, serving_dir: Optional[str], config_file: Optional[str]) -> str:
    """--serving-dir, else the config file's serving_uri, else <output>/serving (as --local)."""
    if not serving_dir and config_file:
        from pipeline.definition import config_file as config_file_lib
        serving_dir = config_file_lib.read(config_file).get('serving_uri')
    if not serving_dir:
        return os.path.join(folder, 'serving')
    from core import storage
    return storage.to_s3(serving_dir) if '://' in serving_dir else os.path.abspath(serving_dir)


def main(version: int, output: Optional[str], config_file: Optional[str], wait: bool,
         serving_dir: Optional[str] = None) -> int:
    """runner.py --rollback: 0 when done, 2 with a one-line error when it cannot be done."""
    # TensorFlow (for tf.io.gfile) prints C++ start-up lines (CUDA plugins on a CPU machine,
    # at error level) when imported: this command's console is for its one line. Its failures
    # are Python exceptions, so nothing is lost.
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
    try:
        folder = output_folder(output, config_file)
        serving = serving_folder(folder, serving_dir, config_file)
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    from core import storage
    storage.enable_for([serving])
    import tensorflow as tf
    if not tf.io.gfile.isdir(serving):
        print(f'error: nothing to roll back: no serving folder at {serving}', file=sys.stderr)
        return 2
    lock, code = runlock.take(folder, wait, 'roll back when it has finished, or without '
                              '--no-wait to wait for it', 'nothing changed')
    if lock is None:
        return code
    try:
        lock.record(f'rollback-to-{version}')
        record = rollback(folder, version, serving)
    except RollbackError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    finally:
        lock.release()
    print(f'Rolled back: version {record["version"]} = copy of version {version} '
          f'(was serving {record["previously_served"]}); TF Serving serves the highest version: '
          f'{os.path.join(serving, str(record["version"]))}', flush=True)
    return 0
