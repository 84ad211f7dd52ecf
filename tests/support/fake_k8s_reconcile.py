"""The fake Training Operator's reconcile of one TFJob, in the order of v1.9.0's
pkg/controller.v1/common/job.go ReconcileJobs. Test support only (fake_k8s_server.py calls
reconcile() for each job from its sync loop; admission and helpers are in fake_k8s_operator.py).

The order matters to a job's users: a finished job only has its pods cleaned (cleanPodPolicy)
and its status frozen; backoffLimit and activeDeadlineSeconds delete every pod and Service
*before* the job is marked Failed, whatever cleanPodPolicy says (kubeflow/trainer#3419), so the
failed pod's log is gone; only then are missing pods (re)created and the status updated.
"""
import copy
import time

from fake_k8s_scheduler import now
from fake_k8s_operator import CONTAINER, JOB_LABEL, KIND, _condition, _pod_name, finished, \
    tf_config

ORDER = ('Chief', 'Evaluator', 'Master', 'PS', 'Worker')  # UpdateJobStatus's allTypes


class CreateError(Exception):
    pass


def _owned(store, kind: str, job):
    """GetPodsForJob/GetServicesForJob: the job's label, and controlled by this job's uid
    (util.go JobControlledPodList); a same-name job's leftovers are someone else's."""
    objects = store.pods if kind == 'pods' else store.services
    uid, name = job['metadata']['uid'], job['metadata']['name']
    return [o for o in objects.values()
            if o['metadata']['namespace'] == job['metadata']['namespace']
            and (o['metadata'].get('labels') or {}).get(JOB_LABEL) == name
            and any(r.get('uid') == uid and r.get('controller')
                    for r in o['metadata'].get('ownerReferences') or [])]


def _delete_pods_and_services(store, job, pods, status) -> None:
    """job.go DeletePodsAndServices: cleanPodPolicy counts only once the job has finished."""
    policy = job['spec']['runPolicy']['cleanPodPolicy']
    if finished(status) and policy == 'None':
        return
    for pod in pods:
        if finished(status) and policy == 'Running' and \
                pod['status'].get('phase') not in ('Running', 'Pending'):
            continue
        if not pod['metadata'].get('deletionTimestamp'):  # pod_control.go DeletePod
            store.delete_pod(pod)
            store.event(job, 'Normal', 'SuccessfulDeletePod',
                        f'Deleted pod: {pod["metadata"]["name"]}', 'tfjob-controller')
        store.services.pop((pod['metadata']['namespace'], pod['metadata']['name']), None)


def _record_abnormal(store, job, active) -> None:
    """pkg/core/job.go RecordAbnormalPods: waiting containers, or a pod's latest false
    condition (e.g. Unschedulable), become Warning events on the job."""
    for pod in active:
        statuses = pod['status'].get('containerStatuses')
        for s in statuses or []:
            waiting = s['state'].get('waiting')
            if waiting and waiting.get('message'):
                store.event(job, 'Warning', waiting['reason'],
                            f'Error pod {pod["metadata"]["name"]} container {s["name"]} '
                            f'waiting message: {waiting["message"]}', 'tfjob-controller')
        conditions = pod['status'].get('conditions') or []
        if not statuses and conditions and conditions[-1]['status'] != 'True':
            store.event(job, 'Warning', conditions[-1].get('reason', ''),
                        f'Error pod {pod["metadata"]["name"]} condition message: '
                        f'{conditions[-1].get("message", "")}', 'tfjob-controller')


def _create_pod(store, job, rtype: str, index: int, replica) -> None:
    """common/pod.go createNewPod + control/pod_control.go createPods: labels, TF_CONFIG in
    the `tensorflow` container (SetClusterSpec), restartPolicy, the controller reference."""
    meta, template = job['metadata'], copy.deepcopy(replica['template'])
    name = _pod_name(job, rtype, index)
    labels = dict(template.get('metadata', {}).get('labels') or {}, **{
        'training.kubeflow.org/operator-name': 'tfjob-controller', JOB_LABEL: meta['name'],
        'training.kubeflow.org/replica-type': rtype.lower(),
        'training.kubeflow.org/replica-index': str(index)})
    if rtype == 'Worker' and index == 0 and not any(t in job['spec']['tfReplicaSpecs']
                                                    for t in ('Chief', 'Master')):
        labels['training.kubeflow.org/job-role'] = 'master'  # IsMasterRole
    spec = template['spec']
    if sum(r['replicas'] for r in job['spec']['tfReplicaSpecs'].values()) != 1:  # isDistributed
        for container in spec['containers']:
            if container['name'] == CONTAINER:
                container.setdefault('env', []).append(
                    {'name': 'TF_CONFIG', 'value': tf_config(job, rtype, index)})
                break
    spec['restartPolicy'] = replica['restartPolicy']
    pod = {'apiVersion': 'v1', 'kind': 'Pod', 'spec': spec, 'metadata': {
        'name': name, 'namespace': meta['namespace'], 'labels': labels,
        'annotations': dict(template.get('metadata', {}).get('annotations') or {}),
        'ownerReferences': [{'apiVersion': 'kubeflow.org/v1', 'kind': KIND,
                             'name': meta['name'], 'uid': meta['uid'], 'controller': True,
                             'blockOwnerDeletion': True}]}}
    error = store.create_pod(pod)
    if error:
        store.event(job, 'Warning', 'FailedCreatePod', f'Error creating: {error}',
                    'tfjob-controller')
        raise CreateError(error)
    store.event(job, 'Normal', 'SuccessfulCreatePod', f'Created pod: {name}', 'tfjob-controller')
    # common/service.go CreateNewService: a headless Service of the same name and labels.
    store.services[(meta['namespace'], name)] = {'metadata': {
        'name': name, 'namespace': meta['namespace'], 'labels': labels,
        'ownerReferences': pod['metadata']['ownerReferences']},
        'spec': {'clusterIP': 'None', 'selector': labels}}


def reconcile(store, job) -> None:
    """TFJobReconciler.Reconcile -> ReconcileJobs, for one pass of the work queue."""
    meta = job['metadata']
    if meta.get('deletionTimestamp'):  # Reconcile: "reconcile cancelled ... has been deleted"
        return
    replicas, run_policy = job['spec']['tfReplicaSpecs'], job['spec']['runPolicy']
    for replica in replicas.values():
        if replica['restartPolicy'] != 'Never':
            raise NotImplementedError('fake operator: only restartPolicy Never is modelled')
    status = copy.deepcopy(job.get('status') or {})
    if not status.get('conditions'):  # onOwnerCreateFunc
        _condition(status, 'Created', 'True', f'{KIND}Created', f'{KIND} {meta["name"]} is '
                   'created.')
    pods = _owned(store, 'pods', job)
    if finished(status):  # IsFinished: clean up, status frozen (conditions and counts)
        _delete_pods_and_services(store, job, pods, status)
        if finished(status) == 'Succeeded':  # still-active replicas count as succeeded
            for counts in (status.get('replicaStatuses') or {}).values():
                counts['succeeded'] = counts.get('succeeded', 0) + counts.pop('active', 0)
        job['status'] = status
        return
    active = [p for p in pods if p['status'].get('phase') not in ('Succeeded', 'Failed')
              and not p['metadata'].get('deletionTimestamp')]  # k8sutil.FilterActivePods
    _record_abnormal(store, job, active)
    failed = sum(p['status'].get('phase') == 'Failed' for p in pods)
    previous = sum(s.get('failed', 0) for s in (status.get('replicaStatuses') or {}).values())
    total = sum(r['replicas'] for r in replicas.values())
    message = ''
    limit = run_policy.get('backoffLimit')
    if limit is not None and failed > previous and len(active) != total and \
            store.requeues.get(meta['uid'], 0) + 1 > limit:
        message = f'Job {meta["name"]} has failed because it has reached the specified ' \
                  'backoff limit'
    elif run_policy.get('activeDeadlineSeconds') is not None and status.get('startTime') and \
            time.time() - store.started[meta['uid']] >= run_policy['activeDeadlineSeconds']:
        message = f'Job {meta["name"]} has failed because it was active longer than ' \
                  'specified deadline'  # core/job.go PastActiveDeadline
    if message:  # jobExceedsLimit: pods and services first, then Failed
        status.setdefault('completionTime', now())
        _delete_pods_and_services(store, job, pods, status)
        store.event(job, 'Normal', f'{KIND}Failed', message, 'tfjob-controller')
        _condition(status, 'Failed', 'True', f'{KIND}Failed', message)
        job['status'] = status
        return
    try:
        for rtype, replica in replicas.items():  # ReconcilePods, ReconcileServices
            status.setdefault('replicaStatuses', {})[rtype] = counts = {}
            mine = [p for p in pods if p['metadata']['labels'].get(
                'training.kubeflow.org/replica-type') == rtype.lower()]
            for index in range(replica['replicas']):
                slot = [p for p in mine if p['metadata']['labels'].get(
                    'training.kubeflow.org/replica-index') == str(index)]
                if not slot:
                    _create_pod(store, job, rtype, index, replica)
                    continue
                phase = slot[0]['status'].get('phase')  # updateJobReplicaStatuses
                key = {'Running': 'active', 'Succeeded': 'succeeded', 'Failed': 'failed'}.get(phase)
                if key:
                    counts[key] = counts.get(key, 0) + 1
    except CreateError:  # returned to the work queue: retried with backoff, status untouched
        store.requeues[meta['uid']] = store.requeues.get(meta['uid'], 0) + 1
        return
    store.requeues[meta['uid']] = 0  # success: the queue Forget()s the key
    _update_job_status(store, job, status, pods)
    job['status'] = status


def _update_job_status(store, job, status, pods) -> None:
    """tfjob_controller.go UpdateJobStatus, for jobs without Chief/Master (ours)."""
    meta, replicas = job['metadata'], job['spec']['tfReplicaSpecs']
    name = f'{meta["namespace"]}/{meta["name"]}'
    if not status.get('startTime'):
        status['startTime'] = now()
        store.started[meta['uid']] = time.time()
    worker0 = [p for p in pods if p['metadata']['labels'].get(
        'training.kubeflow.org/replica-type') == 'worker' and p['metadata']['labels'].get(
        'training.kubeflow.org/replica-index') == '0']
    worker0_done = 'Worker' not in replicas or (len(worker0) == 1 and worker0[0]['status'].get(
        'phase') == 'Succeeded')  # IsWorker0Completed
    for rtype in ORDER:
        if rtype not in replicas:
            continue
        counts = status['replicaStatuses'][rtype]
        expected = replicas[rtype]['replicas'] - counts.get('succeeded', 0)
        chief_spec = any(t in replicas for t in ('Chief', 'Master'))
        succeeded = running = False
        if chief_spec and rtype in ('Chief', 'Master'):
            running, succeeded = counts.get('active', 0) > 0, expected == 0
        elif not chief_spec and rtype == 'Worker':  # default success policy: worker 0 decides
            succeeded = expected == 0 or (worker0_done and
                                          job['spec'].get('successPolicy') != 'AllWorkers')
            running = not succeeded and counts.get('active', 0) > 0
        if running:
            _condition(status, 'Running', 'True', f'{KIND}Running', f'{KIND} {name} is running.')
        if succeeded:
            store.event(job, 'Normal', f'{KIND}Succeeded', f'{KIND} {name} successfully '
                        'completed.', 'tfjob-controller')
            status.setdefault('completionTime', now())
            _condition(status, 'Succeeded', 'True', f'{KIND}Succeeded',
                       f'{KIND} {name} successfully completed.')
        if counts.get('failed', 0) > 0:
            message = f'{KIND} {name} has failed because {counts["failed"]} {rtype} ' \
                      'replica(s) failed.'
            store.event(job, 'Normal', f'{KIND}Failed', message, 'tfjob-controller')
            status.setdefault('completionTime', now())
            _condition(status, 'Failed', 'True', f'{KIND}Failed', message)
