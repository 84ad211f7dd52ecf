"""Fixtures of the end-to-end tests: runs that several files read (one run, many tests)."""
import os
import re
import sys

import pytest

from helpers import copy_digits, run_command, run_pipeline, version_folders


@pytest.fixture(scope='session')
def served_digits(tmp_path_factory):
    """One served model, read by three e2e files: `runner.py --local --config smoke` on 3 classes
    x 30 digits serves version 1; then, in this order and before any test changes the output,
    what the readers add to it: the same pipeline again (every stage cached;
    test_pipeline_e2e.py), four other digit classes into the same output (not pushed;
    test_serving_guard_e2e.py), and a rerun where only the Pusher's setting changed
    (test_serving_e2e.py). What a reader asserts on is recorded here, when its step ran: the
    outputs are shared, and test_pipeline_e2e.py's last test goes on to retrain into them.
    Each step is the one its test file ran on an output of its own before (one smoke run and its
    serving folder instead of three)."""
    import dataclasses
    import types

    from tfx import v1 as tfx

    import runner
    from components.push.params import PushParams
    from pipeline.definition import beam_mode
    from pipeline.definition import config as config_lib
    from pipeline.definition import factory, presets
    from pipeline.runs import summary as summary_lib
    from pipeline.report import page

    base = tmp_path_factory.mktemp('served_digits')
    data = copy_digits(str(base / 'data'), classes=('0', '1', '2'), per_class=30)
    argv = ['--local', '--config', 'smoke', '--data', data, '--output', str(base / 'out'),
            '--schema', config_lib.DIGITS_SCHEMA]
    first_run = run_command([sys.executable, 'runner.py', *argv])
    assert first_run.returncode == 0, first_run.stderr[-3000:]
    cfg, _ = presets.from_args(runner.build_parser().parse_args(argv))
    # The Beam args runner.py chose (part of every Beam stage's cache key), for the in-process
    # runs below to hit the cache as a second `runner.py` would.
    cfg = dataclasses.replace(cfg, beam_args=beam_mode.resolve(
        cfg.beam_args, cfg.ingest.data_dir, (config_lib.SETUP_FILE_ARG,))[0])
    shared = types.SimpleNamespace(cfg=cfg, data=data, first_run=first_run)
    shared.first = summary_lib.read_latest_run(cfg.metadata_path, cfg.name)
    shared.served_after_first = version_folders(cfg.serving_dir)
    shared.served_files_after_first = set(_snapshot(cfg.serving_dir))
    report = os.path.join(os.path.abspath(cfg.output_dir), page.REPORT_FILE)
    with open(report, encoding='utf-8') as handle:
        shared.report_text = handle.read()
    shared.report_path = report
    shared.report_picture_sizes = {
        name: os.path.getsize(os.path.join(os.path.dirname(report), name))
        for name in re.findall(r'<img src="([^"]+)"', shared.report_text)}

    # test_pipeline_e2e.py: nothing changed, every stage is served from the cache.
    shared.second = run_pipeline(cfg)
    shared.served_files_before_guard = _snapshot(cfg.serving_dir)

    # test_serving_guard_e2e.py: another label set into the same output is not pushed.
    other = copy_digits(str(base / 'other'), classes=('3', '4', '5', '6'), per_class=30)
    shared.guard_run = run_command(
        [sys.executable, 'runner.py', '--local', '--config', 'smoke', '--data', other,
         '--output', cfg.output_dir, '--schema', config_lib.DIGITS_SCHEMA])
    shared.guarded = summary_lib.read_latest_run(cfg.metadata_path, cfg.name)
    shared.served_after_guard = version_folders(cfg.serving_dir)
    shared.served_files_after_guard = _snapshot(cfg.serving_dir)

    # test_serving_e2e.py: only the Pusher's setting changed.
    changed = dataclasses.replace(cfg, push=PushParams(keep_versions=3))
    tfx.orchestration.LocalDagRunner().run(factory.create_pipeline(changed))
    shared.pusher_rerun = summary_lib.read_latest_run(cfg.metadata_path, cfg.name)
    shared.served_after_pusher_rerun = version_folders(cfg.serving_dir)
    return shared


def _snapshot(folder):
    """Every file under folder: relative path -> bytes."""
    return {os.path.relpath(os.path.join(root, f), folder):
            open(os.path.join(root, f), 'rb').read()
            for root, _, files in os.walk(folder) for f in files}


@pytest.fixture(scope='module')
def store(seaweedfs):
    """The SeaweedFS server, with this process configured for it as the `s3` fixture does, for a
    module's scheduled runs on an s3:// root (test_kubeflow_s3_retrain.py,
    test_kubeflow_retention.py): the compile lists the landing bucket, the checks read the
    bucket."""
    from core import storage
    with pytest.MonkeyPatch.context() as patch:
        for key, value in seaweedfs.env().items():
            patch.setenv(key, value)
        for key, value in storage.tensorflow_variables(os.environ).items():
            patch.setenv(key, value)
        storage.enable()
        yield seaweedfs
