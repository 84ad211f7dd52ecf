"""The fake Kubeflow Trainer v2 (kubeflow/trainer v2.3.0): admission of TrainJobs and training
runtimes (CRD rules and validating webhooks) and the TrainJob reconcile that builds a JobSet
from the runtime's template (fake_k8s_jobset.py runs it). Test support only: fake_k8s_cluster.py
calls admit_*() on create and reconcile() for every TrainJob from its sync loop, under its lock.

Each rule names its source in kubeflow/trainer at v2.3.0. Trainer has no TensorFlow runtime and
no TF_CONFIG: with a runtime without an ML policy source, the PlainML plugin only sets the node
count and the TrainJob's env. TrainJob conditions are Suspended, Complete and Failed
(trainjob_types.go); there is no Created or Running condition. Not modelled (refused with
NotImplementedError, a test-support error): initializers, ML policies (torch, mpi, jax, ...),
podGroupPolicy, suspend, managedBy, activeDeadlineSeconds; runtimePatches are merged for
the fields launch/trainjob.py sets (strategic merge by name of replicatedJobs and containers).
"""
import copy
import json
import re

import fake_k8s_jobset
from fake_k8s_scheduler import now

GROUP, VERSION = 'trainer.kubeflow.org', 'v1alpha1'
ANCESTOR = 'trainer.kubeflow.org/trainjob-ancestor-step'
NODE = 'node'
_RFC1035 = re.compile(r'[a-z]([-a-z0-9]*[a-z0-9])?')


class Refused(fake_k8s_jobset.Refused):
    pass


def _invalid(kind: str, name: str, causes):
    """The API server's 422 for CRD validation (CEL x-kubernetes-validations)."""
    return Refused(422, 'Invalid', f'{kind}.{GROUP} "{name}" is invalid: ' + (
        causes[0] if len(causes) == 1 else '[' + ', '.join(causes) + ']'))


def admit_runtime(kind: str, body):
    """pkg/webhooks/trainingruntime_webhook.go validateReplicatedJobs (ClusterTrainingRuntime
    and TrainingRuntime alike): a replicated Job with a Trainer ancestor label must have
    replicas 1 and contain its container (`node` for the trainer)."""
    runtime = copy.deepcopy(body)
    errors = []
    rjobs = runtime['spec']['template']['spec']['replicatedJobs']
    expected = {'trainer': NODE, 'model-initializer': 'model-initializer',
                'dataset-initializer': 'dataset-initializer'}
    for index, rjob in enumerate(rjobs):
        labels = (rjob['template'].get('metadata') or {}).get('labels') or {}
        ancestor = labels.get(ANCESTOR)
        if ancestor not in expected:
            continue
        path = f'spec.template.spec.replicatedJobs[{index}]'
        if rjob.get('replicas', 1) != 1:
            errors.append(f'{path}.replicas: Invalid value: {rjob["replicas"]}: always must be 1')
        names = [c['name'] for c in rjob['template']['spec']['template']['spec']['containers']]
        if expected[ancestor] not in names:
            errors.append(f'{path}.template.spec.template.spec.containers: Invalid value: '
                          f'{json.dumps(names)}: must contain the required container for the '
                          f'ancestor: {ancestor}')
    if errors:
        hook = 'clustertrainingruntime' if kind == 'ClusterTrainingRuntime' else 'trainingruntime'
        raise Refused(403, 'Forbidden', f'admission webhook "validator.{hook}.{GROUP}" denied '
                      'the request: ' + (errors[0] if len(errors) == 1 else
                                         '[' + ', '.join(errors) + ']'))
    return runtime


def admit_trainjob(store, namespace: str, body):
    """CRD defaults and CEL rules (trainjob_types.go), then the validating webhook
    (pkg/webhooks/trainjob_webhook.go ValidateCreate -> runtime ValidateObjects)."""
    job = copy.deepcopy(body)
    name = job['metadata'].get('name', '')
    spec = job.get('spec') or {}
    causes = []
    if not _RFC1035.fullmatch(name):
        causes.append('<nil>: Invalid value: "object": metadata.name must match RFC 1035 DNS '
                      'label format')
    if len(name) > 63:
        causes.append('<nil>: Invalid value: "object": metadata.name must be no more than 63 '
                      'characters')
    ref = spec.get('runtimeRef') or {}
    if not ref.get('name'):
        causes.append('spec.runtimeRef.name: Required value')
    nodes = (spec.get('trainer') or {}).get('numNodes')
    if nodes is not None and nodes < 1:
        causes.append(f'spec.trainer.numNodes: Invalid value: {nodes}: spec.trainer.numNodes '
                      'in body should be greater than or equal to 1')
    if causes:
        raise _invalid('TrainJob', name, causes)
    ref.setdefault('apiGroup', GROUP)                 # +kubebuilder:default
    ref.setdefault('kind', 'ClusterTrainingRuntime')  # +kubebuilder:default
    for field in ('initializer', 'suspend', 'managedBy', 'activeDeadlineSeconds'):
        if spec.get(field):
            raise NotImplementedError(f'fake Trainer: {field}')
    for patch in spec.get('runtimePatches') or []:   # TrainJobDefaulter.Default
        patch.setdefault('time', now())
    hook = f'admission webhook "validator.trainjob.{GROUP}" denied the request: '
    key = f'{ref["kind"]}.{ref["apiGroup"]}'   # runtime.RuntimeRefToRuntimeRegistryKey
    if key not in (f'ClusterTrainingRuntime.{GROUP}', f'TrainingRuntime.{GROUP}'):
        raise Refused(403, 'Forbidden', hook + f'unsupported runtime: {key}')
    runtime = store.runtime(ref['kind'], namespace, ref['name'])
    if runtime is None:   # core/clustertrainingruntime.go (and trainingruntime.go) ValidateObjects
        plural = ref['kind'].lower() + 's'
        scope = 'clusterTrainingRuntime' if ref['kind'] == 'ClusterTrainingRuntime' else \
            'trainingRuntime'
        raise Refused(403, 'Forbidden', hook + f'spec.RuntimeRef: Invalid value: '
                      f'{json.dumps(ref, sort_keys=True)}: {plural}.{GROUP} "{ref["name"]}" not '
                      f'found: specified {scope} must be created before the TrainJob is created')
    # jobset.go Validate: a runtimePatch's containers must exist; no env for `node`.
    names = {r['name']: {c['name'] for c in r['template']['spec']['template']['spec'][
        'containers']} for r in runtime['spec']['template']['spec']['replicatedJobs']}
    for patch in spec.get('runtimePatches') or []:
        for rjob in ((((patch.get('trainingRuntimeSpec') or {}).get('template') or {}).get(
                'spec') or {}).get('replicatedJobs') or []):
            pod = (((rjob.get('template') or {}).get('spec') or {}).get('template') or {}).get(
                'spec') or {}
            bad = rjob['name'] not in names or any(
                c['name'] not in names[rjob['name']] or (c.get('env') and c['name'] == NODE)
                for c in pod.get('containers') or [])
            if bad:
                raise Refused(403, 'Forbidden', hook + 'spec.runtimePatches: Invalid value: '
                              '...: must not have replicated job or container that does not '
                              'exist in the runtime job template, nor envs for the node '
                              'container')
    job['status'] = {}
    return job


def _merge(base, patch):
    """Strategic merge as JobSetSpec's tags make it: lists of objects with `name` merge by
    name (replicatedJobs, containers, env), maps recursively, scalars replace."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            out[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(patch, list) and all(
            isinstance(i, dict) and 'name' in i for i in base + patch):
        out = [dict(i) for i in base]
        for item in patch:
            at = next((k for k, i in enumerate(out) if i['name'] == item['name']), None)
            if at is None:
                out.append(copy.deepcopy(item))
            else:
                out[at] = _merge(out[at], item)
        return out
    return copy.deepcopy(patch)


def _upsert_env(container, env) -> None:
    """pkg/apply UpsertEnvVars: a variable of the same name is replaced, else appended."""
    current = container.setdefault('env', [])
    for var in env:
        at = next((i for i, v in enumerate(current) if v['name'] == var['name']), None)
        if at is None:
            current.append(copy.deepcopy(var))
        else:
            current[at] = copy.deepcopy(var)


def build_jobset(job, runtime):
    """The JobSet of a TrainJob: core/trainingruntime.go newRuntimeInfo (the runtime's template,
    runtimePatches merged, the trainer's count = mlPolicy.numNodes, resourcesPerNode merged
    into `node`), plainml.go EnforceMLPolicy (count = the TrainJob's numNodes; its env into
    `node`), jobset.go SyncParallelCount (parallelism = completions = count), Build and
    builder.go Trainer (replicas 1; image, command, args, env of `node`), the JobSet named
    after the TrainJob with the template's labels and annotations and a controller reference."""
    spec = job['spec']
    template = copy.deepcopy(runtime['spec']['template'])
    policy = runtime['spec'].get('mlPolicy') or {}
    if set(policy) - {'numNodes'} or runtime['spec'].get('podGroupPolicy'):
        raise NotImplementedError('fake Trainer: ML policy sources and podGroupPolicy')
    labels = dict((template.get('metadata') or {}).get('labels') or {})
    annotations = dict((template.get('metadata') or {}).get('annotations') or {})
    js_spec = template['spec']
    for patch in spec.get('runtimePatches') or []:
        patch_template = (patch.get('trainingRuntimeSpec') or {}).get('template') or {}
        labels.update(((patch_template.get('metadata') or {}).get('labels')) or {})
        annotations.update(((patch_template.get('metadata') or {}).get('annotations')) or {})
        if patch_template.get('spec'):
            js_spec = _merge(js_spec, patch_template['spec'])
    trainer = spec.get('trainer') or {}
    for rjob in js_spec['replicatedJobs']:
        ancestor = ((rjob['template'].get('metadata') or {}).get('labels') or {}).get(ANCESTOR)
        job_spec = rjob['template']['spec']
        count = job_spec.get('parallelism', 1)
        if ancestor == 'trainer':
            count = trainer.get('numNodes') or policy.get('numNodes', 1)
            rjob['replicas'] = 1
            for container in job_spec['template']['spec']['containers']:
                if container['name'] != NODE:
                    continue
                if trainer.get('resourcesPerNode'):
                    resources = container.setdefault('resources', {})
                    for key, amounts in trainer['resourcesPerNode'].items():
                        resources[key] = dict(resources.get(key) or {}, **amounts)
                for key in ('image', 'command', 'args'):
                    if trainer.get(key) is not None:
                        container[key] = copy.deepcopy(trainer[key])
                _upsert_env(container, trainer.get('env') or [])
        job_spec['parallelism'] = job_spec['completions'] = count
    meta = job['metadata']
    return {'apiVersion': f'{fake_k8s_jobset.GROUP}/{fake_k8s_jobset.VERSION}', 'kind': 'JobSet',
            'metadata': {'name': meta['name'], 'namespace': meta['namespace'],
                         'labels': labels, 'annotations': annotations,
                         'ownerReferences': [{'apiVersion': f'{GROUP}/{VERSION}',
                                              'kind': 'TrainJob', 'name': meta['name'],
                                              'uid': meta['uid'], 'controller': True,
                                              'blockOwnerDeletion': True}]},
            'spec': js_spec}


def _set_condition(status, condition) -> None:
    """apimachinery meta.SetStatusCondition: keyed by type; lastTransitionTime changes only
    when the status does."""
    conditions = status.setdefault('conditions', [])
    for current in conditions:
        if current['type'] == condition['type']:
            if current['status'] != condition['status']:
                current['lastTransitionTime'] = condition.get('lastTransitionTime') or now()
            current.update(status=condition['status'], reason=condition['reason'],
                           message=condition['message'])
            return
    conditions.append(dict(condition, lastTransitionTime=condition.get(
        'lastTransitionTime') or now()))


def finished(job):  # pkg/util/trainjob IsTrainJobFinished
    for c in (job.get('status') or {}).get('conditions') or []:
        if c['type'] in ('Complete', 'Failed') and c['status'] == 'True':
            return c['type']
    return None


def reconcile(store, job) -> None:
    """trainjob_controller.go Reconcile, one pass: removeFailedCondition, the runtime's objects
    unless finished (reconcileObjects -> NewObjects: the runtime snapshot ConfigMap
    `<name>-runtime-snapshot`, core/snapshot.go, then the JobSet unless it exists, jobset.go
    Build), then the status from the JobSet (jobset.go Status: its Completed and Failed
    conditions as Complete and Failed, its replicated Jobs' counts as jobsStatus)."""
    meta, spec = job['metadata'], job['spec']
    status = copy.deepcopy(job.get('status') or {})
    status['conditions'] = [c for c in status.get('conditions') or []
                            if c['type'] != 'Failed' or c['reason'] == 'DeadlineExceeded']
    ref = spec['runtimeRef']
    scratch = dict(job, status=status)
    if not finished(scratch):
        error = _reconcile_objects(store, job, ref)
        if error:   # the event, and the TrainJob's status left as it was
            message = f'TrainJob resources reconciliation failed: {error}'
            store.event(job, 'Warning', 'TrainJobResourcesCreationFailed', message[:1000],
                        'trainjob-controller')
    js = store.objects.get(('JobSet', meta['namespace'], meta['name']))
    if js is None:
        if not finished(scratch):
            return   # Status returns the NotFound error: the status patch is skipped
    else:
        for source, target in (('Completed', 'Complete'), ('Failed', 'Failed')):
            condition = next((c for c in js['status'].get('conditions') or []
                              if c['type'] == source and c['status'] == 'True'), None)
            if condition:
                _set_condition(status, dict(condition, type=target))
        status['jobsStatus'] = [dict(s) for s in js['status'].get('replicatedJobsStatus') or []]
    job['status'] = status


def _reconcile_objects(store, job, ref) -> str:
    meta = job['metadata']
    snapshot_key = ('ConfigMap', meta['namespace'], meta['name'] + '-runtime-snapshot')
    snapshot = store.objects.get(snapshot_key)
    if snapshot is not None:
        runtime = json.loads(snapshot['data']['runtime'])
    else:
        runtime = store.runtime(ref['kind'], meta['namespace'], ref['name'])
        if runtime is None:
            what = ('not found ClusterTrainingRuntime specified in TrainJob'
                    if ref['kind'] == 'ClusterTrainingRuntime' else
                    'TrainingRuntime specified in TrainJob is not found')
            return f'{what}: {ref["kind"].lower()}s.{GROUP} "{ref["name"]}" not found'
        store.try_create('ConfigMap', meta['namespace'], {
            'apiVersion': 'v1', 'kind': 'ConfigMap',
            'metadata': {'name': snapshot_key[2], 'namespace': meta['namespace'],
                         'ownerReferences': [{'apiVersion': f'{GROUP}/{VERSION}',
                                              'kind': 'TrainJob', 'name': meta['name'],
                                              'uid': meta['uid'], 'controller': True,
                                              'blockOwnerDeletion': True}]},
            'data': {'runtime': json.dumps(runtime)}})   # YAML in Trainer; JSON is YAML
    if ('JobSet', meta['namespace'], meta['name']) in store.objects:
        return ''   # Build: an existing, unsuspended JobSet is not updated
    return store.try_create('JobSet', meta['namespace'], build_jobset(job, runtime))
