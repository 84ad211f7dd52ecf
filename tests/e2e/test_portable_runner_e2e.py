"""End-to-end (e2e): the whole pipeline on Beam's portable path, the one Flink, Spark and Dataflow
take: PortableRunner with an embedded job server and LOOPBACK workers (this process runs the
SDK harness). Given --beam-args are used as they are (the project's setup file added, as they name
no dependency), so every Beam stage (ingestion, statistics, TFMA) goes through the Runner API and
the Fn API instead of the DirectRunner.
"""
import pytest

from pipeline.config import SETUP_FILE_ARG

from helpers import copy_digits, run_command, run_log, runner_command

pytestmark = pytest.mark.e2e

PORTABLE = '--runner=PortableRunner --job_endpoint=embed --environment_type=LOOPBACK'


def test_the_pipeline_runs_and_pushes_on_the_portable_runner(tmp_path):
    data, out = copy_digits(str(tmp_path / 'data')), str(tmp_path / 'out')
    result = run_command(runner_command(data, out, '--config', 'smoke',
                                        f'--beam-args={PORTABLE}'))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f'  beam: as given: {PORTABLE} (+ {SETUP_FILE_ARG})' in result.stdout.splitlines()
    assert '  examples: train 80, eval 10, rejected 0 of 90 records' in result.stdout
    assert 'pushed: version 1 at' in result.stdout
    log = run_log(result.stdout)
    # The portable runner's job service really ran the three Beam stages (ingestion,
    # statistics, TFMA): each is a submitted job that reached DONE.
    assert "Running job 'job-" in log
    assert log.count('Completed job in') >= 3 and log.count('Job state changed to DONE') >= 3
    # With a dependency flag among the args, TFX never packages itself into a temporary folder
    # (it did in every Beam stage, leaving each folder behind).
    assert 'Attempting to infer TFX Python dependency' not in log
    assert log.count('Nonempty beam arg setup_file already includes dependency') >= 3
