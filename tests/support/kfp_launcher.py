"""A local stand-in for KFP's driver and launcher: runs a compiled PipelineJob's tasks as
subprocesses, handing each what the real orchestrator hands it.

    launcher = Launcher(mode='oss')          # open-source KFP 2.17 (default), or 'vertex'
    outputs = launcher.run_job(job, 'run-1')  # {task: recorded ExecutorOutput}, or TaskFailed
    job, platform = load_upload('pipeline.spec.yaml', root)   # the file the API server takes
    Launcher(secrets={'mlpipeline-minio-artifact': {...}}).run_job(job, 'run-1', platform)

A Launcher keeps ML Metadata and the cache across runs. Mode 'oss' transcribes kubeflow/pipelines
(driver/container.go Container() and component/launcher_v2.go Execute(), step by step, in
kfp_driver.py, kfp_launcher_v2.py and kfp_mlmd.py): no lifecycle hook, no retry. Mode 'vertex'
keeps what Vertex AI does differently: typed inputs with their metadata as written, the
preCacheCheck hook first, outputs and the executor output file under the pipeline root, no
executor-logs, no local copies of the inputs, no cache. Test support only (no TFX imports).

A platform spec (the Kubernetes one, as the API server reads it from an upload: load_upload)
reaches each task's pod as open-source KFP applies it: the driver turns the executor's
secretAsEnv into env vars with secretKeyRef (kfp_driver.pod_env, driver/k8s.go
extendPodSpecPatch), the kubelet reads them from the namespace's Secrets
(kfp_launcher_v2.make_environment). The tasks here are processes, not pods of a cluster, so the
Launcher holds the namespace's Secrets itself (`secrets`).

The run's root (its runtime config's gcsOutputDirectory) is a local folder standing for a gs://
bucket, or a real s3:// or minio:// bucket (SeaweedFS in the tests): then the driver keeps the
run's store session info (no kfp-launcher ConfigMap: kfp_objectstore.store_session_info) and each
pod's launcher opens the run's bucket, downloads the inputs and uploads the outputs through it
(kfp_launcher_v2.RunStore). The launcher runs in the task's container, so it reads the pod's
environment; host names resolve through the cluster's Services (`services`, e.g.
{'seaweedfs.kubeflow:9000': '127.0.0.1:PORT'}), and a task's own process gets no variable of
this process's AWS_*/S3_* (kfp_launcher_v2.run_command).
"""
import dataclasses
import os
import tempfile
import uuid
from typing import Dict, List, Optional

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from ml_metadata.proto import metadata_store_pb2

import kfp_driver
import kfp_launcher_v2
import kfp_mlmd
import kfp_objectstore
import kfp_vertex
from kfp_launcher_v2 import Pod

_STATE = metadata_store_pb2.Execution


class TaskFailed(RuntimeError):
    """A task (or the run) failed; the message is the one KFP's driver or launcher logs."""


@dataclasses.dataclass
class TaskRecord:
    execution_id: int
    cached: bool
    executor_input: pipeline_spec_pb2.ExecutorInput
    pod: Optional[Pod]


def load_job(path: str) -> pipeline_spec_pb2.PipelineJob:
    with open(path) as handle:
        return json_format.Parse(handle.read(), pipeline_spec_pb2.PipelineJob(),
                                 ignore_unknown_fields=False)


def load_upload(path: str, pipeline_root: str):
    """(PipelineJob, platform spec dict or None) from the file uploaded to the API server, parsed
    as it parses it (fake_kfp_rules.parse_template: v2_template.go NewV2SpecTemplate), with the
    run's root as a run's runtime config gives it."""
    import fake_kfp_rules
    with open(path, 'rb') as handle:
        spec, platform = fake_kfp_rules.parse_template(handle.read())
    job = pipeline_spec_pb2.PipelineJob(display_name=spec['pipelineInfo']['name'])
    job.pipeline_spec.update(spec)
    job.runtime_config.gcs_output_directory = pipeline_root
    return job, platform


def topological_order(spec: pipeline_spec_pb2.PipelineSpec) -> List[str]:
    tasks, order = spec.root.dag.tasks, []
    while len(order) < len(tasks):
        ready = sorted(n for n, t in tasks.items()
                       if n not in order and set(t.dependent_tasks) <= set(order))
        assert ready, 'the DAG has a cycle'
        order.extend(ready)
    return order


class Launcher:
    """Runs PipelineJobs one after the other, with one ML Metadata and cache for all of them."""

    def __init__(self, mode: str = 'oss', workdir: Optional[str] = None,
                 publish_logs: bool = True, cache_disabled: bool = False,
                 namespace: str = 'kubeflow', secrets: Optional[Dict[str, dict]] = None,
                 services: Optional[Dict[str, str]] = None):
        assert mode in ('oss', 'vertex'), mode
        self.mode, self.namespace = mode, namespace
        # The namespace's Secrets (name -> data), what the kubelet reads secretKeyRef env from.
        self.secrets = dict(secrets or {})
        # The cluster's Services: "host:port" a pod dials -> the address serving it here.
        self.services = dict(services or {})
        self.oss = mode == 'oss'
        # driver/main.go --publish_logs defaults to "true"; Vertex AI adds no such output.
        self.publish_logs = publish_logs and self.oss
        self.cache_disabled = cache_disabled or not self.oss
        self.workdir = workdir or tempfile.mkdtemp(prefix='kfp-pods-')
        self.store = kfp_mlmd.Store(convert=self.oss)
        self.tasks: Dict[tuple, TaskRecord] = {}

    def run_job(self, job: pipeline_spec_pb2.PipelineJob, run_id: str,
                platform_spec: Optional[dict] = None
                ) -> Dict[str, pipeline_spec_pb2.ExecutorOutput]:
        """Runs every task in dependency order; returns each task's outputs as ML Metadata
        recorded them, in the shape the next task receives them. platform_spec: the upload's
        (load_upload); Vertex AI reads no Kubernetes platform spec."""
        spec = json_format.ParseDict(json_format.MessageToDict(job.pipeline_spec),
                                     pipeline_spec_pb2.PipelineSpec())
        name = spec.pipeline_info.name
        info = f'pipelineName={name}, runID={run_id}, runtimeConfig, componentSpec'
        try:
            root = kfp_driver.check_pipeline_root(job.runtime_config.gcs_output_directory, info)
            session = kfp_driver.store_session_info(root, info) if self.oss else None
        except kfp_driver.DriverError as error:
            raise TaskFailed(str(error))
        if not self.oss and not os.path.isabs(root):
            raise NotImplementedError(f'{root}: Vertex AI runs on gs:// roots only')
        # metadata/client.go GetPipeline(): the run's root is <root>/<pipeline name>/<run id>.
        run_root = kfp_driver.generate_output_uri(root, name, run_id) if self.oss else \
            kfp_vertex.run_root(root, run_id)
        # root_dag.go: RootDAG(): the run's DAG execution, parent of every task's execution.
        dag = self.store.create_execution('system.DAGExecution', {
            'display_name': _text(''), 'task_name': _text('')}, {})
        # Its name is "run/<run id>"; "inputs" holds the run's parameters when it has any
        # (GenerateExecutionConfig of the runtime config's parameterValues map).
        self.store.executions[dag].name = f'run/{run_id}'
        if job.runtime_config.parameter_values:
            inputs = self.store.executions[dag].custom_properties['inputs'].struct_value
            for key, value in job.runtime_config.parameter_values.items():
                inputs.fields[key].CopyFrom(value)
        executors = json_format.MessageToDict(spec.deployment_spec)['executors']
        run = {'name': name, 'id': run_id, 'root': run_root, 'dag': dag, 'job': job,
               'executions': {}, 'platform': platform_spec if self.oss else None,
               'session': session}
        results = {}
        for task_name in topological_order(spec):
            task = spec.root.dag.tasks[task_name]
            component = spec.components[task.component_ref.name]
            container = executors[component.executor_label]['container']
            record = self._run_task(run, task_name, task, component, container)
            self.tasks[(run_id, task_name)] = record
            run['executions'][task_name] = record.execution_id
            results[task_name] = self.recorded_outputs(record.execution_id)
        return results

    def recorded_outputs(self, execution_id: int) -> pipeline_spec_pb2.ExecutorOutput:
        output = pipeline_spec_pb2.ExecutorOutput()
        for key, artifact_id in self.store.output_artifacts(execution_id).items():
            output.artifacts[key].artifacts.add().CopyFrom(self._input_artifact(artifact_id))
        for key, value in self.store.execution_outputs(execution_id).items():
            output.parameter_values[key].CopyFrom(value)
        return output

    def _input_artifact(self, artifact_id: int) -> pipeline_spec_pb2.RuntimeArtifact:
        if self.oss:  # resolve.go: resolveUpstreamArtifacts() -> ToRuntimeArtifact(), Schema ""
            return self.store.to_runtime_artifact(artifact_id, schema='')
        return kfp_vertex.input_artifact(self.store.raw[artifact_id], artifact_id)

    def _resolve_opts(self, run, task_name) -> dict:
        job = run['job']
        return {'root_inputs': job.runtime_config.parameter_values, 'run_id': run['id'],
                'run_name': run['id'], 'run_display_name': job.display_name,
                'task_name': task_name, 'dag_execution_id': run['dag']}

    def _resolve_inputs(self, run, task_name, task, component):
        """resolve.go: resolveInputs(): parameters, then artifacts from the producers' records."""
        opts = self._resolve_opts(run, task_name)
        inputs, ids = pipeline_spec_pb2.ExecutorInput.Inputs(), {}
        for name, spec in task.inputs.parameters.items():
            if not self.oss and spec.runtime_value.HasField('constant_value'):
                # Vertex AI still runs schema 2.0.0 specs: the deprecated `parameters` field.
                inputs.parameters[name].CopyFrom(spec.runtime_value.constant_value)
                continue
            value = kfp_driver.resolve_parameter(
                spec, opts, lambda t: self.store.execution_outputs(run['executions'][t]))
            inputs.parameter_values[name].CopyFrom(value)
        for name, spec in task.inputs.artifacts.items():
            if spec.WhichOneof('kind') != 'task_output_artifact':
                raise NotImplementedError(f'{task_name}.{name}: only upstream task outputs')
            producer = spec.task_output_artifact
            recorded = self.store.output_artifacts(run['executions'][producer.producer_task])
            if producer.output_artifact_key not in recorded:
                # resolve.go resolveUpstreamArtifacts builds this error without returning it
                # and goes on with a nil artifact, which GenerateExecutionConfig dereferences.
                raise kfp_driver.DriverError(
                    'panic: runtime error: invalid memory address or nil pointer dereference '
                    f'(no output artifact "{producer.output_artifact_key}" of producer task '
                    f'"{producer.producer_task}")')
            artifact_id = recorded[producer.output_artifact_key]
            inputs.artifacts[name].artifacts.add().CopyFrom(self._input_artifact(artifact_id))
            ids[name] = [artifact_id]
        if self.oss:
            kfp_driver.check_parameter_types(inputs, component.input_definitions)
        return inputs, ids

    def _run_task(self, run, task_name, task, component, container) -> TaskRecord:
        """driver/container.go: Container(), then component/launcher_v2.go: Execute()."""
        info = (f"pipelineName={run['name']}, runID={run['id']}, taskDisplayName="
                f'"{task.task_info.name}", taskName="{task_name}", component='
                f"\"{task.component_ref.name}\", dagExecutionID={run['dag']}, componentSpec")
        try:  # Options.info(): a task given a Kubernetes config says so
            if self.oss and kfp_driver.kubernetes_config(run['platform'],
                                                         component.executor_label) is not None:
                info += ', KubernetesExecutorConfig'
        except kfp_driver.DriverError:
            pass  # (the parse fails again below, with KFP's message)
        pod = Pod(os.path.join(self.workdir, run['id'], task_name))
        executor_input = pipeline_spec_pb2.ExecutorInput()
        try:
            try:
                inputs, ids = self._resolve_inputs(run, task_name, task, component)
            except kfp_driver.DriverError as error:
                raise kfp_driver.DriverError(f'failed to resolve inputs: {error}')
            executor_input.inputs.CopyFrom(inputs)
            executor_input.outputs.CopyFrom(kfp_driver.provision_outputs(
                run['root'], task_name, component.output_definitions, self.publish_logs, pod)
                if self.oss else kfp_vertex.provision_outputs(run['root'], task_name,
                                                              component.output_definitions))
            if self.oss:
                ids = kfp_driver.input_artifact_ids(executor_input)  # GenerateExecutionConfig
            fingerprint, cached_id = '', ''
            if not self.cache_disabled and task.caching_options.enable_cache:
                fingerprint = kfp_driver.fingerprint(task, component, container, executor_input)
                cached_id = self.store.get_execution_cache(
                    fingerprint, 'pipeline/' + run['name'], self.namespace)
            # client.go CreateExecution: the driver leaves image, namespace, pod name and uid
            # empty (container.go never sets them); the launcher's prePublish fills the pod's.
            custom = {'display_name': _text(task.task_info.name), 'task_name': _text(task_name),
                      'parent_dag_id': metadata_store_pb2.Value(int_value=run['dag']),
                      'pod_name': _text(''), 'pod_uid': _text(''), 'namespace': _text(''),
                      'image': _text('')}
            if fingerprint:
                custom['cache_fingerprint'] = _text(fingerprint)
            if cached_id:
                custom['cached_execution_id'] = _text(cached_id)
            custom['inputs'] = metadata_store_pb2.Value()
            for key, value in executor_input.inputs.parameter_values.items():
                custom['inputs'].struct_value.fields[key].CopyFrom(value)
            execution_id = self.store.create_execution('system.ContainerExecution', custom, ids)
            if cached_id:  # the pod never starts: the older execution's outputs, same ids
                reused = kfp_driver.cached_outputs(self.store, executor_input, cached_id)
                self.store.publish_execution(execution_id, reused['parameters'],
                                             reused['artifacts'], _STATE.CACHED)
                return TaskRecord(execution_id, True, executor_input, None)
            # Not cached: the pod spec patch (initPodSpecPatch, then extendPodSpecPatch with the
            # executor's Kubernetes config when it has one).
            env = kfp_driver.pod_env(
                container, kfp_driver.kubernetes_config(run['platform'],
                                                        component.executor_label),
                lambda spec: kfp_driver.resolve_parameter(
                    spec, self._resolve_opts(run, task_name),
                    lambda t: self.store.execution_outputs(run['executions'][t])))
        except kfp_driver.DriverError as error:
            raise TaskFailed(f'driver.Container({info}) failed: {error}')
        try:  # the kubelet creates the container: its env, Secrets read now
            pod_env = kfp_launcher_v2.make_environment(env, self.secrets, self.namespace)
        except kfp_launcher_v2.PodStartError as error:
            raise TaskFailed(f'the pod of task {task_name} does not start: '
                             f'CreateContainerConfigError: {error}')
        self._launch(run, execution_id, fingerprint, component, container, executor_input, pod,
                     pod_env)
        return TaskRecord(execution_id, False, executor_input, pod)

    def _open_run_bucket(self, run, execution_id, pod_env) -> Optional[kfp_launcher_v2.RunStore]:
        """launcher_v2.go Execute(): before anything runs, the run's root from its context (the
        root generated with the pipeline name and run id) parsed with its session info
        (objectstore.ParseBucketConfig) and opened (objectstore.OpenBucket); a failure fails the
        task with no output recorded. None for a local root."""
        if run['session'] is None:
            return None
        opener = kfp_objectstore.Opener(self.namespace, self.secrets, pod_env or {},
                                        self.services)
        try:
            config = kfp_objectstore.parse_bucket_config(run['root'], run['session'])
            return kfp_launcher_v2.RunStore(config, opener.open_bucket(config), opener)
        except kfp_objectstore.ObjectStoreError as error:
            self.store.publish_execution(execution_id, None, {}, _STATE.FAILED)
            raise TaskFailed(f'failed to execute component: {error}')

    def _launch(self, run, execution_id, fingerprint, component, container, executor_input,
                pod, pod_env=None):
        """launcher_v2.go: Execute() / executeV2() / execute()."""
        v2, output, state = kfp_launcher_v2, None, _STATE.FAILED
        recorded: Dict[str, int] = {}
        if self.oss:  # prePublish(): the pod's name, uid and namespace (client.go
            # PrePublishExecution)
            props = self.store.executions[execution_id].custom_properties
            props['pod_name'].string_value = f"{run['id']}-{os.path.basename(pod.folder)}"
            props['pod_uid'].string_value = str(uuid.uuid5(uuid.NAMESPACE_URL, pod.folder))
            props['namespace'].string_value = self.namespace
        remote = self._open_run_bucket(run, execution_id, pod_env) if self.oss else None
        try:
            if self.publish_logs:
                v2.qualify_executor_logs(executor_input)
            command, args = v2.compile_cmd_and_args(
                v2.with_default_params(executor_input, component), pod,
                container.get('command', []), container.get('args', []))
            if self.oss:
                v2.download_artifacts(executor_input, pod, remote)
                v2.prepare_output_folders(executor_input, pod)
            else:  # a bucket has no folders: any path in it can be written at once
                os.makedirs(os.path.dirname(executor_input.outputs.output_file), exist_ok=True)
            hook = container.get('lifecycle', {}).get('preCacheCheck')
            if hook and not self.oss:  # only Vertex AI runs lifecycle hooks
                hook_command, hook_args = v2.compile_cmd_and_args(
                    executor_input, pod, hook['command'], hook.get('args', []))
                v2.run_command(hook_command, hook_args, pod)
            try:
                v2.run_command(command, args, pod, pod_env)
            finally:
                self._write_executor_logs(executor_input, pod)
            output = v2.read_executor_output(executor_input.outputs.output_file)
            v2.collect_output_parameters(executor_input, output, component)
            recorded = v2.upload_output_artifacts(executor_input, output, pod, self.store, True,
                                                  remote)
            state = _STATE.COMPLETE
        except (v2.LauncherError, kfp_mlmd.MLMDError) as error:
            if output is None and self.publish_logs:
                try:  # executeV2(): its error is dropped (`outputArtifacts, _ :=`)
                    recorded = v2.upload_output_artifacts(executor_input, None, pod, self.store,
                                                          False, remote)
                except (v2.LauncherError, kfp_mlmd.MLMDError,
                        kfp_objectstore.ObjectStoreError):
                    recorded = {}
            self.store.publish_execution(execution_id, None, recorded, state)
            raise TaskFailed(f'failed to execute component: {error}\n{pod.log_tail()}')
        self.store.publish_execution(execution_id, output.parameter_values, recorded, state)
        if fingerprint:  # a task with caching on that did not hit the cache makes an entry
            self.store.create_execution_cache(fingerprint, 'pipeline/' + run['name'],
                                              self.namespace, run['id'], execution_id)

    def _write_executor_logs(self, executor_input, pod):
        """launcher_v2.go: getLogWriter(): the command's output also goes to executor-logs'
        local path, uploaded with the other outputs."""
        logs = executor_input.outputs.artifacts.get('executor-logs')
        if logs is not None and self.publish_logs:
            with open(pod.log_file, 'rb') as source:
                content = source.read()
            with open(pod.local_path_for_uri(logs.artifacts[0].uri), 'wb') as dest:
                dest.write(content)


def _text(value: str) -> metadata_store_pb2.Value:
    return metadata_store_pb2.Value(string_value=value)
