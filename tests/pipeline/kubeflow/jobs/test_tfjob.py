"""The TFJob the trainer creates (pipeline/kubeflow/jobs/tfjob.py) and the spec the compile hands
it. The job on the real Training Operator, and what the task survives there:
tests/cluster/test_tfjob.py and test_tfjob_survival.py.
"""
import dataclasses
import json

from pipeline.kubeflow.jobs import tfjob

SPEC = tfjob.TFJobSpec(workers=2, image='registry/image-pipeline:1', cpu=8.0, memory_gb=30.0,
                       gpus=2, gpu_resource='nvidia.com/gpu')


def test_the_manifest_has_n_identical_workers_with_the_trainer_resources():
    body = tfjob.manifest('train-abc', SPEC, ['/r/job.json', '/r/serving', '/r/logs', '/r/ckpt'])
    assert (body['apiVersion'], body['kind']) == ('kubeflow.org/v1', 'TFJob')
    assert body['metadata']['name'] == 'train-abc'
    # No backoffLimit: past it, the operator deletes every pod before marking the job Failed.
    assert body['spec']['runPolicy'] == {'cleanPodPolicy': 'None'}
    assert list(body['spec']['tfReplicaSpecs']) == ['Worker']  # worker 0 is the chief
    worker = body['spec']['tfReplicaSpecs']['Worker']
    assert (worker['replicas'], worker['restartPolicy']) == (2, 'Never')
    assert worker['template']['metadata'] == {'annotations': {'sidecar.istio.io/inject': 'false'}}
    assert 'serviceAccountName' not in worker['template']['spec']
    [container] = worker['template']['spec']['containers']
    assert container['name'] == 'tensorflow' and container['image'] == SPEC.image
    assert container['command'] == ['python', '-m', 'launch.worker', '/r/job.json',
                                    '/r/serving', '/r/logs', '/r/ckpt']
    expected = {'cpu': '8', 'memory': '30G', 'nvidia.com/gpu': '2'}
    assert container['resources'] == {'requests': expected, 'limits': expected}
    cpu_only = tfjob.manifest('x', tfjob.TFJobSpec(workers=3, image='i', cpu=0.5, memory_gb=2),
                              [])['spec']['tfReplicaSpecs']['Worker']
    assert cpu_only['replicas'] == 3
    assert cpu_only['template']['spec']['containers'][0]['resources']['limits'] == {
        'cpu': '0.5', 'memory': '2G'}
    runner = tfjob.manifest('x', dataclasses.replace(SPEC, service_account='trainer'), [])
    assert runner['spec']['tfReplicaSpecs']['Worker']['template']['spec'][
        'serviceAccountName'] == 'trainer'


def test_the_spec_round_trips_through_the_execution_property():
    assert tfjob.TFJobSpec.from_json(SPEC.to_json()) == SPEC
    old = json.loads(SPEC.to_json())  # a spec compiled before the newer fields still loads
    del old['service_account'], old['start_timeout_s']
    assert tfjob.TFJobSpec.from_json(json.dumps(old)) == SPEC
