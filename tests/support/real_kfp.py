"""What a Kubeflow Pipelines install gives a run, on the real cluster (real_cluster.py): the
compiled Workflow is created in a namespace and run by the real Argo workflow-controller, its pods
by the real kubelet, with Argo's own executor (argoexec), KFP's driver and launcher in pods of
the project's image (kfp_images.py), and the task containers the project's image.

    with Install(namespace, secrets={...}) as kfp:
        workflow = kfp.compile('pipeline.spec.yaml', 's3://bucket/kfp/pipeline_root', 'run-1')
        outcomes = kfp.run(workflow)   # {'ImageTrainer': 'ran', 'SchemaGen': 'cached', ...}

What stays a transcription, because KFP cannot be built here: the API server's compile
(kfp_argo_compiler.py), the driver and launcher programs (KFP's own when `KFP_BIN_DIR` names a
folder with `driver`, `launcher-v2` and `handcompile` built by hand), ML Metadata's gRPC server
(kfp_mlmd_server.py) and the API server's task service (kfp_cache_server.py). Those two servers
run in this process on the host's loopback; the cluster reaches them as KFP's compiler names
them, `metadata-grpc-service.kubeflow.svc.cluster.local:8080` and
`ml-pipeline.kubeflow.svc.cluster.local:8887`: a Service of that name with no selector, whose
EndpointSlice is the API gateway's address, where a relay listens on the port
(real_cluster.PodReachable). CoreDNS answers the names; no kube-proxy is needed.

The run's namespace gets what KFP's profile controller and install give a user's namespace: the
`pipeline-runner` service account with the rights its ClusterRole gives the driver, the launcher
and Argo's executor, and the store's Secret.
"""
import json
import os
import subprocess
import time
from typing import Dict, Optional

import kfp_argo_compiler
import kfp_cache_server
import kfp_images
import kfp_mlmd_server
import real_cluster

KFP_NAMESPACE = 'kubeflow'
SERVICE_ACCOUNT = 'pipeline-runner'
# The Services KFP's compiler names, and their ports (backend/src/v2/metadata/env.go,
# config/env.go; kfp_argo_templates.ServerConfig).
MLMD_SERVICE, MLMD_PORT = 'metadata-grpc-service', 8080
PIPELINE_SERVICE, PIPELINE_PORT = 'ml-pipeline', 8887
# What the driver (ConfigMaps, Secrets, its pod), the launcher (its pod, the store's Secret)
# and Argo's executor (its task results, its pod's annotations) do with the API: the part of
# KFP's pipeline-runner ClusterRole (manifests/kustomize/base/pipeline/pipeline-runner-role.yaml)
# they use, as a Role of the run's namespace.
_RULES = [
    {'apiGroups': [''], 'resources': ['secrets', 'configmaps'], 'verbs': ['get', 'list', 'watch']},
    {'apiGroups': [''], 'resources': ['pods'], 'verbs': ['get', 'list', 'watch', 'patch']},
    {'apiGroups': [''], 'resources': ['pods/log'], 'verbs': ['get']},
    {'apiGroups': ['argoproj.io'], 'resources': ['workflowtaskresults'],
     'verbs': ['create', 'patch', 'get', 'list', 'watch']},
    {'apiGroups': ['argoproj.io'], 'resources': ['workflows'], 'verbs': ['get', 'list', 'watch']},
]
_DONE = ('Succeeded', 'Failed', 'Error')
_FAILED = ('Failed', 'Error')
_NEVER_STARTS = ('CreateContainerConfigError', 'ErrImagePull', 'ImagePullBackOff',
                 'InvalidImageName', 'ErrImageNeverPull')


def _apply(documents) -> None:
    real_cluster.kubectl('apply', '-f', '-', stdin=json.dumps(
        {'apiVersion': 'v1', 'kind': 'List', 'items': documents}))


def runner_account(namespace: str) -> None:
    """KFP's `pipeline-runner` service account in namespace, with its Role (_RULES)."""
    _apply([
        {'apiVersion': 'v1', 'kind': 'ServiceAccount',
         'metadata': {'name': SERVICE_ACCOUNT, 'namespace': namespace}},
        {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'Role',
         'metadata': {'name': SERVICE_ACCOUNT, 'namespace': namespace}, 'rules': _RULES},
        {'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'RoleBinding',
         'metadata': {'name': SERVICE_ACCOUNT, 'namespace': namespace},
         'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'Role',
                     'name': SERVICE_ACCOUNT},
         'subjects': [{'kind': 'ServiceAccount', 'name': SERVICE_ACCOUNT,
                       'namespace': namespace}]}])


def _service(name: str, port: int) -> list:
    """A Service of KFP's name whose one endpoint is the API gateway, where a relay listens."""
    metadata = {'name': name, 'namespace': KFP_NAMESPACE, 'labels': {'kcl-test': 'kfp'}}
    ports = [{'name': 'grpc', 'port': port, 'protocol': 'TCP'}]
    return [{'apiVersion': 'v1', 'kind': 'Service', 'metadata': metadata,
             'spec': {'clusterIP': 'None', 'ports': ports}},
            {'apiVersion': 'discovery.k8s.io/v1', 'kind': 'EndpointSlice',
             'metadata': {'name': f'{name}-gateway', 'namespace': KFP_NAMESPACE,
                          'labels': {'kubernetes.io/service-name': name, 'kcl-test': 'kfp'}},
             'addressType': 'IPv4', 'ports': ports,
             'endpoints': [{'addresses': [real_cluster.layout.API_SERVICE_IP],
                            'conditions': {'ready': True}}]}]


class Install:
    """KFP's services and a run namespace's objects on the real cluster; see the module
    docstring. `image` is the project's image in the node's containerd."""

    def __init__(self, folder: str, namespace: real_cluster.Namespace, image: str,
                 secrets: Optional[Dict[str, Dict[str, str]]] = None):
        self.folder, self.namespace, self.image = folder, namespace, image
        self._secrets = secrets or {}
        self.runs = []
        os.makedirs(folder, exist_ok=True)

    def __enter__(self):
        self.bin_dir = os.environ.get('KFP_BIN_DIR') or None
        if self.bin_dir:
            for program in ('driver', 'launcher-v2'):
                if not os.access(os.path.join(self.bin_dir, program), os.X_OK):
                    raise FileNotFoundError(f'KFP_BIN_DIR={self.bin_dir} has no {program}')
        self.images = kfp_images.ensure(real_cluster.WHERE.containerd_socket, self.image,
                                        self.bin_dir)
        self.mlmd = kfp_mlmd_server.Server(os.path.join(self.folder, 'mlmd.sqlite')).start()
        self.cache = kfp_cache_server.Server().start()
        self._relays = [real_cluster.PodReachable(self.mlmd.port, MLMD_PORT),
                        real_cluster.PodReachable(self.cache.port, PIPELINE_PORT)]
        _apply(_service(MLMD_SERVICE, MLMD_PORT) + _service(PIPELINE_SERVICE, PIPELINE_PORT))
        runner_account(self.namespace.name)
        for secret, values in self._secrets.items():
            self.namespace.secret(secret, values)
        return self

    def __exit__(self, *exc):
        real_cluster.kubectl('delete', 'services,endpointslices', '-n', KFP_NAMESPACE,
                             '-l', 'kcl-test=kfp', '--wait=false', check=False)
        for relay in self._relays:
            relay.stop()
        self.cache.stop()
        self.mlmd.stop()

    def compile(self, upload: str, root: str, run_id: str) -> dict:
        """The Workflow KFP's API server creates for a run (kfp_argo_compiler.py, or KFP's own
        compile when KFP_BIN_DIR has `handcompile`), with the API server's V2_DRIVER_IMAGE and
        V2_LAUNCHER_IMAGE naming the programs' images and the run in the test's namespace."""
        server_env = {'V2_DRIVER_IMAGE': self.images['driver'],
                      'V2_LAUNCHER_IMAGE': self.images['launcher']}
        handcompile = os.path.join(self.bin_dir or '', 'handcompile')
        if self.bin_dir and os.access(handcompile, os.X_OK):
            done = subprocess.run([handcompile, '--upload', str(upload), '--root', root,
                                   '--run_id', run_id], capture_output=True, text=True,
                                  env={**os.environ, **server_env})
            if done.returncode != 0:
                raise RuntimeError(f'handcompile failed ({done.returncode}): '
                                   f'{done.stderr[-3000:]}')
            workflow = json.loads(done.stdout)
            workflow['metadata']['namespace'] = self.namespace.name
            return workflow
        return kfp_argo_compiler.compile_run(upload, root, run_id, namespace=self.namespace.name,
                                             server_env=server_env)

    def run(self, workflow: dict, timeout_s: float = 1200) -> Dict[str, str]:
        """Creates the Workflow and waits for Argo to end it; each pipeline task's outcome
        (task_outcomes). The record stays in self.runs[-1]."""
        run_id = workflow['metadata'].get('labels', {}).get('pipeline/runid', '')
        self.cache.service.add_run(run_id, self.namespace.name)
        created = json.loads(real_cluster.kubectl('create', '-f', '-', '-o', 'json',
                                                  stdin=json.dumps(workflow)))
        name, started = created['metadata']['name'], time.monotonic()
        while True:
            current = real_cluster.get('workflow', name, '-n', self.namespace.name)
            phase = current.get('status', {}).get('phase', '')
            if phase in _DONE:
                break
            stuck = self._stuck(name)
            if stuck:
                raise RuntimeError(f'workflow {name}: a pod cannot start: {stuck}')
            if time.monotonic() - started > timeout_s:
                raise TimeoutError(f'workflow {name} still {phase or "pending"} after '
                                   f'{timeout_s:.0f} s:\n{self.failures(name)}')
            time.sleep(3)
        record = {'run_id': run_id, 'name': name, 'workflow': current, 'phase': phase,
                  'outcomes': task_outcomes(current),
                  'seconds': round(time.monotonic() - started, 1)}
        self.runs.append(record)
        return record['outcomes']

    def _stuck(self, name: str) -> str:
        """A pod the scheduler cannot place, or a container the kubelet will never start: Argo
        waits on either forever."""
        for pod in self.pods(name):
            status = pod['status']
            for condition in status.get('conditions', []):
                if condition['type'] == 'PodScheduled' and condition.get('reason') == \
                        'Unschedulable':   # one node: nothing will free what it lacks
                    return f'{pod["metadata"]["name"]}: {condition.get("message", "")}'
            for container in (status.get('initContainerStatuses', [])
                              + status.get('containerStatuses', [])):
                waiting = container.get('state', {}).get('waiting', {})
                if waiting.get('reason') in _NEVER_STARTS:
                    return (f'{pod["metadata"]["name"]} {container["name"]}: '
                            f'{waiting["reason"]}: {waiting.get("message", "")}')
        return ''

    def pods(self, name: str) -> list:
        return self.namespace.pods(f'workflows.argoproj.io/workflow={name}')

    def failures(self, name: str, lines: int = 40) -> str:
        """Each failed pod of the workflow and its containers' last log lines."""
        parts = []
        for pod in self.pods(name):
            if pod['status'].get('phase') != 'Failed':
                continue
            pod_name = pod['metadata']['name']
            parts.append(f'--- pod {pod_name}: {pod["status"].get("message", "")}')
            parts.append(real_cluster.kubectl('logs', pod_name, '-n', self.namespace.name,
                                              '--all-containers', f'--tail={lines}',
                                              check=False))
        return '\n'.join(parts) or 'no pod failed'


def task_outcomes(workflow: dict) -> Dict[str, str]:
    """Per pipeline task (a task of the compiled `root` DAG other than a driver), what its
    nodes in the Workflow's status say happened: 'ran', 'cached' (the driver decided so and
    Argo skipped the executor), 'failed', 'omitted', 'driver failed', or 'not run'. Node names
    are Argo's: `<workflow>.root.<task>-driver`, `<workflow>.root.<task>`, and
    `<workflow>.root.<task>.executor` (the executor pod)."""
    nodes = {node['name']: node.get('phase', '')
             for node in workflow.get('status', {}).get('nodes', {}).values()}
    root = f'{workflow["metadata"]["name"]}.root'
    [dag] = [t['dag'] for t in workflow['spec']['templates'] if t['name'] == 'root']
    outcomes = {}
    for task in [t['name'] for t in dag['tasks'] if not t['name'].endswith('-driver')]:
        driver = nodes.get(f'{root}.{task}-driver')
        node = nodes.get(f'{root}.{task}')
        executor = nodes.get(f'{root}.{task}.executor')
        if driver in _FAILED:
            outcomes[task] = 'driver failed'
        elif node == 'Omitted':
            outcomes[task] = 'omitted'
        elif node is None:
            outcomes[task] = 'not run'
        elif executor == 'Skipped':
            outcomes[task] = 'cached'
        elif executor == 'Succeeded':
            outcomes[task] = 'ran'
        elif executor is None:
            outcomes[task] = node.lower() or 'not run'
        else:
            outcomes[task] = 'failed'
    return outcomes
