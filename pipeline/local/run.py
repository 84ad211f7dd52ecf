"""Runs the pipeline on this machine (LocalDagRunner) and reports that run, and only that run.

What `runner.py --local` does once its flags are a config:
  1. lock the output folder (pipeline/runs/runlock.py): a second run waits, or with --no-wait exits
  2; 2. name the run (TFX's pipeline_run_id) and send everything printed to
     `<output>/logs/<run>.log`, keeping the console for one line per stage
     (pipeline/local/console.py);
  3. run, delete older runs' artifacts (--keep-runs, pipeline/runs/retention.py), then read that
     run back from ML Metadata by its name, print the summary and write the report. A stage
     that fails stops the run: the summary names it with the first lines of its error, the
     traceback is in the log, exit code 1. Ctrl-C prints one line and exits 130;
  4. write the run's JSON summary next to its log and notify (--notify, --on-finish;
     pipeline/runs/notify.py), for a completed or failed run, not after Ctrl-C.

TensorFlow, TFX and Beam are imported only after the output is redirected: TensorFlow's C++
start-up lines would otherwise reach the console.
"""
import dataclasses
import datetime
import logging
import os
import signal
import sys
import threading
from typing import List, Optional

from core import storage, store_watch
from pipeline.definition import config as config_lib
from pipeline.runs import logs
from pipeline.runs import run_files, runlock

_MAX_ERROR_LINES = 8   # of a failed stage's error in the summary; the log has all of it


def run(config: config_lib.PipelineConfig, wait: bool = True) -> int:
    """Returns the exit code: 0 when the run completed, 1 when a stage failed, 2 when the
    output is busy and wait is False or a bucket it names cannot be reached; on Ctrl-C the
    process exits with 130."""
    problem = storage.unreachable((config.ingest.data_dir, config.pipeline_root,
                                   config.serving_dir))
    if problem:  # before anything runs: a config error, like a bad flag
        print(f'error: {problem}', file=sys.stderr)
        return 2
    output = os.path.abspath(config.output_dir)
    os.makedirs(output, exist_ok=True)
    lock, code = runlock.take(output, wait, 'run again when it has finished, or without '
                              '--no-wait to wait for it', 'nothing ran')
    if lock is None:
        return code
    try:
        # TFX's own format, made here so that this process knows which run is its own.
        run_id = datetime.datetime.now().isoformat()
        lock.record(run_id)
        log_path = os.path.join(output, run_files.LOGS_DIR, f'{run_id}.log')
        with logs.to_file(log_path, logs.is_verbose()) as stream:
            try:
                return _run(config, run_id, log_path, stream, lock)
            except KeyboardInterrupt:  # outside the stages (those say where they stopped)
                exit_interrupted(stream, 'interrupted; run the same command to resume')
    finally:
        lock.release()


def first_lines(error: BaseException) -> List[str]:
    """The lines of an error a summary shows: a data error's message, else type and message."""
    # Imported here, like everything heavy: only once the output goes to the log.
    from components.gate.anomalies import DataAnomaliesError
    from components.ingest.formats.rules import IngestionError
    text = str(error).strip()
    if not isinstance(error, (DataAnomaliesError, IngestionError)) or not text:
        text = f'{type(error).__name__}: {text}' if text else type(error).__name__
    lines = text.splitlines()
    if len(lines) > _MAX_ERROR_LINES:
        lines = lines[:_MAX_ERROR_LINES] + [f'... ({len(lines) - _MAX_ERROR_LINES} more lines '
                                            'in the log)']
    return lines


def _run(config, run_id: str, log_path: str, stream, lock) -> int:
    # TensorFlow, TFX and Beam: imported only now that the output goes to the log
    # (_run_watched imports the rest).
    from pipeline.local import console as console_lib
    from pipeline.runs import summary as summary_lib

    console = console_lib.Console(stream, verbose=logs.is_verbose())
    console.line(f'Run {run_id}; log: {log_path}')
    # Before the first file access: TensorFlow's s3:// scheme, and the exit code kept (storage.py).
    paths = (config.ingest.data_dir, config.pipeline_root, config.serving_dir)
    storage.enable_for(paths)
    read = lambda: summary_lib.read_run(config.metadata_path, run_id)  # noqa: E731
    stages = console_lib.StageLines(console, read)
    # From here on, a store that stops answering ends the run within the bound (the Beam mode
    # is known once the input was listed: _run_watched says it then).
    watch = store_watch.Watch(
        {storage.bucket_of(p) for p in paths if p and storage.is_object_store(p)},
        config.store_timeout_minutes * 60, lambda down: end_store_down(
            config, run_id, log_path, console, stages.current, None, down)).start()
    try:
        return _run_watched(config, run_id, log_path, console, stages, read, watch, lock)
    finally:
        watch.stop()


def _run_watched(config, run_id, log_path, console, stages, read, watch, lock) -> int:
    from training import progress as progress_lib
    from pipeline.definition import beam_mode, factory
    from pipeline.local import console as console_lib
    from pipeline.runs import notify, retention
    from pipeline.runs import summary as summary_lib
    from pipeline.runs import summary_text
    from pipeline.report import page as report_lib
    from tfx.dsl.compiler import compiler
    from tfx.dsl.compiler import constants
    from tfx.orchestration.portable import runtime_parameter_utils
    from tfx.orchestration.local import local_dag_runner

    beam_args, beam_reason = beam_mode.resolve(config.beam_args, config.ingest.data_dir,
                                               (config_lib.SETUP_FILE_ARG,))
    config = dataclasses.replace(config, beam_args=beam_args)
    logging.info('Beam: %s (%s)', beam_reason, ' '.join(beam_args))
    watch.on_down = lambda down: end_store_down(
        config, run_id, log_path, console, stages.current, beam_reason, down)
    progress = console_lib.TrainingProgress(console)
    logging.getLogger('absl').addHandler(stages)
    unsubscribe = progress_lib.subscribe(progress)
    failure = None
    try:
        # LocalDagRunner.run() would name the run itself (now().isoformat()) and not say so:
        # compile here and bind the run id, which TFX then keeps.
        ir = compiler.Compiler().compile(factory.create_pipeline(config))
        runtime_parameter_utils.substitute_runtime_parameter(
            ir, {constants.PIPELINE_RUN_ID_PARAMETER_NAME: run_id})
        local_dag_runner.LocalDagRunner().run_with_ir(ir)
    except KeyboardInterrupt:
        exit_interrupted(console.stream, stages.interrupted_message(progress.last))
    except Exception as error:  # pylint: disable=broad-except
        # Any failure, data or bug: the summary says where and why, the log keeps the traceback.
        logging.exception('The run failed')
        down = watch.check()  # a stage that failed as its store went away: that is the reason
        if down is not None:
            end_store_down(config, run_id, log_path, console, stages.current, beam_reason, down)
        lines = first_lines(error)
        stages.failed(lines[0])
        failure = (stages.current or 'pipeline', '\n'.join(lines))
    finally:
        progress.close()
        unsubscribe()
        logging.getLogger('absl').removeHandler(stages)
    # Older runs' artifacts, under the lock this run holds; it never raises (errors are shown).
    kept = retention.apply(config, run_id, lock)
    summary = read() or summary_lib.RunSummary(run_id=run_id, states={}, outputs={})
    summary = dataclasses.replace(summary, failure=failure, beam=beam_reason,
                                  retention=kept.text())
    console.line(summary_text.format_summary(summary))
    report = report_lib.write_report(summary, config.output_dir, pipeline_name=config.name,
                                     serving_dir=config.serving_dir)
    console.line(f'Report: {report}')
    code = 0
    if failure is not None:
        console.line(f'Run stopped in {failure[0]}; details in {log_path}')
        code = 1
    # Last, for every outcome: the summary file, then --notify / --on-finish. A failure there
    # is one console line and never changes the exit code (pipeline/runs/notify.py).
    notify.after_run(config, summary, code, log_path, report, console.line)
    return code


_ending = threading.Lock()
# The end of a run whose store stopped answering must itself be bounded: whatever of it hangs,
# the process exits this long after it began.
_END_SECONDS = 30.0


def end_store_down(config, run_id: str, log_path: str, console, stage_id: Optional[str],
                   beam_reason: Optional[str], down: store_watch.StoreDown) -> None:
    """Ends the run because its store did not answer (core/store_watch.py): one line on the
    console, the running stage FAILED in ML Metadata, the summary file and notifications, every
    process of the run killed, exit 75. Nothing here asks the store: no retention (it would
    delete from a store that does not answer, and the next run needs what is there) and no
    report (it reads the serving folder). Called from the watch's thread, or the main thread's
    failure path; never returns, and a second caller waits for the first's exit."""
    from pipeline.runs import notify, stages as stages_lib, summary as summary_lib
    from pipeline.runs import unfinished
    _ending.acquire()
    threading.Timer(_END_SECONDS, os._exit, (store_watch.EXIT_STORE_DOWN,)).start()
    stage = stages_lib.stage(stage_id) if stage_id else None
    line = down.line(stage and stage.display_name,
                     store_watch.current_operation() or (stage and stage.store_work))
    console.line(line)
    try:
        marked = unfinished.mark_failed(config.metadata_path, run_id)
        logging.info('Marked FAILED in ML Metadata: %s', ', '.join(marked) or 'nothing running')
        summary = summary_lib.read_run(config.metadata_path, run_id) or summary_lib.RunSummary(
            run_id=run_id, states={}, outputs={})
        # The serving folder is on the store: the summary's "served now" would ask it.
        properties = {node: {k: v for k, v in values.items() if k != 'serving_dir'}
                      for node, values in summary.execution_properties.items()}
        summary = dataclasses.replace(
            summary, execution_properties=properties, beam=beam_reason,
            failure=(stage_id or 'pipeline', line),
            retention='not applied: the store did not answer')
        notify.after_run(config, summary, store_watch.EXIT_STORE_DOWN, log_path, None,
                         console.line)
    except Exception:  # pylint: disable=broad-except  (the line is out; the exit must follow)
        logging.exception('Recording the failed run')
    buffers = storage.remove_upload_buffers([os.getpid(), *store_watch.descendants()])
    killed = store_watch.kill_descendants()
    logging.info('Run ended: the store did not answer; processes killed: %s; unsent upload '
                 'buffers deleted: %s', killed or 'none', buffers or 'none')
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    console.stream.flush()
    os._exit(store_watch.EXIT_STORE_DOWN)  # pylint: disable=protected-access


def exit_interrupted(stream, message: str) -> None:
    """Ctrl-C: one line, exit 130. The process group got SIGINT too, so Beam's worker
    processes are ending on their own; os._exit skips interpreter shutdown, which would wait for
    their threads and print their tracebacks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt this
    logging.info(message)
    stream.write(message + '\n')
    stream.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)  # pylint: disable=protected-access
