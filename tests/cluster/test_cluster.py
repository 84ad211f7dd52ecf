"""The cluster itself (tools/cluster/): the node, the controllers and their CRDs, the project's
runtime applied as users apply it, cluster DNS, and the webhooks refusing what a real cluster
refuses, in the real API server's and controllers' own words."""
import json
import subprocess
import time

import pytest

from pipeline.kubeflow.jobs import tfjob, trainjob
from tools.cluster import dns, layout
import real_cluster

pytestmark = pytest.mark.cluster

CRDS = ('trainjobs.trainer.kubeflow.org', 'clustertrainingruntimes.trainer.kubeflow.org',
        'jobsets.jobset.x-k8s.io', 'tfjobs.kubeflow.org', 'workflows.argoproj.io')


def test_the_node_the_controllers_and_the_runtime_are_there(kube):
    [node] = real_cluster.get('nodes')['items']
    assert node['status']['nodeInfo']['kubeletVersion'] == layout.KUBERNETES_VERSION
    assert {c['type']: c['status'] for c in node['status']['conditions']}['Ready'] == 'True'
    for crd in CRDS:
        conditions = real_cluster.get('crd', crd)['status']['conditions']
        assert {c['type']: c['status'] for c in conditions}['Established'] == 'True', crd
    runtime = real_cluster.get('clustertrainingruntimes', 'image-pipeline-tensorflow')
    assert runtime['spec']['template']['spec']['replicatedJobs'][0]['name'] == \
        trainjob.REPLICATED_JOB
    # Every webhook configuration points at a Service whose address a namespace holds.
    hooks = [h for kind in ('validatingwebhookconfigurations', 'mutatingwebhookconfigurations')
             for c in real_cluster.get(kind)['items'] for h in c['webhooks']]
    assert {h['clientConfig']['service']['namespace'] for h in hooks} >= {
        'jobset-system', 'kubeflow-system', 'kubeflow'}
    assert all(h['clientConfig'].get('caBundle') for h in hooks)


def test_cluster_dns_answers_for_services(kube):
    assert dns.query(f'kubernetes.default.svc.{layout.CLUSTER_DOMAIN}') == [
        layout.API_SERVICE_IP]
    assert dns.query(f'training-operator.kubeflow.svc.{layout.CLUSTER_DOMAIN}') == ['10.96.0.22']


def _refused(body) -> str:
    done = subprocess.run([real_cluster.WHERE.kube_binary('kubectl'), '--kubeconfig',
                           real_cluster.kubeconfig(), 'create', '-f', '-'],
                          input=json.dumps(body), capture_output=True, text=True)
    assert done.returncode != 0, f'accepted: {body}'
    return done.stderr


def test_the_webhooks_and_crds_refuse_what_a_real_cluster_refuses(namespace, image):
    spec = tfjob.TFJobSpec(workers=2, image=image, cpu=0.25, memory_gb=1.0)
    # Trainer: a TrainJob naming a runtime that does not exist (its webhook's ValidateObjects).
    missing = trainjob.manifest('early', tfjob.TFJobSpec(workers=2, image=image,
                                                         runtime='no-such-runtime'), [])
    missing['metadata']['namespace'] = namespace.name
    said = _refused(missing)
    assert 'admission webhook' in said and 'denied the request' in said, said
    assert 'no-such-runtime' in said, said
    # Trainer: a runtime whose trainer step has 2 replicas and no `node` container.
    runtime = real_cluster.get('clustertrainingruntimes', 'image-pipeline-tensorflow')
    bad = {'apiVersion': runtime['apiVersion'], 'kind': runtime['kind'],
           'metadata': {'name': 'bad-runtime'}, 'spec': runtime['spec']}
    step = bad['spec']['template']['spec']['replicatedJobs'][0]
    step['replicas'] = 2
    step['template']['spec']['template']['spec']['containers'][0]['name'] = 'tensorflow'
    said = _refused(bad)
    assert 'denied the request' in said and 'replicas' in said, said
    # The TrainJob CRD: a name that is not an RFC 1035 label.
    named = trainjob.manifest('Train_1', spec, [])
    named['metadata']['namespace'] = namespace.name
    said = _refused(named)
    assert 'Train_1' in said and 'invalid' in said.lower(), said
    # The Training Operator: no container named tensorflow, and no replica specs at all.
    body = tfjob.manifest('tf-bad', spec, [])
    body['metadata']['namespace'] = namespace.name
    body['spec']['tfReplicaSpecs']['Worker']['template']['spec']['containers'][0]['name'] = 'tf'
    said = _refused(body)
    assert 'validator.tfjob.training-operator.kubeflow.org' in said, said
    assert 'must have at least one container with name tensorflow' in said, said
    empty = dict(body, metadata={'name': 'tf-empty', 'namespace': namespace.name}, spec={})
    said = _refused(empty)
    assert 'tfReplicaSpecs' in said, said
    # JobSet: a TrainJob whose JobSet's pod names would pass 63 characters is accepted, and
    # its JobSet refused by JobSet's webhook: the TrainJob says so in an event.
    long = trainjob.manifest('t' * 60, spec, [])
    long['metadata']['namespace'] = namespace.name
    real_cluster.kubectl('create', '-f', '-', stdin=json.dumps(long))
    deadline = time.monotonic() + 60
    while True:
        events = real_cluster.get('events', '-n', namespace.name)['items']
        denied = [e['message'] for e in events if 'vjobset.kb.io' in e.get('message', '')]
        if denied:
            break
        assert time.monotonic() < deadline, [e['message'] for e in events]
        time.sleep(1)
    assert '63 characters' in denied[0], denied
    assert real_cluster.get('jobsets', '-n', namespace.name)['items'] == []
