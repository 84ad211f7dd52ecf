#!/usr/bin/env python3
"""KFP 2.17.0's `launcher-v2` program (backend/src/v2/cmd/launcher-v2/main.go), transcribed, for
the harness to run where the real binary is absent: the same flags (kfp_goflag.py), the init
container's `--copy <path>`, and the main container's run of a task's user command after `--`
(component/launcher_v2.go Execute): the execution fetched and pre-published with the pod's
name, uid and namespace, the run's bucket opened from the run context's pipeline root and
store session info, inputs downloaded, the command run with its output teed to executor-logs,
output parameters collected, outputs uploaded and recorded in ML Metadata, the execution
published (COMPLETE or FAILED), the parent DAG's state updated, a cache entry made.

    python tests/support/kfp_launcher_cli.py --copy /kfp-launcher/launch
    /kfp-launcher/launch --pipeline_name P --run_id R --execution_id 7 ... -- python -m x ...

`--copy` writes an executable at the path that runs this program with this interpreter: what
"copy this binary" (component.CopyThisBinary) means for a Python program. The step functions
are kfp_launcher_v2.py's (shared with the in-process stand-in kfp_launcher.py); the object store
is kfp_objectstore.py's, reading Secrets through the Kubernetes API and resolving hosts as the
pod does. Not transcribed (refused, exit 1): the importer executor type (importer_launcher.go),
TLS and --ca_cert_path, Modelcar (oci://) inputs, workspace artifacts. Failures end as
glog.Exit: "F... main.go] <error>", exit 1. Test support only.
"""
import os
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from google.protobuf import json_format  # noqa: E402
from kfp.pipeline_spec import pipeline_spec_pb2  # noqa: E402
from ml_metadata.proto import metadata_store_pb2 as mlmd_pb  # noqa: E402

import kfp_goflag  # noqa: E402
import kfp_k8s_client  # noqa: E402
import kfp_launcher_v2 as v2  # noqa: E402
import kfp_mlmd_client  # noqa: E402
import kfp_objectstore  # noqa: E402
import kfp_task_api  # noqa: E402
from kfp_goflag import Flag, glog  # noqa: E402

# cmd/launcher-v2/main.go: the flags, their defaults and help, as declared.
FLAGS = kfp_goflag.GLOG_FLAGS + kfp_goflag.KFP_COMMON_FLAGS + [
    Flag('copy', 'string', '', 'copy this binary to specified destination path'),
    Flag('parent_dag_id', 'int', 0, 'parent DAG execution ID'),
    Flag('executor_type', 'string', 'container', 'The type of the ExecutorSpec'),
    Flag('execution_id', 'int', 0, 'Execution ID of this task.'),
    Flag('executor_input', 'string', '', 'The JSON-encoded ExecutorInput.'),
    Flag('component_spec', 'string', '', 'The JSON-encoded ComponentSpec.'),
    Flag('importer_spec', 'string', '', 'The JSON-encoded ImporterSpec.'),
    Flag('task_spec', 'string', '', 'The JSON-encoded TaskSpec.'),
    Flag('pod_name', 'string', '', 'Kubernetes Pod name.'),
    Flag('pod_uid', 'string', '', 'Kubernetes Pod UID.'),
    Flag('ml_pipeline_server_address', 'string', 'ml-pipeline.kubeflow',
         'The name of the ML pipeline API server address.'),
    Flag('mlmd_server_address', 'string', '', 'The MLMD gRPC server address.'),
    Flag('mlmd_server_port', 'string', '8080', 'The MLMD gRPC server port.'),
]


class Failure(kfp_goflag.ProgramError):
    """run() returned an error: what glog.Exit prints."""


def copy_this_binary(destination: str) -> None:
    """component/util.go: CopyThisBinary(): an executable (mode 0555) at `destination` that
    runs this program: in the launcher image (kfp_images.py) the program is one file, a
    zipapp, copied as it is; run from this folder, a script that imports it from here."""
    import zipfile  # pylint: disable=import-outside-toplevel
    if zipfile.is_zipfile(sys.argv[0]):
        with open(sys.argv[0], 'rb') as handle:
            program = handle.read()
    else:
        program = (f'#!{sys.executable}\nimport sys\n'
                   f'sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n'
                   'import kfp_launcher_cli\nsys.exit(kfp_launcher_cli.main())\n').encode()
    try:
        fd = os.open(destination, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o555)
    except OSError as error:
        raise Failure(f'copy this binary to {destination}: open {destination}: '
                      f'{(error.strerror or str(error)).lower()}')
    with os.fdopen(fd, 'wb') as handle:
        handle.write(program)
    os.chmod(destination, os.stat(destination).st_mode | stat.S_IXUSR)


class Secrets:
    """The namespace's Secrets as objectstore.getS3BucketCredential reads them (a GET each):
    name -> decoded data, None when NotFound."""

    def __init__(self, k8s: kfp_k8s_client.Client, namespace: str):
        self.k8s, self.namespace = k8s, namespace

    def get(self, name: str, default=None):
        import base64  # pylint: disable=import-outside-toplevel
        try:
            secret = self.k8s.secret(self.namespace, name)
        except kfp_k8s_client.K8sError as error:
            if error.not_found:
                return default
            raise kfp_objectstore.ObjectStoreError(str(error))
        return {key: base64.b64decode(value).decode()
                for key, value in (secret.get('data') or {}).items()}


class Resolver:
    """The pod's name resolution (/etc/hosts, DNS): "host:port" is served when the host
    resolves; the address dialed is the host itself."""

    def __contains__(self, dialed: str) -> bool:
        host = dialed.rsplit(':', 1)[0]
        try:
            socket.getaddrinfo(host, None)
            return True
        except OSError:
            return False

    def __getitem__(self, dialed: str) -> str:
        return dialed


class Recorder:
    """metadata.Client.RecordArtifact for kfp_launcher_v2's upload step."""

    def __init__(self, client: kfp_mlmd_client.Client):
        self.client = client

    def record_artifact(self, name, schema, runtime, session_info):
        return self.client.record_artifact(name, schema, runtime, mlmd_pb.Artifact.LIVE,
                                           session_info or 'null')


def _retry_index(k8s, namespace: str) -> str:
    """launcher_v2.go: qualifyExecutorLogsForRetry(): KFP_RETRY_INDEX, else the "(N)" of the
    pod's workflows.argoproj.io/node-name annotation (retryIndexFromPodAnnotation; any failure
    is a warning), else "0"."""
    index = os.environ.get('KFP_RETRY_INDEX', '')
    pod_name = os.environ.get('KFP_POD_NAME', '')
    if not index and pod_name and k8s is not None and namespace:
        try:
            pod = k8s.pod(namespace, pod_name)
            node = (pod.get('metadata', {}).get('annotations') or {}).get(
                'workflows.argoproj.io/node-name')
            if node is None:
                raise kfp_k8s_client.K8sError(f'pod {namespace}/{pod_name} has no argo '
                                              'node-name annotation')
            start, end = node.rfind('('), node.rfind(')')
            if start < 0 or end <= start or not node[start + 1:end].lstrip('-').isdigit():
                raise kfp_k8s_client.K8sError(f'argo node-name "{node}" has no retry index '
                                              'suffix')
            index = node[start + 1:end]
        except kfp_k8s_client.K8sError as error:
            glog('W', 'Could not determine retry index from pod annotation, defaulting to 0: '
                      f'failed to get pod {namespace}/{pod_name}: {error}')
    return index or '0'


def run_user_command(command: str, args: list, log_path) -> None:
    """launcher_v2.go: execute(): exec.Command (PATH lookup), stdin inherited, stdout and
    stderr both to the launcher's stdout and, with a log file, to it too (getLogWriter)."""
    sys.stdout.flush()
    try:
        if log_path is None:
            code = subprocess.run([command] + args, stdout=sys.stdout, stderr=sys.stdout,
                                  stdin=sys.stdin).returncode
        else:
            with open(log_path, 'wb') as log:
                process = subprocess.Popen([command] + args, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, stdin=sys.stdin)
                for chunk in iter(lambda: process.stdout.read1(65536), b''):
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.buffer.flush()
                    log.write(chunk)
                    log.flush()
                code = process.wait()
    except FileNotFoundError:
        raise v2.LauncherError(f'exec: "{command}": executable file not found in $PATH')
    if code < 0:
        raise v2.LauncherError(f'signal: {_signal_name(-code)}')
    if code:
        raise v2.LauncherError(f'exit status {code}')


def _signal_name(number: int) -> str:
    import signal  # pylint: disable=import-outside-toplevel
    return {signal.SIGKILL: 'killed', signal.SIGTERM: 'terminated',
            signal.SIGINT: 'interrupt'}.get(number, f'signal {number}')


def _log_path(executor_input, pod):
    """getLogWriter(): the executor-logs artifact's local path, created; None (stdout only)
    when there is none or it cannot be created."""
    logs = executor_input.outputs.artifacts.get('executor-logs')
    if logs is None or len(logs.artifacts) != 1:
        return None
    try:
        path = pod.local_path_for_uri(logs.artifacts[0].uri)
        open(path, 'wb').close()
        return path
    except (ValueError, OSError):
        glog('E', f'Error creating logFilePath, {logs.artifacts[0].uri}.')
        return None


def _parse(text: str, message, what: str, context: str):
    """NewLauncherV2(): protojson.Unmarshal (unknown fields refused). A field of KFP 2.17.0's
    protos the installed ones lack is refused as not transcribed: KFP reads it."""
    try:
        return json_format.Parse(text, message)
    except json_format.ParseError as error:
        import kfp_argo_compiler  # pylint: disable=import-outside-toplevel
        kfp_argo_compiler.refuse_newer_field(error, message.DESCRIPTOR.name)
        raise Failure(f'failed to create component launcher v2: failed to unmarshal {what}: '
                      f'{error}{context}')


class Launcher:
    """launcher_v2.go: LauncherV2 (NewLauncherV2's checks in __init__, Execute in execute)."""

    def __init__(self, values: dict, namespace: str, k8s, mlmd, cache, command_args: list):
        if values['execution_id'] == 0:
            raise Failure('failed to create component launcher v2: must specify execution ID')
        self.executor_input = _parse(values['executor_input'],
                                     pipeline_spec_pb2.ExecutorInput(), 'executor input', '')
        self.component = _parse(values['component_spec'], pipeline_spec_pb2.ComponentSpec(),
                                'component spec',
                                f"\ncomponentSpec: {values['component_spec']}")
        if not command_args:
            raise Failure('failed to create component launcher v2: command and arguments are '
                          'empty')
        for option, key in (('Namespace', None), ('PodName', 'pod_name'),
                            ('PodUID', 'pod_uid'), ('MLMDServerAddress', 'mlmd_server_address'),
                            ('MLMDServerPort', 'mlmd_server_port')):
            if not (namespace if key is None else values[key]):
                raise Failure('failed to create component launcher v2: invalid launcher '
                              f'options: must specify {option}')
        self.values, self.namespace = values, namespace
        self.k8s, self.mlmd, self.cache = k8s, mlmd, cache
        self.command, self.args = command_args[0], command_args[1:]
        self.pod = v2.Pod('')

    def execute(self) -> None:
        """Execute(); errors are "failed to execute component: ..."."""
        execution, state = None, mlmd_pb.Execution.FAILED
        self.output, self.outputs = None, []
        error = None
        try:
            execution = self._pre_publish()
            started = int(time.time())
            self._execute(execution)
            state = mlmd_pb.Execution.COMPLETE
            fingerprint = execution.fingerprint()
            if fingerprint:  # the task enables the cache and missed it: a cache entry
                task = kfp_task_api.Task(
                    pipelineName='pipeline/' + self.values['pipeline_name'],
                    namespace=self.namespace, runId=self.values['run_id'],
                    mlmdExecutionID=str(execution.id), fingerprint=fingerprint)
                task.created_at.seconds = started
                task.finished_at.seconds = int(time.time())
                self.cache.create_execution_cache(task)
        except (v2.LauncherError, kfp_mlmd_client.MLMDError, kfp_objectstore.ObjectStoreError,
                kfp_task_api.CacheError, Failure) as failure:
            error = f'failed to execute component: {failure}'
        if execution is None:
            glog('E', f'Skipping publish since execution is nil. Original err is: {error}')
            raise Failure(error)
        try:  # the deferred publish, then the parent DAG's state
            self.mlmd.publish_execution(
                execution, self.output.parameter_values if self.output is not None else None,
                self.outputs, state)
        except kfp_mlmd_client.MLMDError as publish_error:
            text = f'failed to publish results to ML Metadata: {publish_error}'
            error = (f'failed to publish execution with error {text} after execution failed: '
                     f'{error}') if error else text
        self._update_dag_state(execution)
        if error:
            raise Failure(error)

    def _update_dag_state(self, execution) -> None:
        parent = execution.execution.custom_properties['parent_dag_id'].int_value \
            if 'parent_dag_id' in execution.execution.custom_properties else 0
        try:
            dag = self.mlmd.get_dag(parent)
            pipeline = self.mlmd.get_pipeline_from_execution(execution.id)
            self.mlmd.update_dag_executions_state(dag, pipeline)
        except kfp_mlmd_client.MLMDError as error:
            glog('E', f'failed to update DAG state: {error}')

    def _pre_publish(self):
        """prePublish(): GetExecution, then PrePublishExecution with the pod's name, uid and
        namespace."""
        try:
            execution = self.mlmd.get_execution(self.values['execution_id'])
            return self.mlmd.pre_publish_execution(execution, self.values['pod_name'],
                                                   self.values['pod_uid'], self.namespace)
        except kfp_mlmd_client.MLMDError as error:
            raise Failure(f'failed to pre-publish Pod info to ML Metadata: {error}')

    def _open_bucket(self, execution) -> v2.RunStore:
        """The run's bucket: GetSessionInfoFromString, ParseBucketConfig, OpenBucket."""
        session = kfp_mlmd_client.parse_session_info(execution.pipeline.store_session_info())
        config = kfp_objectstore.parse_bucket_config(execution.pipeline.pipeline_root(), session)
        opener = kfp_objectstore.Opener(self.namespace, Secrets(self.k8s, self.namespace),
                                        dict(os.environ), Resolver())
        return v2.RunStore(config, opener.open_bucket(config), opener)

    def _execute(self, execution) -> None:
        executor_input, pod = self.executor_input, self.pod
        remote = self._open_bucket(execution)
        v2.prepare_output_folders(executor_input, pod)
        # executeV2()
        if self.values['publish_logs'] == 'true':
            v2.qualify_executor_logs(executor_input, _retry_index(self.k8s, self.namespace))
        for artifacts in executor_input.inputs.artifacts.values():
            for artifact in artifacts.artifacts:
                if artifact.uri.startswith('oci://') or \
                        artifact.metadata.fields.get('_kfp_workspace') is not None:
                    raise NotImplementedError('Modelcar and workspace inputs are not '
                                              'transcribed')
        command, args = v2.compile_cmd_and_args(
            v2.with_default_params(executor_input, self.component), pod,
            [self.command], self.args)
        try:  # execute()
            v2.download_artifacts(executor_input, pod, remote)
            v2.prepare_output_folders(executor_input, pod)
            log_path = (_log_path(executor_input, pod)
                        if self.values['publish_logs'] == 'true' else None)
            run_user_command(command[0], args, log_path)
            output = v2.read_executor_output(executor_input.outputs.output_file)
        except v2.LauncherError:
            try:  # the failed task's executor-logs (its error dropped: `outputArtifacts, _ :=`)
                self.outputs = self._upload(None, False, remote)
            except (v2.LauncherError, kfp_mlmd_client.MLMDError,
                    kfp_objectstore.ObjectStoreError):
                self.outputs = []
            raise
        v2.collect_output_parameters(executor_input, output, self.component)
        self.outputs = self._upload(output, True, remote)
        self.output = output

    def _upload(self, output, succeeded, remote):
        recorded = v2.upload_output_artifacts(self.executor_input, output, self.pod,
                                              Recorder(self.mlmd), succeeded, remote)
        return list(recorded.values())


def run(values: dict, command_args: list) -> None:
    """main.go: run()."""
    if values['copy']:
        copy_this_binary(values['copy'])
        return
    try:
        namespace = kfp_k8s_client.in_pod_namespace()
    except kfp_k8s_client.K8sError as error:
        raise Failure(str(error))
    if values['executor_type'] == 'importer':
        raise NotImplementedError('component/importer_launcher.go (executor type importer) is '
                                  'not transcribed')
    if values['executor_type'] != 'container':
        raise Failure(f"unsupported executor type {values['executor_type']}")
    if values['metadata_tls_enabled'] or values['ml_pipeline_tls_enabled'] or \
            values['ca_cert_path']:
        raise NotImplementedError('TLS and --ca_cert_path are not transcribed')
    try:  # client_manager.go initK8sClient(): in-cluster only
        k8s = kfp_k8s_client.in_cluster()
    except kfp_k8s_client.K8sError as error:
        raise Failure(f'failed to initialize kubernetes client: {error}')
    mlmd = kfp_mlmd_client.Client(values['mlmd_server_address'], values['mlmd_server_port'])
    cache = None if values['cache_disabled'] else kfp_task_api.Client(
        values['ml_pipeline_server_address'], values['ml_pipeline_server_port'])
    Launcher(values, namespace, k8s, mlmd, cache, command_args).execute()


def main(argv=None) -> int:
    return kfp_goflag.run_program(FLAGS, argv, run)


if __name__ == '__main__':
    sys.exit(main())
