"""A local stand-in for KFP's launcher: runs a compiled pipeline's tasks as the cluster would.

For each task, in dependency order, it builds the task's ExecutorInput (input artifacts from the
upstream tasks' executor outputs, fresh output URIs under the pipeline root, the constant
parameters), substitutes it for `{{$}}`, and runs the container's command and args exactly as
the spec gives them (the pre-cache-check hook first, when there is one and the mode runs it) in
a subprocess. Only
`python`, the image's interpreter, is replaced by this machine's. There is no cache: every task
runs, as on a cluster with caching off. Test support only (no TFX imports).
"""
import json
import os
import subprocess
import sys
from typing import Dict, List

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_job(path: str) -> pipeline_spec_pb2.PipelineJob:
    with open(path) as handle:
        return json_format.Parse(handle.read(), pipeline_spec_pb2.PipelineJob(),
                                 ignore_unknown_fields=False)


def topological_order(spec: pipeline_spec_pb2.PipelineSpec) -> List[str]:
    tasks, order = spec.root.dag.tasks, []
    while len(order) < len(tasks):
        ready = sorted(n for n, t in tasks.items()
                       if n not in order and set(t.dependent_tasks) <= set(order))
        assert ready, 'the DAG has a cycle'
        order.extend(ready)
    return order


def _executor_input(spec, task_name, run_root, outputs_of) -> pipeline_spec_pb2.ExecutorInput:
    task = spec.root.dag.tasks[task_name]
    component = spec.components[task.component_ref.name]
    executor_input = pipeline_spec_pb2.ExecutorInput()
    for key, source in task.inputs.artifacts.items():
        upstream = source.task_output_artifact
        produced = outputs_of[upstream.producer_task].artifacts[upstream.output_artifact_key]
        executor_input.inputs.artifacts[key].CopyFrom(produced)
    for key, source in task.inputs.parameters.items():
        assert source.runtime_value.HasField('constant_value'), (task_name, key)
        executor_input.inputs.parameters[key].CopyFrom(source.runtime_value.constant_value)
    for key, definition in component.output_definitions.artifacts.items():
        artifact = executor_input.outputs.artifacts[key].artifacts.add()
        artifact.name = f'{run_root}/{task_name}/{key}'
        artifact.type.CopyFrom(definition.artifact_type)
        artifact.uri = os.path.join(run_root, task_name, key)
    executor_input.outputs.output_file = os.path.join(run_root, task_name, 'executor_output.json')
    return executor_input


def _run(command: List[str], args: List[str], executor_input, log_file: str) -> None:
    assert command[0] == 'python', command  # the image's interpreter; ours stands in for it
    placeholder = json_format.MessageToJson(executor_input)
    argv = [sys.executable] + command[1:] + [placeholder if a == '{{$}}' else a for a in args]
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2')
    with open(log_file, 'a') as log:
        result = subprocess.run(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                timeout=900)
    if result.returncode:
        with open(log_file) as log:
            raise RuntimeError(f'{argv[:4]} failed:\n' + log.read()[-4000:])


def run_job(job: pipeline_spec_pb2.PipelineJob, run_id: str, run_hooks: bool = True
            ) -> Dict[str, pipeline_spec_pb2.ExecutorOutput]:
    """Runs every task once; returns each task's ExecutorOutput as the task wrote it.

    run_hooks=False is open-source KFP's behaviour: its launcher never runs a task's
    preCacheCheck hook (only Vertex AI does), so the executor gets the parameters unresolved.
    """
    spec = job.pipeline_spec
    spec_pb = json_format.ParseDict(json_format.MessageToDict(spec),
                                    pipeline_spec_pb2.PipelineSpec())
    executors = json_format.MessageToDict(spec_pb.deployment_spec)['executors']
    run_root = os.path.join(job.runtime_config.gcs_output_directory, run_id)
    outputs_of: Dict[str, pipeline_spec_pb2.ExecutorOutput] = {}
    for task_name in topological_order(spec_pb):
        executor_input = _executor_input(spec_pb, task_name, run_root, outputs_of)
        os.makedirs(os.path.join(run_root, task_name))
        log_file = os.path.join(run_root, task_name, 'log.txt')
        label = spec_pb.components[spec_pb.root.dag.tasks[task_name].component_ref.name]
        container = executors[label.executor_label]['container']
        hook = container.get('lifecycle', {}).get('preCacheCheck')
        if hook and run_hooks:  # the driver writes updated parameters to output_file; the executor reads them
            _run(hook['command'], hook['args'], executor_input, log_file)
        _run(container['command'], container['args'], executor_input, log_file)
        with open(executor_input.outputs.output_file) as handle:
            output = json_format.Parse(handle.read(), pipeline_spec_pb2.ExecutorOutput(),
                                       ignore_unknown_fields=False)
        # KFP records each output artifact (its type from the spec, the URI and the metadata the
        # executor wrote) and hands that record to the downstream tasks.
        for key, declared in executor_input.outputs.artifacts.items():
            written = output.artifacts[key].artifacts
            assert len(written) == 1, (task_name, key)
            recorded = pipeline_spec_pb2.RuntimeArtifact()
            recorded.CopyFrom(declared.artifacts[0])
            recorded.metadata.CopyFrom(written[0].metadata)
            recorded.uri = written[0].uri or recorded.uri
            written[0].CopyFrom(recorded)
        outputs_of[task_name] = output
    return outputs_of
