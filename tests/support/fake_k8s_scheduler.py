"""The fake cluster's scheduler for its one node: a pod is bound if its requests fit what the
node has left, else it stays Pending with PodScheduled=False and a FailedScheduling event, as
kube-scheduler reports it (e.g. a GPU the node has not). Test support only (fake_k8s_kubelet.py
calls it for every unbound pod, under fake_k8s_cluster.py's lock).
"""
import datetime
import time
from typing import Any, Dict

NODE = 'fake-node'


def now() -> str:
    """A Kubernetes timestamp (RFC 3339, seconds)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def quantity(text) -> float:
    """resource.Quantity: 500m, 2, 16G, 4Gi (apimachinery/pkg/api/resource)."""
    text = str(text)
    for suffix, scale in (('Ki', 2**10), ('Mi', 2**20), ('Gi', 2**30), ('Ti', 2**40),
                          ('m', 1e-3), ('k', 1e3), ('M', 1e6), ('G', 1e9), ('T', 1e12)):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * scale
    return float(text)


def requests(pod: Dict[str, Any]) -> Dict[str, float]:
    """Summed container requests; requests default to limits (core/v1/defaults.go
    SetDefaults_Pod)."""
    total: Dict[str, float] = {}
    for container in pod['spec']['containers']:
        resources = container.get('resources') or {}
        for name, value in {**(resources.get('limits') or {}),
                            **(resources.get('requests') or {})}.items():
            total[name] = total.get(name, 0.0) + quantity(value)
    return total


class Scheduler:
    def __init__(self, store, allocatable: Dict[str, str], start):
        self.store, self.start = store, start   # start(pod): the kubelet takes a bound pod
        self.allocatable = {k: quantity(v) for k, v in allocatable.items()}
        self.backoff: Dict[str, tuple] = {}  # pod uid -> (next scheduling attempt, backoff)

    def schedule(self, pod) -> None:
        """NodeResourcesFit (scheduler/framework/plugins/noderesources/fit.go fitsRequest)
        against what the pods already bound to the node request. An unschedulable pod is
        retried with backoff, 1 s doubling to 10 s (podInitial/MaxBackoffSeconds)."""
        uid = pod['metadata']['uid']
        retry, backoff = self.backoff.get(uid, (0.0, 0.5))
        if time.time() < retry:
            return
        used: Dict[str, float] = {}
        for other in self.store.pods.values():
            if other['spec'].get('nodeName') and other['status'].get('phase') not in (
                    'Succeeded', 'Failed'):
                for name, amount in requests(other).items():
                    used[name] = used.get(name, 0.0) + amount
        short = sorted(name for name, amount in requests(pod).items()
                       if amount > self.allocatable.get(name, 0.0) - used.get(name, 0.0))
        if short:  # schedule_one.go: the FitError message, and the preemption postscript
            message = ('0/1 nodes are available: ' + ', '.join(f'1 Insufficient {n}'
                                                               for n in short) +
                       '. preemption: 0/1 nodes are available: 1 No preemption victims found '
                       'for incoming pod.')
            pod['status'] = {'phase': 'Pending', 'conditions': [dict(
                type='PodScheduled', status='False', reason='Unschedulable', message=message,
                lastTransitionTime=now())]}
            self.store.event(pod, 'Warning', 'FailedScheduling', message, 'default-scheduler')
            self.backoff[uid] = (time.time() + min(2 * backoff, 10.0), min(2 * backoff, 10.0))
            return
        pod['spec']['nodeName'] = NODE
        meta = pod['metadata']
        self.store.event(pod, 'Normal', 'Scheduled', f'Successfully assigned '
                         f'{meta["namespace"]}/{meta["name"]} to {NODE}', 'default-scheduler')
        self.start(pod)

