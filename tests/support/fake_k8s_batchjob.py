"""The fake cluster's Job controller (batch/v1 Jobs, as JobSet creates them): Indexed Jobs only.
Test support only: fake_k8s_cluster.py calls reconcile() for every Job from its sync loop, under
its lock.

Each rule names its source in kubernetes/kubernetes (v1.31+, where Jobs finish through the
FailureTarget / SuccessCriteriaMet conditions and PodIndexLabel is on):
- pods: one per completion index not yet succeeded and without an active pod, named
  `<job>-<index>-<5 random>` (indexed_job_utils.go podGenerateNameWithIndex) with the hostname
  `<job>-<index>` (job_controller.go manageJob), the index as annotation and label
  `batch.kubernetes.io/job-completion-index` (addCompletionIndexAnnotation,
  addCompletionIndexLabel) and JOB_COMPLETION_INDEX in every container from that label
  (addCompletionIndexEnvVariable), the Job's labels `batch.kubernetes.io/job-name`,
  `batch.kubernetes.io/controller-uid` (and the legacy `job-name`, `controller-uid`; batch
  strategy.go generateSelector) and a controller reference (CreatePodsWithGenerateName);
- failure: a Job whose failed pods exceed backoffLimit (default 6) gets FailureTarget
  (BackoffLimitExceeded, "Job has reached the specified backoff limit"), its active pods are
  deleted (syncJob: jobCtx.finishedCondition, deleteActivePods), and Failed follows once no pod
  is left running or terminating (enactJobFinished);
- a failed pod below the limit is replaced after a backoff of 10 s doubling per failure
  (pod_failure_policy / backoff_utils.go: DefaultJobPodFailureBackOff 10 s, max 10 min);
- success: every index succeeded -> SuccessCriteriaMet, then Complete (CompletionsReached,
  "Reached expected number of succeeded pods");
- status: active, ready, succeeded, failed, terminating, completedIndexes, startTime.
Not modelled (refused with NotImplementedError, a test-support error): NonIndexed completion,
suspend, podFailurePolicy, backoffLimitPerIndex, successPolicy, activeDeadlineSeconds,
restartPolicy OnFailure (in-place restarts, which the fake kubelet does not do either).
"""
import copy
import random
import string
import time

from fake_k8s_scheduler import now

INDEX_KEY = 'batch.kubernetes.io/job-completion-index'
BACKOFF_S, MAX_BACKOFF_S = 10.0, 600.0


def admit(body):
    """batch/v1 defaults (apis/batch/v1/defaults.go SetDefaults_Job): backoffLimit 6,
    parallelism and completions 1, completionMode NonIndexed, the selector and its labels
    (strategy.go generateSelector happens in create())."""
    job = copy.deepcopy(body)
    spec = job['spec']
    spec.setdefault('backoffLimit', 6)
    spec.setdefault('parallelism', 1)
    spec.setdefault('completions', spec['parallelism'])
    spec.setdefault('completionMode', 'NonIndexed')
    for field in ('podFailurePolicy', 'backoffLimitPerIndex', 'successPolicy',
                  'activeDeadlineSeconds'):
        if field in spec:
            raise NotImplementedError(f'fake Job controller: {field}')
    if spec['completionMode'] != 'Indexed':
        raise NotImplementedError('fake Job controller: only Indexed Jobs are modelled')
    if spec['template']['spec'].get('restartPolicy') != 'Never':
        raise NotImplementedError('fake Job controller: only restartPolicy Never is modelled '
                                  '(OnFailure restarts containers in place)')
    labels = {'batch.kubernetes.io/controller-uid': '', 'batch.kubernetes.io/job-name':
              job['metadata']['name'], 'controller-uid': '', 'job-name': job['metadata']['name']}
    template_meta = spec['template'].setdefault('metadata', {})
    template_meta['labels'] = dict(template_meta.get('labels') or {}, **labels)
    job['status'] = {}
    return job


def created(job) -> None:
    """strategy.go generateSelector: the controller-uid labels carry the new uid."""
    uid = job['metadata']['uid']
    labels = job['spec']['template']['metadata']['labels']
    labels['batch.kubernetes.io/controller-uid'] = labels['controller-uid'] = uid
    job['spec']['selector'] = {'matchLabels': {'batch.kubernetes.io/controller-uid': uid}}


def _condition(job, type_: str, reason: str, message: str) -> None:
    conditions = job['status'].setdefault('conditions', [])
    if not any(c['type'] == type_ for c in conditions):
        conditions.append(dict(type=type_, status='True', reason=reason, message=message,
                               lastProbeTime=now(), lastTransitionTime=now()))


def finished(job):
    """job_controller.go IsJobFinished: Complete or Failed True."""
    for c in job['status'].get('conditions') or []:
        if c['type'] in ('Complete', 'Failed') and c['status'] == 'True':
            return c['type']
    return None


def _has(job, type_: str) -> bool:
    return any(c['type'] == type_ and c['status'] == 'True'
               for c in job['status'].get('conditions') or [])


def _ranges(indexes) -> str:
    """indexed_job_utils.go orderedIntervals.String: "0-2,4"."""
    out, items = [], sorted(indexes)
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == items[j] + 1:
            j += 1
        out.append(str(items[i]) if i == j else f'{items[i]}-{items[j]}')
        i = j + 1
    return ','.join(out)


def _create_pod(store, job, index: int) -> None:
    meta = job['metadata']
    template = copy.deepcopy(job['spec']['template'])
    tmeta = template.setdefault('metadata', {})
    tmeta['annotations'] = dict(tmeta.get('annotations') or {}, **{INDEX_KEY: str(index)})
    tmeta['labels'] = dict(tmeta.get('labels') or {}, **{INDEX_KEY: str(index)})
    spec = template['spec']
    spec['hostname'] = f'{meta["name"]}-{index}'
    for container in spec['containers']:
        env = container.setdefault('env', [])
        if not any(v['name'] == 'JOB_COMPLETION_INDEX' for v in env):
            env.append({'name': 'JOB_COMPLETION_INDEX', 'valueFrom': {'fieldRef': {
                'fieldPath': f"metadata.labels['{INDEX_KEY}']"}}})
    suffix = ''.join(random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
    name = f'{meta["name"]}-{index}-{suffix}'
    pod = {'apiVersion': 'v1', 'kind': 'Pod', 'spec': spec, 'metadata': {
        'name': name, 'namespace': meta['namespace'], 'labels': tmeta['labels'],
        'annotations': tmeta['annotations'],
        'ownerReferences': [{'apiVersion': 'batch/v1', 'kind': 'Job', 'name': meta['name'],
                             'uid': meta['uid'], 'controller': True,
                             'blockOwnerDeletion': True}]}}
    error = store.create_pod(pod)
    if error:
        store.event(job, 'Warning', 'FailedCreate', f'Error creating: {error}', 'job-controller')
        return
    store.event(job, 'Normal', 'SuccessfulCreate', f'Created pod: {name}', 'job-controller')


def reconcile(store, job) -> None:
    """job_controller.go syncJob for one Indexed Job."""
    meta, spec, status = job['metadata'], job['spec'], job['status']
    if finished(job) or meta.get('deletionTimestamp'):
        # A Job being deleted (JobSet deletes its Jobs in the foreground) is left to the
        # garbage collector: no new pods (an assumption of this fake, not read in the source).
        return
    pods = store.owned_pods(meta['uid'])
    status.setdefault('startTime', now())
    terminal = {'Succeeded', 'Failed'}
    active = [p for p in pods if p['status'].get('phase') not in terminal
              and not p['metadata'].get('deletionTimestamp')]
    terminating = [p for p in pods if p['status'].get('phase') not in terminal
                   and p['metadata'].get('deletionTimestamp')]
    # job_controller.go isPodFailed: with podReplacementPolicy TerminatingOrFailed (the default
    # without podFailurePolicy) a pod being deleted counts as failed before it reaches a phase
    # ("Count deleted Pods as failures to account for orphan Pods that never have a chance to
    # reach the Failed phase"), so a deleted pod uses up the backoff limit like a failed one.
    failed = [p for p in pods if p['status'].get('phase') == 'Failed' or (
        p['metadata'].get('deletionTimestamp') and p['status'].get('phase') != 'Succeeded')]
    # A pod's failure counts once, also after the pod is gone (the job-tracking finalizer).
    seen = store.job_failures.setdefault(meta['uid'], {})
    for pod in failed:
        seen.setdefault(pod['metadata']['uid'], time.time())
    succeeded = {int(p['metadata']['annotations'][INDEX_KEY]) for p in pods
                 if p['status'].get('phase') == 'Succeeded'} | set(
        store.job_succeeded.setdefault(meta['uid'], set()))
    store.job_succeeded[meta['uid']] = succeeded
    ready = sum(any(c['type'] == 'Ready' and c['status'] == 'True'
                    for c in p['status'].get('conditions') or []) for p in active)
    status.update(active=len(active), ready=ready, failed=len(seen), succeeded=len(succeeded),
                  terminating=len(terminating), completedIndexes=_ranges(succeeded))
    if _has(job, 'FailureTarget') or _has(job, 'SuccessCriteriaMet'):
        if not active and not terminating:  # enactJobFinished
            target = next(c for c in status['conditions'] if c['type'] in (
                'FailureTarget', 'SuccessCriteriaMet'))
            type_ = 'Failed' if target['type'] == 'FailureTarget' else 'Complete'
            _condition(job, type_, target['reason'], target['message'])
            status['completionTime' if type_ == 'Complete' else 'failedTime'] = now()
            store.event(job, 'Normal' if type_ == 'Complete' else 'Warning',
                        'Completed' if type_ == 'Complete' else target['reason'],
                        'Job completed' if type_ == 'Complete' else target['message'],
                        'job-controller')
        for pod in active:  # deleteActivePods
            store.delete_pod(pod)
        return
    if len(seen) > spec['backoffLimit']:
        _condition(job, 'FailureTarget', 'BackoffLimitExceeded',
                   'Job has reached the specified backoff limit')
        for pod in active:
            store.delete_pod(pod)
            store.event(job, 'Normal', 'SuccessfulDelete',
                        f'Deleted pod: {pod["metadata"]["name"]}', 'job-controller')
        return
    if len(succeeded) >= spec['completions']:
        _condition(job, 'SuccessCriteriaMet', 'CompletionsReached',
                   'Reached expected number of succeeded pods')
        return
    if seen:  # the pod failure backoff, from the last failure
        delay = min(BACKOFF_S * 2 ** (len(seen) - 1), MAX_BACKOFF_S)
        if time.time() < max(seen.values()) + delay:
            return
    # podReplacementPolicy TerminatingOrFailed (the default without podFailurePolicy): a
    # terminating pod's index is replaced at once.
    busy = {int(p['metadata']['annotations'][INDEX_KEY]) for p in active}
    wanted = [i for i in range(spec['completions']) if i not in succeeded and i not in busy]
    for index in wanted[:max(0, spec['parallelism'] - len(active))]:
        _create_pod(store, job, index)
