"""The fake JobSet controller (kubernetes-sigs/jobset v0.12.0, the version Kubeflow Trainer
v2.3.0 requires in its go.mod): admission (the webhook's defaults and validation) and the
reconcile of a JobSet into Jobs (fake_k8s_batchjob.py runs those). Test support only:
fake_k8s_cluster.py calls admit() on create and reconcile() for every JobSet from its sync loop,
under its lock.

Each rule names its source in jobset at v0.12.0. Not modelled (refused with NotImplementedError,
a test-support error): failurePolicy rules (only maxRestarts with the default RestartJobSet
action), the InPlaceRestart and RestartJob feature gates, startupPolicy InOrder, dependsOn,
suspend, coordinator, volumeClaimPolicies, exclusive placement, ttlSecondsAfterFinished.
"""
import copy
import hashlib
import re

from fake_k8s_scheduler import now

GROUP, VERSION = 'jobset.x-k8s.io', 'v1alpha2'
NAME_KEY = 'jobset.sigs.k8s.io/jobset-name'
RJOB_KEY = 'jobset.sigs.k8s.io/replicatedjob-name'
JOB_INDEX_KEY = 'jobset.sigs.k8s.io/job-index'
RESTARTS_KEY = 'jobset.sigs.k8s.io/restart-attempt'
_DNS1035 = re.compile(r'[a-z]([-a-z0-9]*[a-z0-9])?')


class Refused(Exception):
    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason = code, reason


def _dns1035(value: str):
    """apimachinery validation.IsDNS1035Label: its two messages."""
    errors = []
    if len(value) > 63:
        errors.append('must be no more than 63 characters')
    if not _DNS1035.fullmatch(value):
        errors.append("a DNS-1035 label must consist of lower case alphanumeric characters or "
                      "'-', start with an alphabetic character, and end with an alphanumeric "
                      "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                      "'[a-z]([-a-z0-9]*[a-z0-9])?')")
    return errors


def admit(body):
    """The CRD default (replicas 1), pkg/webhooks/jobset_webhook.go Default, then
    ValidateCreate (the generated Job and pod names must be DNS-1035 labels)."""
    js = copy.deepcopy(body)
    spec = js['spec']
    spec.setdefault('successPolicy', {'operator': 'All'})
    spec.setdefault('startupPolicy', {'startupPolicyOrder': 'AnyOrder'})
    for rjob in spec['replicatedJobs']:
        rjob.setdefault('replicas', 1)   # CRD +kubebuilder:default=1
        rjob['template']['spec'].setdefault('completionMode', 'Indexed')
        rjob['template']['spec']['template']['spec'].setdefault('restartPolicy', 'OnFailure')
    network = spec.setdefault('network', {})
    network.setdefault('enableDNSHostnames', True)
    network.setdefault('publishNotReadyAddresses', True)
    policy = spec.get('failurePolicy')
    if policy and policy.get('rules'):
        raise NotImplementedError('fake JobSet: failurePolicy rules')
    for field in ('suspend', 'coordinator', 'volumeClaimPolicies', 'ttlSecondsAfterFinished'):
        if spec.get(field):
            raise NotImplementedError(f'fake JobSet: {field}')
    if spec['startupPolicy']['startupPolicyOrder'] != 'AnyOrder':
        raise NotImplementedError('fake JobSet: startupPolicy InOrder')
    errors = []
    name = js['metadata']['name']
    for index, rjob in enumerate(spec['replicatedJobs']):
        if rjob.get('dependsOn'):
            raise NotImplementedError('fake JobSet: dependsOn')
        job_name = f'{name}-{rjob["name"]}-{rjob["replicas"] - 1}'  # placement.GenJobName
        for message in _dns1035(job_name):
            if 'no more than 63' in message:
                message = ('JobSet name is too long, job names generated for this JobSet will '
                           'exceed 63 characters')
            errors.append(f'spec.replicatedJobs[{index}].name: Invalid value: "{job_name}": '
                          f'{message}')
        completions = rjob['template']['spec'].get('completions')
        if completions is not None:  # placement.GenPodName + the 5-character suffix
            pod_name = f'{job_name}-{completions - 1}-abcde'
            if len(pod_name) > 63:
                errors.append(f'spec.replicatedJobs[{index}].name: Invalid value: '
                              f'"{pod_name}": JobSet name is too long, pod names generated for '
                              'this JobSet will exceed 63 characters')
    if errors:
        raise Refused(403, 'Forbidden', 'admission webhook "vjobset.kb.io" denied the request: '
                      + (errors[0] if len(errors) == 1 else '[' + ', '.join(errors) + ']'))
    js['status'] = {'restarts': 0, 'restartsCountTowardsMax': 0}
    return js


def subdomain(js) -> str:  # jobset_controller.go GetSubdomain
    return (js['spec'].get('network') or {}).get('subdomain') or js['metadata']['name']


def _set_condition(store, js, type_, status, reason, message, event_type='Normal') -> None:
    """jobset_controller.go setCondition/updateCondition: a condition of the same type is
    replaced when its status, reason or message changed; a new one is added only when True;
    each change is an event (updateJobSetStatus)."""
    conditions = js['status'].setdefault('conditions', [])
    new = dict(type=type_, status=status, reason=reason, message=message,
               lastTransitionTime=now())
    for i, current in enumerate(conditions):
        if current['type'] == type_:
            if (current['status'], current['reason'], current['message']) == (
                    status, reason, message):
                return
            if current['status'] == status:
                new['lastTransitionTime'] = current['lastTransitionTime']
            conditions[i] = new
            break
    else:
        if status != 'True':
            return
        conditions.append(new)
    store.event(js, event_type, reason, message, 'jobset-controller')


def finished(js):
    """jobSetFinished: Completed or Failed True."""
    for c in js['status'].get('conditions') or []:
        if c['type'] in ('Completed', 'Failed') and c['status'] == 'True':
            return c['type']
    return None


def _job_finished(job):  # JobFinished: Complete or Failed True
    for c in job['status'].get('conditions') or []:
        if c['type'] in ('Complete', 'Failed') and c['status'] == 'True':
            return c['type'], c['lastTransitionTime']
    return None, None


def _fail(store, js, reason, message) -> None:
    """failure_policy.go setJobSetFailedCondition."""
    _set_condition(store, js, 'Failed', 'True', reason, message, 'Warning')
    _set_condition(store, js, 'Restarting', 'False', 'JobSetFailed', 'jobset failed')
    js['status']['terminalState'] = 'Failed'


def _construct_job(js, rjob, index: int):
    """jobset_controller.go constructJob + labelAndAnnotateObject (on the Job and its pod
    template), the subdomain when DNS hostnames are on; the controller reference
    (createJobs: SetControllerReference)."""
    name, meta = f'{js["metadata"]["name"]}-{rjob["name"]}-{index}', js['metadata']
    total = sum(r['replicas'] for r in js['spec']['replicatedJobs'])
    before = 0
    for other in js['spec']['replicatedJobs']:
        if other['name'] == rjob['name']:
            break
        before += other['replicas']
    marks = {NAME_KEY: meta['name'], 'jobset.sigs.k8s.io/jobset-uid': meta['uid'],
             RJOB_KEY: rjob['name'], RESTARTS_KEY: str(js['status']['restarts']),
             'jobset.sigs.k8s.io/replicatedjob-replicas': str(rjob['replicas']),
             'jobset.sigs.k8s.io/global-replicas': str(total),
             JOB_INDEX_KEY: str(index),
             'jobset.sigs.k8s.io/job-key': hashlib.sha1(
                 f'{meta["namespace"]}/{name}'.encode()).hexdigest(),
             'jobset.sigs.k8s.io/job-global-index': str(before + index),
             'jobset.sigs.k8s.io/group-name': rjob.get('groupName', 'default'),
             'jobset.sigs.k8s.io/group-replicas': str(total),
             'jobset.sigs.k8s.io/job-group-index': str(before + index)}
    template = rjob['template']
    spec = copy.deepcopy(template['spec'])
    pod_meta = spec['template'].setdefault('metadata', {})
    pod_meta['labels'] = dict(pod_meta.get('labels') or {}, **marks)
    pod_meta['annotations'] = dict(pod_meta.get('annotations') or {}, **marks)
    if js['spec']['network'].get('enableDNSHostnames'):
        spec['template']['spec']['subdomain'] = subdomain(js)
    spec['suspend'] = False
    job_meta = template.get('metadata') or {}
    return {'apiVersion': 'batch/v1', 'kind': 'Job', 'spec': spec, 'metadata': {
        'name': name, 'namespace': meta['namespace'],
        'labels': dict(job_meta.get('labels') or {}, **marks),
        'annotations': dict(job_meta.get('annotations') or {}, **marks),
        'ownerReferences': [{'apiVersion': f'{GROUP}/{VERSION}', 'kind': 'JobSet',
                             'name': meta['name'], 'uid': meta['uid'], 'controller': True,
                             'blockOwnerDeletion': True}]}}


def reconcile(store, js) -> None:
    """JobSetReconciler.Reconcile -> reconcile, one pass."""
    meta, spec, status = js['metadata'], js['spec'], js['status']
    if meta.get('deletionTimestamp'):  # jobSetMarkedForDeletion
        return
    jobs = store.owned('Job', meta['uid'])   # getChildJobs: controller reference by uid
    previous, active, failed, successful = [], [], [], []
    for job in jobs:
        if int(job['metadata']['labels'][RESTARTS_KEY]) < status['restarts']:
            previous.append(job)   # from before a restart: to be deleted
            continue
        {None: active, 'Failed': failed, 'Complete': successful}[_job_finished(job)[0]].append(
            job)
    statuses = []   # calculateReplicatedJobStatuses
    for rjob in spec['replicatedJobs']:
        def mine(group, name=rjob['name']):
            return [j for j in group if j['metadata']['labels'][RJOB_KEY] == name]
        ready = sum(j['status'].get('succeeded', 0) + j['status'].get('ready', 0) >= min(
            j['spec']['parallelism'], j['spec'].get('completions') or j['spec']['parallelism'])
            for j in mine(active))
        statuses.append(dict(name=rjob['name'], ready=ready, succeeded=len(mine(successful)),
                             failed=len(mine(failed)),
                             active=sum(j['status'].get('active', 0) > 0 for j in mine(active)),
                             suspended=0))
    status['replicatedJobsStatus'] = statuses
    if finished(js):   # the active Jobs go; nothing else changes
        store.delete_jobs(active)
        return
    store.delete_jobs(previous)   # deleteJobs: Foreground
    if failed:
        _execute_failure_policy(store, js, failed)
        return
    if successful:  # success_policy.go executeSuccessPolicy (operator All, or Any)
        targets = spec['successPolicy'].get('targetReplicatedJobs') or [
            r['name'] for r in spec['replicatedJobs']]
        matching = sum(j['metadata']['labels'][RJOB_KEY] in targets for j in successful)
        expected = 1 if spec['successPolicy']['operator'] == 'Any' else sum(
            r['replicas'] for r in spec['replicatedJobs'] if r['name'] in targets)
        if matching >= expected:
            _set_condition(store, js, 'Completed', 'True', 'AllJobsCompleted',
                           'jobset completed successfully')
            _set_condition(store, js, 'Restarting', 'False', 'JobSetCompleted',
                           'jobset completed successfully')
            status['terminalState'] = 'Completed'
            return
    if spec['network'].get('enableDNSHostnames'):   # createHeadlessSvcIfNecessary
        name = subdomain(js)
        if (meta['namespace'], name) not in store.services:
            store.services[(meta['namespace'], name)] = {'metadata': {
                'name': name, 'namespace': meta['namespace'], 'ownerReferences': [{
                    'apiVersion': f'{GROUP}/{VERSION}', 'kind': 'JobSet', 'name': meta['name'],
                    'uid': meta['uid'], 'controller': True, 'blockOwnerDeletion': True}]},
                'spec': {'clusterIP': 'None', 'selector': {NAME_KEY: meta['name']},
                         'publishNotReadyAddresses': spec['network'][
                             'publishNotReadyAddresses']}}
    names = {j['metadata']['name'] for j in jobs}   # shouldCreateJob: any owned Job's name
    for rjob in spec['replicatedJobs']:   # reconcileReplicatedJobs, constructJobsFromTemplate
        for index in range(rjob['replicas']):
            job = _construct_job(js, rjob, index)
            if job['metadata']['name'] in names:
                continue
            error = store.try_create('Job', meta['namespace'], job)
            if error:
                store.event(js, 'Warning', 'JobCreationFailed',
                            f'job "{job["metadata"]["name"]}" creation failed with error: '
                            f'{error}', 'jobset-controller')
                return
    ready = sum(s['ready'] + s['succeeded'] for s in statuses)
    if ready == sum(r['replicas'] for r in spec['replicatedJobs']):   # allJobsReady
        _set_condition(store, js, 'Restarting', 'False', 'JobsReady', 'all jobs are ready')


def _execute_failure_policy(store, js, failed) -> None:
    """failure_policy.go executeFailurePolicy: without a failurePolicy the JobSet fails; with
    one (no rules), the default action RestartJobSet recreates every Job (restarts + 1: the
    older Jobs become `previous` and are deleted) until restartsCountTowardsMax reaches
    maxRestarts, then fails."""
    first = min(failed, key=lambda j: _job_finished(j)[1])['metadata']['name']
    status, policy = js['status'], js['spec'].get('failurePolicy')
    if policy is None:
        _fail(store, js, 'FailedJobs', f'jobset failed due to one or more job failures '
                                       f'(first failed job: {first})')
        return
    if status['restartsCountTowardsMax'] >= policy.get('maxRestarts', 0):
        _fail(store, js, 'ReachedMaxRestarts', f'jobset failed due to reaching max number of '
                                               f'restarts (first failed job: {first})')
        return
    message = f'applying RestartJobSet failure policy action (first failed job: {first})'
    status['restarts'] += 1   # failurePolicyRecreateAll
    status['restartsCountTowardsMax'] += 1
    store.event(js, 'Warning', 'RestartJobSetFailurePolicyAction', message, 'jobset-controller')
    _set_condition(store, js, 'Restarting', 'True', 'DefaultFailurePolicy', message, 'Warning')
