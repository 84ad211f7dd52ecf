"""The fake cluster's kubelet for its one node: what happens to a pod once the API
server has stored it. Test support only (driven by fake_k8s_server.py's sync loop, under its lock).

Transcribed behaviours, each from the Kubernetes source named beside it (scheduling, before
this: fake_k8s_scheduler.py):
- an image the fake flags as unpullable: ErrImagePull then ImagePullBackOff, Pending forever;
- containers run as local processes inside the pod's sandbox (fake_k8s_network.py), with only
  the image's environment (image_env: PATH to the image's python, LANG, the Dockerfile's ENV
  such as HOME), HOSTNAME and the container's own env (for `tensorflow`, the operator's
  TF_CONFIG) - never the test's;
- the pod phase from its containers (getPhase), so a running sidecar keeps a pod Running;
- graceful deletion: SIGTERM, the grace period, SIGKILL, then the pod object goes.
"""
import datetime
import os
import signal
import subprocess
import sys
from typing import Any, Dict, List, Optional

import fake_k8s_network
import fake_k8s_scheduler
from fake_k8s_scheduler import now

ISTIO_CONTAINER = 'istio-proxy'


def image_env(workdir: str) -> Dict[str, str]:
    """The image's environment: python:3.11-slim's (PATH, LANG; here PATH leads to this
    interpreter, the image's python), then the Dockerfile's own ENV lines (e.g. HOME)."""
    env = {'PATH': f'{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin',
           'LANG': 'C.UTF-8', 'HOME': '/root'}
    with open(os.path.join(workdir, 'Dockerfile')) as handle:
        for line in handle:
            if line.startswith('ENV '):
                env.update(pair.split('=', 1) for pair in line.split()[1:])
    return env


def _field(pod, var) -> str:
    """The downward API's fieldRef (kubelet_pods.go makeEnvironmentVariables ->
    podFieldSelectorRuntimeValue, fieldpath.ExtractFieldPathAsString): metadata.name,
    .namespace, .uid, .labels['k'], .annotations['k']; a missing key is ''. Other sources
    (secretKeyRef, configMapKeyRef, resourceFieldRef) are not modelled."""
    path = ((var.get('valueFrom') or {}).get('fieldRef') or {}).get('fieldPath', '')
    meta = pod['metadata']
    for field in ('labels', 'annotations'):
        prefix = f"metadata.{field}['"
        if path.startswith(prefix) and path.endswith("']"):
            return (meta.get(field) or {}).get(path[len(prefix):-2], '')
    if path in ('metadata.name', 'metadata.namespace', 'metadata.uid'):
        return meta[path.split('.')[1]]
    raise NotImplementedError(f'fake kubelet: env valueFrom ({var})')


class Kubelet:
    def __init__(self, store, log_dir: str, workdir: str, allocatable: Dict[str, str],
                 unpullable: List[str]):
        self.store, self.log_dir, self.workdir = store, log_dir, workdir
        self.scheduler = fake_k8s_scheduler.Scheduler(store, allocatable, self._start)
        self.unpullable = set(unpullable)
        self.node = fake_k8s_network.Node(os.path.join(log_dir, 'hosts'))
        self.running: Dict[str, Dict[str, Any]] = {}  # pod uid -> sandbox, processes

    # --- kubelet --------------------------------------------------------------------------
    def _start(self, pod) -> None:
        """SyncPod: pull the images, make the sandbox, start the containers in order."""
        meta, statuses = pod['metadata'], []
        bad = [c for c in pod['spec']['containers'] if c['image'] in self.unpullable]
        for container in bad:  # kuberuntime_image.go EnsureImageExists
            image = container['image']
            for type_, reason, message in (
                    ('Normal', 'Pulling', f'Pulling image "{image}"'),
                    ('Warning', 'Failed', f'Failed to pull image "{image}": rpc error: code = '
                     f'NotFound desc = failed to pull and unpack image "{image}": not found'),
                    ('Warning', 'Failed', 'Error: ErrImagePull'),
                    ('Normal', 'BackOff', f'Back-off pulling image "{image}"'),
                    ('Warning', 'Failed', 'Error: ImagePullBackOff')):
                self.store.event(pod, type_, reason, message, 'kubelet')
        if bad:
            for container in pod['spec']['containers']:
                statuses.append(dict(name=container['name'], image=container['image'],
                                     imageID='', ready=False, restartCount=0, started=False,
                                     state={'waiting': {'reason': 'ImagePullBackOff',
                                            'message': f'Back-off pulling image '
                                                       f'"{container["image"]}"'}}))
            names = ' '.join(c['name'] for c in pod['spec']['containers'])
            unready = dict(status='False', reason='ContainersNotReady',
                           message=f'containers with unready status: [{names}]')
            pod['status'] = {'phase': 'Pending', 'hostIP': '10.0.0.1', 'startTime': now(),
                             'conditions': [dict(type='PodScheduled', status='True'),
                                            dict(type='Initialized', status='True'),
                                            dict(type='ContainersReady', **unready),
                                            dict(type='Ready', **unready)],
                             'containerStatuses': statuses}
            return
        sandbox = self.node.sandbox(meta['uid'])
        folder = os.path.join(self.log_dir, 'pods',
                              f'{meta["namespace"]}_{meta["name"]}_{meta["uid"]}')
        processes = {}
        for container in pod['spec']['containers']:
            # kubelet_pods.go GeneratePodHostNameAndDomain: spec.hostname when set (an
            # Indexed Job's pods), else the pod's name.
            env = dict(image_env(self.workdir), HOSTNAME=self.hostname(pod))
            for var in container.get('env') or []:
                env[var['name']] = var['value'] if 'value' in var else _field(pod, var)
            log = os.path.join(folder, container['name'], '0.log')
            os.makedirs(os.path.dirname(log), exist_ok=True)
            with open(log, 'ab') as output:
                args = list(container.get('command') or []) + list(container.get('args') or [])
                processes[container['name']] = dict(log=log, started=now(), process=
                    subprocess.Popen(sandbox.command(args, container.get('workingDir')
                                                     or self.workdir), env=env,
                                     stdout=output, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True))
            for reason, message in (
                    ('Pulled', f'Container image "{container["image"]}" already present on '
                               'machine'), ('Created', f'Created container {container["name"]}'),
                    ('Started', f'Started container {container["name"]}')):
                self.store.event(pod, 'Normal', reason, message, 'kubelet')
        self.running[meta['uid']] = dict(sandbox=sandbox, containers=processes, killed_at=None)
        pod['status'] = {'phase': 'Running', 'hostIP': '10.0.0.1', 'podIP': sandbox.ip,
                         'podIPs': [{'ip': sandbox.ip}], 'startTime': now()}

    def _status(self, pod, run) -> None:
        """Container statuses and the phase (kubelet_pods.go getPhase, restartPolicy Never)."""
        statuses, running, failed = [], 0, 0
        for container in pod['spec']['containers']:
            state = run['containers'][container['name']]
            code = state['process'].poll()
            if code is not None and 'finished' not in state:
                state['finished'] = now()
            if code is None:
                running += 1
                status = {'running': {'startedAt': state['started']}}
            else:
                failed += code != 0
                status = {'terminated': {
                    'exitCode': code if code >= 0 else 128 - code,  # a signal: 128 + n
                    'reason': 'Completed' if code == 0 else 'Error',
                    'startedAt': state['started'], 'finishedAt': state['finished']}}
            statuses.append(dict(name=container['name'], image=container['image'],
                                 imageID=f'fake://{container["image"]}', ready=code is None,
                                 restartCount=0, started=code is None, state=status))
        phase = 'Running' if running else 'Failed' if failed else 'Succeeded'
        ready = 'True' if running == len(statuses) else 'False'
        pod['status'].update(phase=phase, containerStatuses=statuses, conditions=[
            dict(type='PodScheduled', status='True'), dict(type='Initialized', status='True'),
            dict(type='ContainersReady', status=ready), dict(type='Ready', status=ready)])

    def sync(self) -> None:
        live = {p['metadata']['uid'] for p in self.store.pods.values()}
        for uid in [u for u in self.running if u not in live]:  # deleted at once: clean up
            self._stop(self.running.pop(uid))
        for key, pod in list(self.store.pods.items()):
            uid = pod['metadata']['uid']
            if not pod['spec'].get('nodeName'):
                if pod['metadata'].get('deletionTimestamp'):
                    self.store.remove_pod(key)  # never scheduled: nothing to stop
                else:
                    self.scheduler.schedule(pod)
                continue
            run = self.running.get(uid)
            if run:
                self._status(pod, run)
            if pod['metadata'].get('deletionTimestamp'):
                if run and not self._terminate(pod, run):
                    continue
                self.store.remove_pod(key)  # status_manager: all containers stopped
                if run:
                    self._stop(self.running.pop(uid))
        self._dns()

    def _terminate(self, pod, run) -> bool:
        """kuberuntime_container.go killContainer: SIGTERM, then SIGKILL after the grace
        period. True once every container has exited."""
        grace = pod['metadata'].get('deletionGracePeriodSeconds', 0)
        first = run['killed_at'] is None
        if first:
            run['killed_at'] = datetime.datetime.now()
        late = (datetime.datetime.now() - run['killed_at']).total_seconds() >= grace
        alive = [s['process'] for s in run['containers'].values() if s['process'].poll() is None]
        for process in alive:
            if first or late:
                try:
                    os.killpg(process.pid, signal.SIGKILL if late else signal.SIGTERM)
                except ProcessLookupError:
                    pass
        return not alive

    @staticmethod
    def hostname(pod) -> str:
        return pod['spec'].get('hostname') or pod['metadata']['name']

    def _dns(self) -> None:
        """CoreDNS for headless Services: `<svc>.<ns>.svc` -> the IP of the ready pod the
        Service selects (endpointslice controller: terminating pods are not published, not
        ready ones only with publishNotReadyAddresses); and a pod with a hostname and a
        subdomain naming that Service gets `<hostname>.<subdomain>.<ns>.svc.cluster.local`
        (the kubernetes plugin's pod records), which the pod's resolv.conf search list
        (`<ns>.svc.cluster.local svc.cluster.local cluster.local`, kubelet
        network/dns/dns.go) also resolves as `<hostname>.<subdomain>`, `...<ns>` and
        `...<ns>.svc`: those names are written out, as /etc/hosts has no search list."""
        records: Dict[str, str] = {}
        for service in self.store.services.values():
            selector = service['spec'].get('selector') or {}
            ns, svc = service['metadata']['namespace'], service['metadata']['name']
            for pod in self.store.pods.values():
                labels = pod['metadata'].get('labels') or {}
                ready = any(c['type'] == 'Ready' and c['status'] == 'True'
                            for c in pod['status'].get('conditions') or [])
                ip = pod['status'].get('podIP')
                if (pod['metadata']['namespace'] == ns and ip
                        and (ready or service['spec'].get('publishNotReadyAddresses'))
                        and not pod['metadata'].get('deletionTimestamp')
                        and all(labels.get(k) == v for k, v in selector.items())):
                    records[f'{svc}.{ns}.svc'] = records[f'{svc}.{ns}.svc.cluster.local'] = ip
                    if pod['spec'].get('hostname') and pod['spec'].get('subdomain') == svc:
                        host = f'{pod["spec"]["hostname"]}.{svc}'
                        for suffix in ('', f'.{ns}', f'.{ns}.svc', f'.{ns}.svc.cluster.local'):
                            records[host + suffix] = ip
        for pod in self.store.pods.values():
            run = self.running.get(pod['metadata']['uid'])
            if run:
                run['sandbox'].write_hosts(self.hostname(pod), records)

    def log_path(self, pod, container: Optional[str]) -> str:
        run = self.running.get(pod['metadata']['uid'])
        return run['containers'][container]['log'] if run else ''

    @staticmethod
    def _stop(run) -> None:
        for state in run['containers'].values():
            if state['process'].poll() is None:
                os.killpg(state['process'].pid, signal.SIGKILL)
            state['process'].wait()
        run['sandbox'].close()

    def shutdown(self) -> None:
        for run in self.running.values():
            self._stop(run)
        self.running.clear()
        self.node.shutdown()
