"""A Kubeflow task whose store hangs (docs/storage.md, "When the store fails"): `python -m
pipeline.kubeflow.entrypoint`, as KFP's launcher starts it in the task's pod, on a SeaweedFS of
its own that the test SIGSTOPs while the task writes to it. The task ends by itself within the
bound its compiled environment gives it (STORE_TIMEOUT_SECONDS), exit 75, with one line naming
the store, the bucket and the task's executor, and no process of it left: KFP then marks the
task failed, and its retry policy or the next scheduled run starts afresh."""
import json
import os
import subprocess
import sys
import time

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import pytest
from tfx.orchestration.kubeflow.v2 import compiler_utils
from tfx.types import standard_artifacts

import seaweedfs as seaweedfs_lib
import warm_python
from core import store_watch

pytestmark = pytest.mark.e2e

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
BOUND = 6       # s, STORE_TIMEOUT_SECONDS (no blip to ride out here: just over a probe)
MARGIN = 120    # the probe, the task's exit, and a loaded 2-core machine


def _argv(tmp_path, root: str) -> list:
    spec = pipeline_spec_pb2.ComponentInputsSpec()
    spec.parameters['pipeline_root'].CopyFrom(compiler_utils.build_parameter_type_spec(root))
    executor_input = {
        'inputs': {'parameterValues': {'pipeline_root': root}},
        'outputs': {'artifacts': {'model': {'artifacts': [{
            'name': 'model', 'uri': f'{root}/run-1/Trainer/salt/model', 'type': {
                'instanceSchema': compiler_utils.get_artifact_schema(
                    standard_artifacts.Model).decode()}}]}},
            'outputFile': str(tmp_path / 'output_metadata.json')}}
    return [sys.executable, '-m', 'pipeline.kubeflow.entrypoint',
            '--executor_class_path', 'store_writer.Executor',
            '--json_serialized_invocation_args', json.dumps(executor_input),
            '--json_serialized_inputs_spec_args', json_format.MessageToJson(spec)]


def test_a_task_whose_store_hangs_ends_within_the_bound(tmp_path):
    store = seaweedfs_lib.Server()
    try:
        bucket = store.new_bucket()
        env = dict(os.environ, **store.env(), **{store_watch.BOUND_VARIABLE: str(BOUND)},
                   PYTHONPATH=os.pathsep.join((REPO, os.path.join(REPO, 'tests', 'support'))))
        log = tmp_path / 'task.log'
        # A child of the warm interpreter, as the launcher stand-in starts every task
        # (kfp_launcher_v2.run_command): the task's own process, without the 5-15 s a fresh
        # interpreter spends importing TFX before the store is touched.
        argv = _argv(tmp_path, f'minio://{bucket}/v2/artifacts')
        task = warm_python.start(argv[1:], REPO, env, str(log), str(log), new_session=True)
        deadline = time.monotonic() + 300
        while not any(k.endswith('checkpoint-1') for k in store.keys(bucket)):
            assert task.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        store.pause()
        hung = time.monotonic()
        try:
            code = task.wait(timeout=BOUND + MARGIN)
        finally:
            store.resume()
            if task.poll() is None:
                os.killpg(task.pid, 9)
        seconds = time.monotonic() - hung
        text = log.read_text()
        print(f'\nFAULT pause (Kubeflow task): exit {code} {seconds:.1f} s after the fault')
        assert code == store_watch.EXIT_STORE_DOWN, text[-3000:]
        assert seconds < BOUND + MARGIN
        line = f'the store at {store.endpoint} (bucket {bucket}) did not answer for '
        said = [row for row in text.splitlines() if row.startswith(f'store_writer: {line}')]
        assert len(said) == 1, text[-3000:]
        listed = subprocess.run(['ps', '-s', str(task.pid), '-o', 'stat=,args='],
                                capture_output=True, text=True).stdout.splitlines()
        assert [row for row in listed if not row.lstrip().startswith('Z')] == []
        # No record was written to the store that did not answer (KFP knows the task failed).
        assert not [k for k in store.keys(bucket) if k.endswith('.json')]
    finally:
        store.stop()
