"""Tiny hand-written PipelineJobs for the launcher's rules tests: tasks that run
tests/support/kfp_task_probe.py (or any short command), in the shapes TFX 1.16 compiles (schema
2.1.0).

    job = build(root, {'A': probe(record_dir, outputs={'out': EXAMPLES}),
                       'B': probe(record_dir, inputs={'examples': ('A', 'out')})})
"""
import json
import os
from typing import Dict, Optional

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

EXAMPLES = 'title: tfx.Examples\ntype: object\n'
PROBE = ['python', 'tests/support/kfp_task_probe.py']


def probe(record_dir: str, name: str = '', written: Optional[dict] = None, **task) -> dict:
    """A task running the probe, which records its ExecutorInput to <record_dir>/<task>.json and
    writes `written` (an ExecutorOutput dict) as its executor output."""
    task.setdefault('command', PROBE)
    task['args'] = ['{{$}}', os.path.join(record_dir, '{task}.json'), json.dumps(written or {})]
    return task


def build(root: str, tasks: Dict[str, dict], name: str = 'rules') -> pipeline_spec_pb2.PipelineJob:
    """tasks: {task: {command, args, params: {name: (parameterType, constant)},
    raw_params: {name: InputParameterSpec dict}, inputs: {name: (producer, key)},
    outputs: {key: instanceSchema}, cache: bool (default True), hook: [command, args],
    env: {name: value}}}."""
    dag, components, executors = {}, {}, {}
    for task_name, task in tasks.items():
        comp, label = f'{task_name}_comp', f'{task_name}_executor'
        params = {n: {'runtimeValue': {'constant': v}} for n, (_, v) in
                  task.get('params', {}).items()}
        params.update(task.get('raw_params', {}))
        definitions = {n: {'parameterType': t} for n, (t, _) in task.get('params', {}).items()}
        definitions.update({n: {'parameterType': 'STRING'} for n in task.get('raw_params', {})})
        artifacts = {n: {'taskOutputArtifact': {'producerTask': p, 'outputArtifactKey': k}}
                     for n, (p, k) in task.get('inputs', {}).items()}
        dag[task_name] = {
            'taskInfo': {'name': task_name}, 'componentRef': {'name': comp},
            'inputs': {'parameters': params, 'artifacts': artifacts},
            'dependentTasks': sorted({p for p, _ in task.get('inputs', {}).values()}),
            'cachingOptions': {'enableCache': True} if task.get('cache', True) else {}}
        components[comp] = {
            'executorLabel': label,
            'inputDefinitions': {
                'parameters': definitions,
                'artifacts': {n: {'artifactType': {'instanceSchema': EXAMPLES}}
                              for n in artifacts}},
            'outputDefinitions': {'artifacts': {k: {'artifactType': {'instanceSchema': s}}
                                                for k, s in task.get('outputs', {}).items()}}}
        container = {'image': 'local', 'command': task['command'],
                     'args': [a.replace('{task}', task_name) for a in task.get('args', [])]}
        if 'env' in task:  # PipelineContainerSpec.env: {name: value}
            container['env'] = [{'name': n, 'value': v} for n, v in task['env'].items()]
        if 'hook' in task:
            container['lifecycle'] = {'preCacheCheck': {'command': task['hook'][0],
                                                        'args': task['hook'][1]}}
        executors[label] = {'container': container}
    spec = {'pipelineInfo': {'name': name}, 'schemaVersion': '2.1.0', 'sdkVersion': 'tfx-1.16.0',
            'root': {'dag': {'tasks': dag}}, 'components': components,
            'deploymentSpec': {'executors': executors}}
    job = {'displayName': name, 'pipelineSpec': spec, 'runtimeConfig': {'gcsOutputDirectory': root}}
    return json_format.ParseDict(job, pipeline_spec_pb2.PipelineJob())


def recorded(record_dir: str, task: str) -> dict:
    """What the probe task `task` recorded: {'executor_input': ..., 'found_output': ...}."""
    with open(os.path.join(record_dir, f'{task}.json')) as handle:
        return json.load(handle)
