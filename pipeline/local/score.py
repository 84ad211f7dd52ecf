"""`runner.py --score DIR`: scores a folder with a served version, on this machine.

    1. lock the output folder (pipeline/runs/runlock.py), as a local run or a rollback does: a push
       or retention never changes serving/ while a version is chosen and read;
    2. resolve the version (the served one, or --version N) and read its input spec, so that
       ingestion stores the input as that model parses it (pipeline/definition/scoring.py);
    3. run the scoring pipeline (LocalDagRunner; Beam in-process for small inputs, as for
       training: pipeline/definition/beam_mode.py), one console line per stage as it ends and, while
       a stage runs longer than PROGRESS_SECONDS, a line saying which one and for how long;
       the full log goes to `<output>/logs/<run>.log`;
    4. print the summary: the model version, inputs = scored + quarantined, and the result
       folder `<output>/scores/<run>/`, published in one rename (components/score/results.py);
       then remove the run's TFX artifacts under `<output>/scoring/`, which only duplicate it.
Exit codes: 0 scored, 1 a stage failed, 2 bad arguments or output busy, 130 Ctrl-C.
"""
import dataclasses
import datetime
import json
import logging
import os
import shutil
import sys
import threading

from core import storage
from pipeline.definition import config as config_lib
from pipeline.runs import logs
from pipeline.runs import run_files, runlock

PROGRESS_SECONDS = 30.0   # a line per this much time spent in one stage
SCORES_DIR = 'scores'


class Heartbeat(threading.Thread):
    """Says which stage runs, and for how long, every `interval` seconds it keeps running:
    the stock BulkInferrer reports no progress of its own, and a long input should not look
    like a hung one."""

    def __init__(self, stages, line, interval: float = PROGRESS_SECONDS):
        super().__init__(daemon=True)
        self._stages, self._line, self._interval = stages, line, interval
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self._interval):
            current = self._stages.current
            if current:
                self._line(f'  {current}: running for {self._stages.elapsed():.0f} s')

    def stop(self) -> None:
        self._done.set()
        self.join()


def _is_folder(path: str) -> bool:
    """A local folder, or a bucket folder holding at least one object (listed without
    TensorFlow, whose import would print its start-up lines before the log takes them)."""
    if storage.is_object_store(path):
        return bool((storage.sizes(path) or (0, 0))[0])
    return os.path.isdir(path)


def run(config: config_lib.PipelineConfig, score, wait: bool = True) -> int:
    """score: pipeline.definition.scoring.ScoreConfig (output_dir is chosen here)."""
    output = os.path.abspath(config.output_dir)
    problem = storage.unreachable((score.input_dir, config.serving_dir))
    if problem:
        print(f'error: {problem}', file=sys.stderr)
        return 2
    if not _is_folder(score.input_dir):
        print(f'error: nothing to score: {score.input_dir} is not a folder', file=sys.stderr)
        return 2
    if not _is_folder(config.serving_dir):
        print(f'error: no model to score with: no serving folder under {output} (a run that '
              'pushes a model creates it; --output names the run folder)', file=sys.stderr)
        return 2
    lock, code = runlock.take(output, wait, 'score when it has finished, or without '
                              '--no-wait to wait for it', 'nothing was scored')
    if lock is None:
        return code
    try:
        stamp = datetime.datetime.now()
        run_id = 'score-' + stamp.isoformat()
        lock.record(run_id)
        log_path = os.path.join(output, run_files.LOGS_DIR, f'{run_id}.log')
        with logs.to_file(log_path, logs.is_verbose()) as stream:
            return _run(config, score, run_id, stamp.strftime('%Y%m%dT%H%M%S'), log_path,
                        stream)
    finally:
        lock.release()


def _model_spec(model_dir: str):
    from core import inputs
    from training import export
    path = os.path.join(model_dir, export.INPUT_SPEC_FILE)
    if not os.path.isfile(path):  # a model that records no input spec: the config decides
        return None
    with open(path, encoding='utf-8') as handle:
        return inputs.InputSpec.from_json(handle.read())


def _run(config, score, run_id: str, stamp: str, log_path: str, stream) -> int:
    from tfx.dsl.compiler import compiler
    from tfx.dsl.compiler import constants
    from tfx.orchestration.local import local_dag_runner
    from tfx.orchestration.portable import runtime_parameter_utils

    from components.score import results, served
    from pipeline.definition import beam_mode
    from pipeline.local import console as console_lib
    from pipeline.local import run as local_run
    from pipeline.definition import scoring
    from pipeline.runs import summary as summary_lib

    storage.enable_for((score.input_dir, config.serving_dir))

    console = console_lib.Console(stream, verbose=logs.is_verbose())
    console.line(f'Scoring run {run_id}; log: {log_path}')
    try:
        version, model_dir = served.resolve(config.serving_dir, score.version)
    except served.ScoringError as error:
        console.line(f'error: {error}')
        return 2
    final = os.path.join(os.path.abspath(config.output_dir), SCORES_DIR, f'{stamp}-v{version}')
    score = dataclasses.replace(score, version=version, output_dir=final)
    measured = beam_mode.input_size(score.input_dir)
    beam_args, beam_reason = beam_mode.resolve(config.beam_args, score.input_dir,
                                               (config_lib.SETUP_FILE_ARG,))
    config = dataclasses.replace(config, beam_args=beam_args)
    console.line(f'Scoring {measured[0]:,} files under {score.input_dir} with model version '
                 f'{version} ({model_dir})')
    console.line(f'Beam: {beam_reason}')
    logging.info('Beam args: %s', ' '.join(beam_args))
    read = lambda: summary_lib.read_run(scoring.metadata_path(config), run_id)  # noqa: E731
    stages = console_lib.StageLines(console, read)
    logging.getLogger('absl').addHandler(stages)
    heartbeat = Heartbeat(stages, console.line)
    heartbeat.start()
    try:
        ir = compiler.Compiler().compile(
            scoring.create_pipeline(config, score, _model_spec(model_dir)))
        runtime_parameter_utils.substitute_runtime_parameter(
            ir, {constants.PIPELINE_RUN_ID_PARAMETER_NAME: run_id})
        local_dag_runner.LocalDagRunner().run_with_ir(ir)
    except KeyboardInterrupt:
        local_run.exit_interrupted(stream, 'interrupted; nothing was published; run the same '
                                'command to score again')
    except Exception as error:  # pylint: disable=broad-except
        logging.exception('Scoring failed')
        lines = local_run.first_lines(error)
        stages.failed(lines[0])
        if len(lines) > 1 or len(lines[0]) > 90:  # more than the stage's line could show
            console.line('\n'.join(lines))
        console.line(f'Scoring stopped in {stages.current or "the pipeline"}; nothing was '
                     f'published; details in {log_path}')
        return 1
    finally:
        heartbeat.stop()
        logging.getLogger('absl').removeHandler(stages)
    _remove_artifacts(read(), scoring.root(config))
    return _report(console, final, results)


def _remove_artifacts(summary, root: str) -> None:
    """After a published result: the run's TFX artifacts (the input as Examples, the model's
    links, the prediction logs) would only duplicate it, run after run; they go. A failed
    run keeps them, to look into."""
    for artifacts in (summary.outputs.values() if summary else ()):
        for artifact in artifacts:
            if artifact.uri.startswith(root + os.sep) and os.path.isdir(artifact.uri):
                shutil.rmtree(artifact.uri)
                logging.info('Removed %s (the result folder holds what it served for)',
                             artifact.uri)


def _report(console, final: str, results) -> int:
    with open(os.path.join(final, results.SUMMARY_FILE), encoding='utf-8') as handle:
        summary = json.load(handle)
    console.line(results.summary_line(summary))
    files = summary['files']
    console.line(f'Predictions: {os.path.join(final, files["jsonl"])}, {files["csv"]}')
    if summary['quarantined']:
        console.line(f'Quarantined, with reasons: {os.path.join(final, files["quarantine"])}')
    return 0
