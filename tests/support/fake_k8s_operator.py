"""The fake Training Operator (kubeflow/training-operator v1.9.0) for TFJobs: admission (CRD
schema and the validating webhook) and the reconcile loop. Test support only: fake_k8s_server.py
calls admit() on create and reconcile() for every job from its sync loop, under its lock.

Each rule names its source in the operator at v1.9.0. Not modelled: PS/Chief/Evaluator
specifics beyond TF_CONFIG, restartPolicy OnFailure/Always/ExitCode (in-place restarts; refused
with NotImplementedError, a test-support error, not an API answer), gang scheduling, suspend,
ttlSecondsAfterFinished, enableDynamicWorker.
"""
import copy
import json
import re
from typing import Any, Dict, List, Optional

from fake_k8s_scheduler import now

KIND = 'TFJob'
CONTAINER, PORT_NAME, PORT = 'tensorflow', 'tfjob-port', 2222  # apis/kubeflow.org/v1 constants
JOB_LABEL = 'training.kubeflow.org/job-name'
TYPES = ('Chief', 'Evaluator', 'Master', 'PS', 'Worker')  # tensorflow_types.go ReplicaType
_DNS1035 = re.compile(r'[a-z]([-a-z0-9]*[a-z0-9])?')


class Refused(Exception):
    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason = code, reason


def admit(body: Dict[str, Any]) -> Dict[str, Any]:
    """CRD structural schema (manifests/base/crds/kubeflow.org_tfjobs.yaml), then defaulting
    (tensorflow_defaults.go SetDefaults_TFJob), then the webhook
    (pkg/webhooks/tensorflow/tfjob_webhook.go validateTFJob). Returns the stored job."""
    name = body.get('metadata', {}).get('name', '')
    spec = body.get('spec') or {}
    schema: List[str] = []
    if not spec.get('tfReplicaSpecs'):  # `required: [tfReplicaSpecs]`
        schema.append('spec.tfReplicaSpecs: Required value')
    for field, value in (spec.get('runPolicy') or {}).items():
        if field in ('backoffLimit', 'activeDeadlineSeconds', 'ttlSecondsAfterFinished') and \
                not isinstance(value, int):
            schema.append(f'spec.runPolicy.{field}: Invalid value: "{type(value).__name__}": '
                          f'spec.runPolicy.{field} in body must be of type integer: '
                          f'"{type(value).__name__}"')
    for rtype, replica in (spec.get('tfReplicaSpecs') or {}).items():
        if 'containers' not in ((replica or {}).get('template') or {}).get('spec', {}):
            schema.append(f'spec.tfReplicaSpecs[{rtype}].template.spec.containers: '
                          'Required value')
    if schema:  # apiextensions-apiserver: 422 Invalid, all causes in one message
        raise Refused(422, 'Invalid', f'{KIND}.kubeflow.org "{name}" is invalid: ' + (
            schema[0] if len(schema) == 1 else '[' + ', '.join(schema) + ']'))
    job = copy.deepcopy(body)
    spec = job['spec']
    run_policy = spec.setdefault('runPolicy', {})
    run_policy.setdefault('cleanPodPolicy', 'None')
    spec.setdefault('successPolicy', '')
    replicas = spec['tfReplicaSpecs']
    for rtype in list(replicas):  # setTensorflowTypeNamesToCamelCase
        for known in TYPES:
            if rtype.lower() == known.lower() and rtype != known:
                replicas[known] = replicas.pop(rtype)
    for replica in replicas.values():
        replica.setdefault('replicas', 1)
        replica.setdefault('restartPolicy', 'Never')
        for container in replica['template']['spec']['containers']:
            if container.get('name') == CONTAINER:  # setTensorflowDefaultPort
                ports = container.setdefault('ports', [])
                if not any(p.get('name') == PORT_NAME for p in ports):
                    ports.append({'name': PORT_NAME, 'containerPort': PORT})
    errors = []
    if not _DNS1035.fullmatch(name) or len(name) > 63:  # NameIsDNS1035Label
        errors.append(f'metadata.name: Invalid value: "{name}": should match: a DNS-1035 label '
                      'must consist of lower case alphanumeric characters or \'-\', start with'
                      ' an alphabetic character, and end with an alphanumeric character (e.g. '
                      '\'my-name\',  or \'abc-123\', regex used for validation is '
                      '\'[a-z]([-a-z0-9]*[a-z0-9])?\')')
    chief = 0
    for rtype, replica in replicas.items():  # validateTFReplicaSpecs
        path = f'spec.tfReplicaSpecs[{rtype}].template.spec.containers'
        containers = replica['template']['spec']['containers']
        if not containers:
            errors.append(f'{path}: Required value: must be specified')
        chief += rtype in ('Chief', 'Master')
        for index, container in enumerate(containers):
            if not container.get('image'):
                errors.append(f'{path}[{index}].image: Required value: must be required')
        if not any(c.get('name') == CONTAINER for c in containers):
            errors.append(f'{path}: Required value: must have at least one container with name '
                          f'{CONTAINER}')
    if chief > 1:
        errors.append('spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or '
                      'Master role')
    if errors:  # controller-runtime validator: Denied (403); the API server's wrapping
        raise Refused(403, 'Forbidden', 'admission webhook "validator.tfjob.training-operator.'
                      'kubeflow.org" denied the request: ' + (
                          errors[0] if len(errors) == 1 else '[' + ', '.join(errors) + ']'))
    return job


def tf_config(job, rtype: str, index: int) -> str:
    """tensorflow.go genTFConfigJSONStr/genClusterSpec: every replica's headless Service name,
    the tfjob-port (GetPortFromTFJob), "environment": "cloud"; map order as Go marshals it
    (sorted keys)."""
    cluster = {}
    for rt, replica in sorted(job['spec']['tfReplicaSpecs'].items()):
        port = next((p['containerPort'] for c in replica['template']['spec']['containers']
                     if c.get('name') == CONTAINER for p in c.get('ports') or []
                     if p.get('name') == PORT_NAME), PORT)
        cluster[rt.lower()] = [f'{_pod_name(job, rt, i)}.{job["metadata"]["namespace"]}.svc:'
                               f'{port}' for i in range(replica['replicas'])]
    return json.dumps({'cluster': cluster, 'task': {'type': rtype.lower(), 'index': index},
                       'environment': 'cloud'}, separators=(',', ':'))


def _pod_name(job, rtype: str, index: int) -> str:  # common/util.go GenGeneralName
    return f'{job["metadata"]["name"]}-{rtype.lower()}-{index}'.replace('/', '-')


def _condition(status, type_: str, value: str, reason: str, message: str) -> None:
    """pkg/util/status.go setCondition/filterOutCondition: nothing changes once Failed; a
    same-status same-reason condition is kept; Succeeded/Failed set Running to False."""
    conditions = status.setdefault('conditions', [])
    if any(c['type'] == 'Failed' and c['status'] == 'True' for c in conditions):
        return
    current = next((c for c in conditions if c['type'] == type_), None)
    if current and current['status'] == value and current['reason'] == reason:
        return
    kept = []
    for c in conditions:
        if c['type'] == type_:
            continue
        if type_ in ('Failed', 'Succeeded') and c['type'] == 'Running':
            c = dict(c, status='False')
        kept.append(c)
    status['conditions'] = kept + [dict(type=type_, status=value, reason=reason,
                                        message=message, lastUpdateTime=now(),
                                        lastTransitionTime=now())]


def finished(status) -> Optional[str]:  # pkg/util/status.go IsFinished
    for c in status.get('conditions') or []:
        if c['type'] in ('Succeeded', 'Failed') and c['status'] == 'True':
            return c['type']
    return None
