"""Runs the pipeline on this machine (LocalDagRunner) and prints the run summary.

What `runner.py --local` does once its flags are a config: run, read the run back from ML
Metadata, print the summary and write the report (report.html). Data problems (anomalies, rejected images) stop the run with their message and the
summary, without a traceback; anything else is a bug and propagates.
"""
import os
import sys

from tfx import v1 as tfx

from components.gate.executor import DataAnomaliesError
from components.ingest.executor import IngestionError
from pipeline import config as config_lib
from pipeline import pipeline as pipeline_lib
from pipeline import summary as summary_lib
from pipeline.report import page as report_lib


def run(config: config_lib.PipelineConfig) -> int:
    """Returns the exit code: 0 when the run completed, 1 when the data stopped it."""
    os.makedirs(config.output_dir, exist_ok=True)
    stopped = None
    try:
        tfx.orchestration.LocalDagRunner().run(pipeline_lib.create_pipeline(config))
    except (DataAnomaliesError, IngestionError) as error:
        stopped = error  # a data problem, explained in the message: no traceback needed
    summary = summary_lib.read_latest_run(config.metadata_path, config.name)
    if summary is not None:
        print(summary_lib.format_summary(summary))
        print(f'Report: {report_lib.write_report(summary, config.output_dir)}')
    if stopped is not None:
        print(f'\nRun stopped: {stopped}', file=sys.stderr)
        return 1
    return 0
