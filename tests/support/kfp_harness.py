"""What a Kubeflow cluster gives KFP's programs, for running a compiled pipeline's Workflow with
KFP's own driver and launcher (or our transcriptions of them behind the same flags).

    with Harness(folder, secrets={...}) as harness:
        workflow = harness.compile('pipeline.spec.yaml', 's3://bucket/kfp/pipeline_root', 'run-1')
        outcomes = harness.run(workflow)   # {'ImageTrainer': 'ran', 'SchemaGen': 'cached', ...}

The parts, each in its own module with the source it transcribes:
- ML Metadata's gRPC service over the library's SQLite store (kfp_mlmd_server.py), as
  `metadata-grpc-service.kubeflow.svc.cluster.local:8080`;
- the ml-pipeline API server's task service, the cache KFP's driver and launcher call
  (kfp_cache_server.py), as `ml-pipeline.kubeflow.svc.cluster.local:8887`;
- an HTTPS Kubernetes API with a service account (kfp_k8s_api.py): the `kfp-launcher` ConfigMap
  (absent unless given), Secrets, the pods of the run;
- Argo's execution of the Workflow (kfp_workflow.py), each pod a set of processes in their own
  mount namespaces (kfp_pods.py).
The Service names and ports are fixed by KFP's compiler (backend/src/v2/metadata/env.go,
argocompiler/container.go): each service listens on its port at its own loopback address of a
127.x.y.0/24 block chosen per harness, and every pod's /etc/hosts maps the names to them (what the
cluster's DNS does).

Programs: with `KFP_BIN_DIR` (or bin_dir) naming a folder with KFP's `driver` and `launcher-v2`,
those run in the kfp-driver and kfp-launcher "images", and `handcompile` there compiles (KFP's
API server's own `template.New` + `RunWorkflow`, built by hand: never committed). Without it, the
transcriptions run behind the same command-line flags (kfp_driver_cli.py, kfp_launcher_cli.py)
and kfp_argo_compiler.py compiles. The pipeline's own image is this checkout (kfp_pods.python_image:
`python -m pipeline.kubeflow.entrypoint` with the venv's interpreter, the checkout at /pipeline).
"""
import json
import os
import random
import socket
import subprocess
import sys
import time
from typing import Dict, Optional

import kfp_cache_server
import kfp_k8s_api
import kfp_mlmd_server
import kfp_pods
import kfp_workflow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUPPORT = os.path.dirname(os.path.abspath(__file__))
MLMD_SERVICE = 'metadata-grpc-service'
PIPELINE_SERVICE = 'ml-pipeline'
MLMD_PORT, PIPELINE_PORT = 8080, 8887  # metadata/env.go; argocompiler/container.go
DRIVER_IMAGE = 'ghcr.io/kubeflow/kfp-driver:'
LAUNCHER_IMAGE = 'ghcr.io/kubeflow/kfp-launcher:'
PROGRAMS = {'driver': 'kfp_driver_cli.py', 'launcher-v2': 'kfp_launcher_cli.py'}


def _service_names(service, namespace):
    return [f'{service}.{namespace}.svc.cluster.local', f'{service}.{namespace}.svc',
            f'{service}.{namespace}', service]


def _free_block():
    """A 127.x.y.0/24 block whose .1 has MLMD_PORT free (another harness may run alongside)."""
    for _ in range(50):
        block = f'127.{random.randint(1, 254)}.{random.randint(1, 254)}'
        with socket.socket() as probe:
            try:
                probe.bind((f'{block}.1', MLMD_PORT))
            except OSError:
                continue
        return block
    raise RuntimeError('no free loopback block for the harness')


class Harness:
    """The cluster's services for KFP's programs; see the module docstring."""

    def __init__(self, folder, bin_dir: Optional[str] = None, namespace='kubeflow',
                 secrets: Optional[Dict[str, Dict[str, str]]] = None,
                 config_maps: Optional[Dict[str, Dict[str, str]]] = None,
                 services: Optional[Dict[str, str]] = None, log=None):
        self.folder = os.path.abspath(folder)
        os.makedirs(self.folder, exist_ok=True)
        self.bin_dir = bin_dir if bin_dir is not None else os.environ.get('KFP_BIN_DIR') or None
        self.namespace = namespace
        self._secrets = secrets or {}
        self._config_maps = config_maps or {}
        self._extra_hosts = services or {}
        self.log_file = os.path.join(self.folder, 'harness.log')
        self._log = log
        self.runs = []

    def log(self, message):
        line = f'{time.strftime("%H:%M:%S")} {message}'
        with open(self.log_file, 'a') as handle:
            handle.write(line + '\n')
        if self._log:
            self._log(line)

    # -- services

    def __enter__(self):
        block = _free_block()
        self.mlmd = kfp_mlmd_server.Server(os.path.join(self.folder, 'mlmd.sqlite'),
                                           host=f'{block}.1', port=MLMD_PORT).start()
        self.cache = kfp_cache_server.Server(host=f'{block}.2', port=PIPELINE_PORT).start()
        self.api = kfp_k8s_api.Server(os.path.join(self.folder, 'k8s'), host=f'{block}.3',
                                      namespace=self.namespace).start()
        self.api.secrets.update(self._secrets)
        self.api.config_maps.update(self._config_maps)
        hosts = {}
        for name in _service_names(MLMD_SERVICE, self.namespace):
            hosts[name] = self.mlmd.host
        for name in _service_names(PIPELINE_SERVICE, self.namespace):
            hosts[name] = self.cache.host
        for name in _service_names('kubernetes', 'default'):
            hosts[name] = self.api.host
        hosts.update(self._extra_hosts)
        self.hosts = hosts
        self.images = self._images()
        self.log(f'harness up: MLMD {self.mlmd.address}, ml-pipeline {self.cache.address}, '
                 f'Kubernetes API https://{self.api.host}:{self.api.port}, programs '
                 f'{self.bin_dir or "transcribed (kfp_driver_cli.py, kfp_launcher_cli.py)"}')
        return self

    def __exit__(self, *exc):
        for server in (self.api, self.cache, self.mlmd):
            server.stop()

    def _images(self):
        if self.bin_dir:
            for program in PROGRAMS:
                if not os.access(os.path.join(self.bin_dir, program), os.X_OK):
                    raise FileNotFoundError(f'KFP_BIN_DIR={self.bin_dir} has no {program}')
            programs = kfp_pods.binary_image(self.bin_dir)
        else:
            wrappers = os.path.join(self.folder, 'programs')
            os.makedirs(wrappers, exist_ok=True)
            for program, script in PROGRAMS.items():
                path = os.path.join(wrappers, program)
                with open(path, 'w') as handle:
                    handle.write(f'#!/bin/sh\nexec {sys.executable} '
                                 f'{os.path.join(SUPPORT, script)} "$@"\n')
                os.chmod(path, 0o755)
            programs = kfp_pods.binary_image(wrappers)
            # The transcriptions are Python: they need the interpreter and this checkout too.
            python = kfp_pods.python_image(REPO)
            programs.binds.extend(python.binds)
        return {DRIVER_IMAGE: programs, LAUNCHER_IMAGE: programs,
                '*': kfp_pods.python_image(REPO)}

    # -- compile and run

    def compile(self, upload, root, run_id, params=None, name=None) -> dict:
        """The Workflow the API server creates for a run of this upload (its runtime config's
        root, the run id, parameters)."""
        if self.bin_dir and os.access(os.path.join(self.bin_dir, 'handcompile'), os.X_OK):
            args = [os.path.join(self.bin_dir, 'handcompile'), '--upload', str(upload),
                    '--root', root, '--run_id', run_id]
            if params:
                args += ['--params', json.dumps(params)]
            if name:
                args += ['--name', name]
            done = subprocess.run(args, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f'handcompile failed ({done.returncode}): {done.stderr[-3000:]}')
            return json.loads(done.stdout)
        import kfp_argo_compiler
        return kfp_argo_compiler.compile_run(upload, root, run_id, params=params, name=name,
                                             namespace=self.namespace)

    def run(self, workflow: dict) -> Dict[str, str]:
        """Runs the Workflow; each task of the pipeline (the root DAG's executor tasks) and its
        outcome: 'ran', 'cached' (the executor skipped), 'failed', 'omitted', or the driver's
        failure ('driver failed'). Details stay in self.runs[-1]."""
        run_id = workflow['metadata'].get('labels', {}).get('pipeline/runid', '')
        self.cache.service.add_run(run_id, '')
        pods = kfp_pods.PodRunner(os.path.join(self.folder, 'runs', run_id or 'run'), self.api,
                                  self.hosts, self.images, log=self.log)
        run = kfp_workflow.Workflow(workflow, pods, namespace=self.namespace, log=self.log)
        started = time.time()
        self.log(f'run {run_id}: workflow {run.name}')
        phase = run.run()
        outcomes = task_outcomes(run)
        record = {'run_id': run_id, 'workflow': run, 'pods': pods, 'phase': phase,
                  'outcomes': outcomes, 'seconds': round(time.time() - started, 1)}
        self.runs.append(record)
        self.log(f'run {run_id}: {phase} in {record["seconds"]} s: {outcomes}')
        if phase != kfp_workflow.SUCCEEDED:
            self.log(failures(run, pods))
        return outcomes


def failures(run: kfp_workflow.Workflow, pods: kfp_pods.PodRunner, lines=30) -> str:
    """Each failed pod's node, message and the end of its containers' logs (for a test's
    assertion message and harness.log)."""
    parts = []
    for node in run.nodes.values():
        if node.phase not in kfp_workflow._FAILED or not node.pod:
            continue
        parts.append(f'{node.name}: {node.message}')
        for container in pods.records_for(node.pod):
            log = pods.log_path(node.pod, container)
            if not os.path.exists(log):
                continue
            with open(log, errors='replace') as handle:
                tail = handle.read().splitlines()[-lines:]
            parts.append(f'--- {container} ({log}):\n' + '\n'.join(tail))
    return '\n'.join(parts) or 'no pod failed'


def task_outcomes(run: kfp_workflow.Workflow) -> Dict[str, str]:
    """Per pipeline task (a root DAG task whose template is the container executor): what
    happened to it, from the nodes Argo would show."""
    root = f'{run.name}.root'
    outcomes = {}
    for name, node in run.nodes.items():
        if not name.startswith(root + '.') or name.count('.') != root.count('.') + 1:
            continue
        task = name[len(root) + 1:]
        if task.endswith('-driver'):
            continue
        driver = run.nodes.get(f'{root}.{task}-driver')
        executor = run.nodes.get(f'{name}.executor')
        if driver is not None and driver.phase in kfp_workflow._FAILED:
            outcomes[task] = 'driver failed'
        elif node.phase == kfp_workflow.OMITTED:
            outcomes[task] = 'omitted'
        elif executor is None:
            outcomes[task] = node.phase.lower() or 'not run'
        elif executor.phase == kfp_workflow.SKIPPED:
            outcomes[task] = 'cached'
        elif executor.phase == kfp_workflow.SUCCEEDED:
            outcomes[task] = 'ran'
        else:
            outcomes[task] = 'failed'
    for task in [t['name'] for t in run.templates['root']['dag']['tasks']
                 if not t['name'].endswith('-driver')] if 'root' in run.templates else []:
        outcomes.setdefault(task, 'not run')
    return outcomes
