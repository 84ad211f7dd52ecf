#!/usr/bin/env python3
"""KFP 2.17.0's `driver` program (backend/src/v2/cmd/driver/main.go), transcribed, for the
harness to run where the real binary is absent: the same flags (Go's flag package and glog's,
kfp_goflag.py), the same output files, the same ML Metadata requests over gRPC
(kfp_mlmd_client.py), the same cache calls (kfp_task_api.py) and Kubernetes reads
(kfp_k8s_client.py).

    python tests/support/kfp_driver_cli.py --type ROOT_DAG --pipeline_name P --run_id R ...

Driver types: ROOT_DAG (driver/root_dag.go RootDAG) and CONTAINER (driver/container.go
Container), the two the compiled workflow runs (its root is a ROOT_DAG `system-dag-driver`, each
task a CONTAINER `system-container-driver`). DAG (driver/dag.go DAG) is refused with exit 1.
Within them, what the compiled pipeline does not use is refused by name rather than guessed:
iterations (ParallelFor), trigger conditions and parameter expression selectors (CEL,
backend/src/v2/expression), literal checks, nested DAG producers, Kubernetes platform ops,
PVCs and the other KubernetesExecutorConfig fields except secretAsEnv, Modelcar inputs, TLS.

Failures end as KFP's do: glog.Exitf ("F... main.go] KFP driver: <error>", exit 1), after the
output files are written when driver.Container already has an execution; a nil execution
dereferenced (an unknown --type) is Go's panic, exit 2. Test support only.
"""
import json
import os
import sys
import time
import uuid
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from google.protobuf import json_format  # noqa: E402
from kfp.pipeline_spec import pipeline_spec_pb2  # noqa: E402
from ml_metadata.proto import metadata_store_pb2 as mlmd_pb  # noqa: E402

import kfp_driver  # noqa: E402
import kfp_goflag  # noqa: E402
import kfp_protojson  # noqa: E402
import kfp_k8s_client  # noqa: E402
import kfp_mlmd_client  # noqa: E402
import kfp_objectstore  # noqa: E402
import kfp_task_api  # noqa: E402
from kfp_goflag import Flag, glog  # noqa: E402

# cmd/driver/main.go: the flags, their defaults and help, as declared.
FLAGS = kfp_goflag.GLOG_FLAGS + kfp_goflag.KFP_COMMON_FLAGS + [
    Flag('type', 'string', '', 'task driver type, one of ROOT_DAG, DAG, CONTAINER'),
    Flag('run_name', 'string', '', 'pipeline run name (Kubernetes object name)'),
    Flag('run_display_name', 'string', '', 'pipeline run display name'),
    Flag('pipeline_job_create_time_utc', 'string', '', 'pipeline job creation time in UTC'),
    Flag('pipeline_job_schedule_time_epoch_seconds', 'string', '',
         'pipeline job scheduled time as Unix epoch seconds'),
    Flag('component', 'string', '{}', 'component spec'),
    Flag('task', 'string', '', 'task spec'),
    Flag('runtime_config', 'string', '', 'jobruntime config'),
    Flag('iteration_index', 'int', -1, 'iteration index, -1 means not an interation'),
    Flag('task_name', 'string', '', 'original task name, used for proper input resolution in '
         'the container/dag driver'),
    Flag('dag_execution_id', 'int', 0, 'DAG execution ID'),
    Flag('container', 'string', '{}', 'container spec'),
    Flag('kubernetes_config', 'string', '{}', 'kubernetes executor config'),
    Flag('ml_pipeline_server_address', 'string', 'ml-pipeline',
         'The name of the ML pipeline API server address.'),
    Flag('mlmd_server_address', 'string', '', 'MLMD server address'),
    Flag('mlmd_server_port', 'string', '', 'MLMD server port'),
    Flag('execution_id_path', 'string', '', 'Exeucution ID output path'),
    Flag('iteration_count_path', 'string', '', 'Iteration Count output path'),
    Flag('pod_spec_patch_path', 'string', '', 'Pod Spec Patch output path'),
    Flag('cached_decision_path', 'string', '', 'Cached Decision output path'),
    Flag('condition_path', 'string', '', 'Condition output path'),
    Flag('http_proxy', 'string', 'unset', 'The proxy for HTTP connections.'),
    Flag('https_proxy', 'string', 'unset', 'The proxy for HTTPS connections.'),
    Flag('no_proxy', 'string', 'unset', 'Addresses that should ignore the proxy.'),
    Flag('default_run_as_user', 'int', -1, 'Admin-configured default runAsUser for user '
         'containers. -1 means not set.'),
    Flag('default_run_as_group', 'int', -1, 'Admin-configured default runAsGroup for user '
         'containers. -1 means not set.'),
    Flag('default_run_as_non_root', 'string', '', 'Admin-configured default runAsNonRoot for '
         'user containers. Empty means not set.'),
    Flag('default_host_users', 'string', '', 'Administrator-configured default hostUsers for '
         'user workload pods. Empty means not set. Set to false to run pods in a dedicated Linux '
         'user namespace.'),
]
CREATE_TIME_PLACEHOLDER = '{{$.pipeline_job_create_time_utc}}'
SCHEDULE_TIME_PLACEHOLDER = '{{$.pipeline_job_schedule_time_utc}}'


class Failure(kfp_goflag.ProgramError):
    """drive() returned an error: the text glog.Exitf prints."""


GoPanic = kfp_goflag.GoPanic


class NotTranscribed(Failure):
    """What the real driver does here is not transcribed (named in the message)."""


class Execution:
    """driver.go: Execution."""

    def __init__(self, execution_id: int = 0, executor_input=None):
        self.id = execution_id
        self.executor_input = executor_input
        self.iteration_count: Optional[int] = None
        self.condition: Optional[bool] = None
        self.cached: Optional[bool] = None
        self.pod_spec_patch = ''


class DriverFailed(Failure):
    """driver.RootDAG/Container failed; `execution` is what it returned with the error."""

    def __init__(self, message: str, execution: Optional[Execution]):
        super().__init__(message)
        self.execution = execution


def _unmarshal(text: str, message, discard_unknown: bool = True):
    """util.UnmarshalString(): protojson with DiscardUnknown. A field KFP 2.17.0's protos have
    and the installed Python ones lack would be dropped here and not by KFP: refused instead
    (kfp_argo_compiler.refuse_newer_field)."""
    try:
        return json_format.Parse(text, message, ignore_unknown_fields=False)
    except json_format.ParseError as error:
        import kfp_argo_compiler  # pylint: disable=import-outside-toplevel
        kfp_argo_compiler.refuse_newer_field(error, message.DESCRIPTOR.name)
        if not discard_unknown:
            raise
    message.Clear()
    return json_format.Parse(text, message, ignore_unknown_fields=True)


def _info(opts: dict) -> str:
    """driver.go: Options.info()."""
    text = f"pipelineName={opts['pipeline_name']}, runID={opts['run_id']}"
    task = opts.get('task')
    if task is not None and task.task_info.name:
        text += f', taskDisplayName="{task.task_info.name}"'
    if opts.get('task_name'):
        text += f", taskName=\"{opts['task_name']}\""
    if task is not None and task.component_ref.name:
        text += f', component="{task.component_ref.name}"'
    if opts.get('dag_execution_id'):
        text += f", dagExecutionID={opts['dag_execution_id']}"
    if opts.get('iteration_index', -1) >= 0:
        text += f", iterationIndex={opts['iteration_index']}"
    if opts.get('runtime_config') is not None:
        text += ', runtimeConfig'
    if opts['component'].WhichOneof('implementation') is not None:
        text += ', componentSpec'
    if opts.get('kubernetes_config') is not None:
        text += ', KubernetesExecutorConfig'
    return text


def _already_exists(error: kfp_mlmd_client.MLMDError) -> bool:
    """util.go: isAlreadyExistsErr()."""
    import grpc  # pylint: disable=import-outside-toplevel
    return (error.code == grpc.StatusCode.ALREADY_EXISTS or 'AlreadyExists' in str(error)
            or 'Duplicate entry' in str(error))


# --- ROOT_DAG ----------------------------------------------------------------------------------
def root_dag(opts: dict, mlmd: kfp_mlmd_client.Client) -> Execution:
    """driver/root_dag.go: RootDAG()."""
    def invalid(text):
        return DriverFailed(f'driver.RootDAG({_info(opts)}) failed: invalid root DAG driver '
                            f'args: {text}', None)
    checks = ((not opts['pipeline_name'], 'pipeline name is required'),
              (not opts['run_id'], 'KFP run ID is required'),
              (opts['runtime_config'] is None, 'runtime config is required'),
              (not opts['namespace'], 'namespace is required'),
              (opts['task'] is not None and opts['task'].task_info.name,
               'task spec is unnecessary'),
              (opts['dag_execution_id'] != 0, 'DAG execution ID is unnecessary'),
              (opts['iteration_index'] >= 0, 'iteration index is unnecessary'))
    for failed, text in checks:
        if failed:
            raise invalid(text)
    try:
        return _root_dag(opts, mlmd)
    except (kfp_mlmd_client.MLMDError, kfp_k8s_client.K8sError,
            kfp_objectstore.ObjectStoreError) as error:
        raise DriverFailed(f'driver.RootDAG({_info(opts)}) failed: {error}', None)


def _root_dag(opts, mlmd):
    root = opts['runtime_config'].gcs_output_directory
    try:
        k8s = kfp_k8s_client.kubernetes_config()
    except kfp_k8s_client.K8sError as error:
        raise kfp_k8s_client.K8sError(f'failed to initialize kubernetes client set: failed to '
                                      f'initialize kubernetes config: {error}')
    try:  # config.FromConfigMap()
        launcher_config = k8s.config_map(opts['namespace'], 'kfp-launcher').get('data') or {}
    except kfp_k8s_client.K8sError as error:
        if not error.not_found:
            raise
        launcher_config = None
    if not root:  # config.DefaultPipelineRoot()
        root = (launcher_config or {}).get('defaultPipelineRoot') or \
            'minio://mlpipeline/v2/artifacts'
    if launcher_config and launcher_config.get('providers'):
        raise NotTranscribed('config/env.go GetStoreSessionInfo with a kfp-launcher '
                             '`providers` entry is not transcribed')
    session = kfp_objectstore.store_session_info(root)  # GetStoreSessionInfo (no providers)
    session_json = kfp_objectstore.session_info_json(session)
    pipeline = mlmd.get_pipeline(opts['pipeline_name'], opts['run_id'], opts['namespace'],
                                 'run-resource', root, session_json)
    config = kfp_mlmd_client.ExecutionConfig(
        execution_type=kfp_mlmd_client.DAG_EXECUTION_TYPE, name=f"run/{opts['run_id']}")
    if opts['runtime_parameters_given']:  # a nil map (no parameterValues) records no "inputs"
        config.input_parameters = dict(opts['runtime_config'].parameter_values)
    try:
        created = mlmd.create_execution(pipeline, config)
    except kfp_mlmd_client.MLMDError as error:
        if not _already_exists(error):
            raise
        try:  # an Argo retry of the ROOT_DAG driver: the execution "run/<id>" exists
            existing = mlmd.get_execution_by_type_and_name(kfp_mlmd_client.DAG_EXECUTION_TYPE,
                                                           config.name)
        except kfp_mlmd_client.MLMDError as lookup:
            raise kfp_mlmd_client.MLMDError(f'failed to lookup existing execution: {lookup}')
        return Execution(existing.id)
    return Execution(created.id)


# --- CONTAINER ---------------------------------------------------------------------------------
def container(opts: dict, mlmd: kfp_mlmd_client.Client,
              cache: Optional[kfp_task_api.Client]) -> Execution:
    """driver/container.go: Container()."""
    prefix = f'driver.Container({_info(opts)}) failed: '
    checks = ((not opts['pipeline_name'], 'pipeline name is required'),
              (not opts['run_id'], 'KFP run ID is required'),
              (opts['task'] is None or not opts['task'].task_info.name, 'task spec is required'),
              (opts['runtime_config'] is not None, 'runtime config is unnecessary'),
              (opts['dag_execution_id'] == 0, 'DAG execution ID is required'))
    for failed, text in checks:  # validateContainer() / validateNonRoot()
        if failed:
            raise DriverFailed(prefix + f'invalid container driver args: {text}', None)
    state = {'execution': None}
    try:
        return _container(opts, mlmd, cache, state)
    except DriverFailed:
        raise
    except (kfp_driver.DriverError, kfp_mlmd_client.MLMDError, kfp_task_api.CacheError,
            kfp_k8s_client.K8sError) as error:
        raise DriverFailed(prefix + str(error), state['execution'])


def _producer_outputs(mlmd, dag, pipeline, producer: str):
    """resolve.go: the producer task's execution in this DAG (getDAGTasks, by
    "<task>_<dag id>"); a DAG producer (nested pipelines) is not transcribed."""
    tasks = mlmd.get_executions_in_dag(dag, pipeline, True)
    return tasks.get(f'{producer}_{dag.id}')


def _resolve_inputs(opts, mlmd, dag, pipeline):
    """resolve.go: resolveInputs(); its errors are "failed to resolve inputs: ..."."""
    try:
        return _resolve_inputs_of(opts, mlmd, dag, pipeline)
    except (kfp_driver.DriverError, kfp_mlmd_client.MLMDError) as error:
        raise kfp_driver.DriverError(f'failed to resolve inputs: {error}')


def _resolve_inputs_of(opts, mlmd, dag, pipeline):
    """resolve.go: resolveInputs() for a task that is not an iteration."""
    task, component = opts['task'], opts['component']
    if opts['iteration_index'] >= 0:
        raise NotTranscribed('resolve.go resolveInputs for an iteration (ParallelFor) is not '
                             'transcribed')
    dag_inputs, _ = dag.parameters()
    mlmd.get_input_artifacts_by_execution_id(dag.id)  # read as KFP reads it (unused: no DAG
    # inputs are consumed by a task of the root DAG here)
    inputs = pipeline_spec_pb2.ExecutorInput.Inputs()
    resolve_opts = _resolve_opts(opts, dag_inputs)
    nils, nil_artifacts = set(), []

    def upstream_parameters(producer):
        execution = _producer_outputs(mlmd, dag, pipeline, producer)
        if execution is None:
            raise kfp_driver.DriverError(f'producer task, {producer}_{dag.id}, not in tasks')
        if execution.execution.type == kfp_mlmd_client.DAG_EXECUTION_TYPE:
            raise NotTranscribed('resolve.go resolveUpstreamParameters through a DAG is not '
                                 'transcribed')
        return execution.parameters()[1]
    for name, spec in task.inputs.parameters.items():
        if spec.parameter_expression_selector:
            raise NotTranscribed('resolve.go handleParameterExpressionSelector (CEL) is not '
                                 'transcribed')
        definition = component.input_definitions.parameters.get(name)
        if definition is not None and definition.parameter_type == 9:  # TASK_CONFIG
            continue
        try:
            value = kfp_driver.resolve_parameter(spec, resolve_opts, upstream_parameters)
        except kfp_driver.ResolvedNull:
            if definition is not None and definition.is_optional:
                continue
            raise
        except KeyError:  # the producer recorded no such output: Go's nil *Value
            nils.add(name)
            continue
        if definition is not None and len(getattr(definition, 'literals', ())):
            raise NotTranscribed('util.ValidateLiteralParameter is not transcribed')
        inputs.parameter_values[name].CopyFrom(value)
    for name, spec in task.inputs.artifacts.items():
        artifacts = _resolve_artifact(mlmd, dag, pipeline, name, spec)
        if artifacts is None:
            nil_artifacts.append(name)
        else:
            inputs.artifacts[name].CopyFrom(artifacts)
    kfp_driver.check_parameter_types(inputs, component.input_definitions, nils)
    if nil_artifacts or nils - set(component.input_definitions.parameters):
        # A nil artifact (or an unchecked nil parameter) reaches GenerateExecutionConfig /
        # protojson, which dereference it.
        raise GoPanic('runtime error: invalid memory address or nil pointer dereference')
    return inputs


def _resolve_artifact(mlmd, dag, pipeline, name, spec):
    """resolve.go: resolveInputArtifact() / resolveUpstreamArtifacts() for a container
    producer: its OUTPUT artifact of that key, ToRuntimeArtifact with Schema ""."""
    kind = spec.WhichOneof('kind')
    if kind != 'task_output_artifact':
        raise NotTranscribed(f'resolve.go resolveInputArtifact of kind {kind} is not '
                             'transcribed (no task of the root DAG takes a DAG input artifact)')
    output = spec.task_output_artifact
    if not output.producer_task:
        raise kfp_driver.DriverError(f'failed to resolve input artifact {name} with spec '
                                     f'{kfp_driver.go_text(spec)}: producer task is empty')
    producer = _producer_outputs(mlmd, dag, pipeline, output.producer_task)
    if producer is None:
        raise kfp_driver.DriverError(
            f'failed to resolve input artifact {name} with spec {kfp_driver.go_text(spec)}: '
            f'cannot find producer task "{output.producer_task}_{dag.id}"')
    if producer.execution.type == kfp_mlmd_client.DAG_EXECUTION_TYPE:
        raise NotTranscribed('resolve.go resolveUpstreamArtifacts through a DAG is not '
                             'transcribed')
    outputs = mlmd.get_output_artifacts_by_execution_id(producer.id)
    if output.output_artifact_key not in outputs:
        # KFP only builds the error (cfg.err without return) and goes on with a nil artifact.
        return None
    artifacts = pipeline_spec_pb2.ArtifactList()
    artifacts.artifacts.add().CopyFrom(outputs[output.output_artifact_key].to_runtime_artifact())
    return artifacts


def _resolve_opts(opts, dag_inputs):
    return {'root_inputs': dag_inputs, 'run_id': opts['run_id'], 'run_name': opts['run_name'],
            'run_display_name': opts['run_display_name'], 'task_name': opts['task_name'],
            'dag_execution_id': opts['dag_execution_id'],
            'create_time_utc': opts['create_time_utc'],
            'schedule_time_utc': opts['schedule_time_utc']}


def _container(opts, mlmd, cache, state):
    task, component, spec = opts['task'], opts['component'], opts['container']
    pipeline = mlmd.get_pipeline(opts['pipeline_name'], opts['run_id'], '', '', '', '')
    dag = mlmd.get_dag(opts['dag_execution_id'])
    inputs = _resolve_inputs(opts, mlmd, dag, pipeline)
    executor_input = pipeline_spec_pb2.ExecutorInput(inputs=inputs)
    execution = state['execution'] = Execution(executor_input=executor_input)
    if task.trigger_policy.condition:
        raise NotTranscribed('expression.Condition (a CEL trigger policy) is not transcribed')
    if spec.get('image') in ('argostub/createpvc', 'argostub/deletepvc'):
        raise NotTranscribed('k8s.go kubernetesPlatformOps is not transcribed')
    executor_input.outputs.CopyFrom(kfp_driver.provision_outputs(
        pipeline.pipeline_root(), opts['task_name'], component.output_definitions,
        opts['publish_logs'] == 'true', kfp_driver_pod(), str(uuid.uuid4())))
    config = kfp_mlmd_client.generate_execution_config(executor_input)
    config.input_parameters = dict(executor_input.inputs.parameter_values)
    config.execution_type = kfp_mlmd_client.CONTAINER_EXECUTION_TYPE
    config.task_name, config.display_name = opts['task_name'], task.task_info.name
    config.parent_dag_id = dag.id
    k8s_config = opts['kubernetes_config']
    dag_inputs = dag.parameters()[0] if k8s_config is not None else {}
    if k8s_config is not None:
        _refuse_unsupported(k8s_config)
    if not opts['cache_disabled'] and task.caching_options.enable_cache:
        if _needs_workspace(executor_input):
            raise NotTranscribed('driver.go workspace PVCs are not transcribed')
        # getFingerPrintsAndID(): the fingerprint, then the newest cache entry.
        fingerprint = kfp_driver.fingerprint(task, component, spec, executor_input)
        config.fingerprint = fingerprint
        config.cached_mlmd_execution_id = cache.get_execution_cache(
            fingerprint, 'pipeline/' + opts['pipeline_name'], opts['namespace'])
    created = mlmd.create_execution(pipeline, config)
    execution.id = created.id
    execution.cached = False
    if not opts['cache_disabled'] and task.caching_options.enable_cache \
            and config.cached_mlmd_execution_id:
        _reuse_cached_outputs(mlmd, created, executor_input, config.cached_mlmd_execution_id)
        execution.cached = True
        return execution
    resolve_opts = _resolve_opts(opts, dag_inputs)
    env = kfp_driver.pod_env(spec, None, None, kfp_driver.proxy_env(
        opts['http_proxy'], opts['https_proxy'], opts['no_proxy']))
    patch = kfp_driver.init_pod_spec_patch(spec, component, executor_input, execution.id,
                                           opts, env)
    if k8s_config is not None:  # extendPodSpecPatch(): the secretAsEnv entries
        secret_env = kfp_driver.pod_env({}, k8s_config, lambda s: kfp_driver.resolve_parameter(
            s, resolve_opts, lambda producer: {}))
        if secret_env:
            patch['containers'][0]['env'] = patch['containers'][0].get('env', []) + secret_env
            patch['containers'][0] = _go_container_order(patch['containers'][0])
    execution.pod_spec_patch = kfp_protojson.go_json(patch)
    return execution


def kfp_driver_pod():
    """The driver runs in its own pod: provisionOutputs' paths are absolute as they are."""
    import kfp_launcher_v2  # pylint: disable=import-outside-toplevel
    return kfp_launcher_v2.Pod('')


def _go_container_order(main: dict) -> dict:
    """core/v1 Container's JSON field order (name, image, command, args, env, resources)."""
    order = ('name', 'image', 'command', 'args', 'env', 'resources')
    return {key: main[key] for key in order if key in main}


def _needs_workspace(executor_input) -> bool:
    """driver.go: needsWorkspaceMount()."""
    for value in executor_input.inputs.parameter_values.values():
        if value.WhichOneof('kind') == 'string_value' and (
                '{{$.workspace_path}}' in value.string_value
                or '/kfp-workspace' in value.string_value):
            return True
    for artifacts in executor_input.inputs.artifacts.values():
        if artifacts.artifacts and artifacts.artifacts[0].metadata.fields.get(
                '_kfp_workspace') is not None and \
                artifacts.artifacts[0].metadata.fields['_kfp_workspace'].bool_value:
            return True
    return False


def _refuse_unsupported(config) -> None:
    """k8s.go extendPodSpecPatch(): only secretAsEnv is transcribed."""
    for field, _ in config.ListFields():
        if field.name != 'secret_as_env':
            raise NotTranscribed(f'k8s.go extendPodSpecPatch for {field.name} is not '
                                 'transcribed')


def _reuse_cached_outputs(mlmd, created, executor_input, cached_id: str) -> None:
    """driver/cache.go: reuseCachedOutputs() then PublishExecution(CACHED): the older
    execution's output parameters and, for each output of this task, its artifact of that
    name (the same artifact: an event only)."""
    try:
        old_id = int(cached_id)
    except ValueError:
        raise kfp_driver.DriverError(f'failure while transferring cachedMLMDExecutionID '
                                     f'{cached_id} from string to int64')
    try:
        old = mlmd.get_execution(old_id)
    except kfp_mlmd_client.MLMDError as error:
        raise kfp_driver.DriverError(f'failure while getting execution of '
                                     f'cachedMLMDExecutionID {old_id}: {error}')
    outputs = old.parameters()[1]
    try:
        recorded = mlmd.get_output_artifacts_by_execution_id(old_id)
    except kfp_mlmd_client.MLMDError as error:
        raise kfp_driver.DriverError(
            f'failed collect output artifact metadata from cache: failed to get '
            f'MLMDOutputArtifactsByName by executionId {old_id}: {error}')
    reused = []
    for name, artifacts in executor_input.outputs.artifacts.items():
        if not artifacts.artifacts:
            continue
        if name not in recorded:
            raise kfp_driver.DriverError(
                'failed collect output artifact metadata from cache: unable to find artifact '
                f'with name {name} in mlmd output artifacts')
        recorded[name].schema = artifacts.artifacts[0].type.instance_schema
        reused.append(recorded[name])
    try:
        mlmd.publish_execution(created, outputs, reused, mlmd_pb.Execution.CACHED)
    except kfp_mlmd_client.MLMDError as error:
        raise kfp_driver.DriverError(f'failed to publish cached execution: {error}')


# --- main.go -----------------------------------------------------------------------------------
def _write(path: str, data: str, what: str) -> None:
    """main.go: writeFile(): MkdirAll of the folder, then WriteFile."""
    if not path:
        raise Failure(f'failed to write {what} to file: path is not specified')
    folder = os.path.dirname(path) or '.'
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise Failure(f'failed to write {what} to file: failed to write to {path}: '
                      + kfp_protojson.path_error('mkdir', error.filename or folder, error))
    try:
        with open(path, 'w') as handle:
            handle.write(data)
    except OSError as error:
        raise Failure(f'failed to write {what} to file: failed to write to {path}: '
                      + kfp_protojson.path_error('open', path, error))


def handle_execution(execution: Execution, driver_type: str, values: dict) -> None:
    """main.go: handleExecution()."""
    if execution.id != 0 and values['execution_id_path']:
        _write(values['execution_id_path'], str(execution.id), 'execution ID')
    if execution.iteration_count is not None:
        _write(values['iteration_count_path'], str(execution.iteration_count),
               'iteration count')
    elif driver_type in ('ROOT_DAG', 'DAG'):
        _write(values['iteration_count_path'], '0', 'iteration count')
    if execution.cached is not None:
        _write(values['cached_decision_path'], 'true' if execution.cached else 'false',
               'cached decision')
    if execution.condition is not None:
        _write(values['condition_path'], 'true' if execution.condition else 'false',
               'condition')
    else:  # nil is a valid value for Condition
        _write(values['condition_path'], 'nil', 'condition')
    if execution.pod_spec_patch:
        if not values['pod_spec_patch_path']:
            raise Failure('--pod_spec_patch_path is required for container executor drivers')
        _write(values['pod_spec_patch_path'], execution.pod_spec_patch, 'pod spec patch')


def _placeholder_times(values: dict, task, namespace: str):
    """main.go: getPipelineJobTimePlaceholderUsage(), getWorkflowMetadataForPipelineJobTimes()
    and resolvePipelineJobTimes(): (create time UTC, schedule time UTC)."""
    create, epoch = (values['pipeline_job_create_time_utc'],
                     values['pipeline_job_schedule_time_epoch_seconds'])
    needs_create = needs_schedule = False
    if values['type'] != 'ROOT_DAG' and task is not None:
        for spec in task.inputs.parameters.values():
            if spec.WhichOneof('kind') == 'runtime_value' and \
                    spec.runtime_value.WhichOneof('value') == 'constant':
                text = spec.runtime_value.constant.string_value
                needs_create |= text == CREATE_TIME_PLACEHOLDER
                needs_schedule |= text == SCHEDULE_TIME_PLACEHOLDER
    meta = None
    if (needs_create and not create) or (needs_schedule and not epoch):
        try:
            if not values['run_name']:
                raise Failure('workflow name is empty')
            meta = kfp_k8s_client.kubernetes_config().workflow(
                namespace, values['run_name'])['metadata']
        except (Failure, kfp_k8s_client.K8sError) as error:
            if not (needs_create and not create) and create:
                glog('W', f'Failed to retrieve workflow metadata for pipeline job schedule time '
                          f'for workflow "{values["run_name"]}", falling back to create time: '
                          f'{error}')
            else:
                raise Failure(f'failed to retrieve workflow "{values["run_name"]}": {error}')
    if not create and meta is not None:
        create = meta.get('creationTimestamp', '')
    if epoch:
        try:
            seconds = int(epoch)
        except ValueError:
            raise Failure(f'invalid pipeline job schedule time epoch seconds "{epoch}": '
                          f'strconv.ParseInt: parsing "{epoch}": invalid syntax')
        return create, time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(seconds))
    schedule = create
    label = ((meta or {}).get('labels') or {}).get('pipeline/workflowEpoch')
    if label and label.isdigit():
        schedule = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(int(label)))
    return create, schedule


def drive(values: dict) -> None:
    """main.go: drive(); errors are prefixed "KFP driver: "."""
    for flag in ('type', 'http_proxy', 'https_proxy', 'no_proxy'):  # validate()
        if flag == 'type' and not values[flag]:
            raise Failure('argument --type must be specified')
        if flag != 'type' and values[flag] == 'unset':
            raise Failure(f'argument --{flag} is required but can be an empty value')
    component_text = values['component']
    if component_text.startswith('@'):
        try:
            with open(component_text[1:]) as handle:
                component_text = handle.read()
        except OSError as error:
            raise Failure(f'failed to read component spec from file {component_text[1:]}: '
                          + kfp_protojson.path_error('open', component_text[1:], error))
    opts = dict(values, container=None, kubernetes_config=None)
    try:
        opts['component'] = _unmarshal(component_text, pipeline_spec_pb2.ComponentSpec())
    except json_format.ParseError as error:
        raise Failure(f'failed to unmarshal component spec, error: {error}\ncomponentSpec: '
                      f'{component_text}')
    opts['task'] = None
    if values['task']:
        try:
            opts['task'] = _unmarshal(values['task'], pipeline_spec_pb2.PipelineTaskSpec())
        except json_format.ParseError as error:
            raise Failure(f"failed to unmarshal task spec, error: {error}\ntask: "
                          f"{values['task']}")
    try:
        container_spec = _unmarshal(
            values['container'],
            pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec())
    except json_format.ParseError as error:
        raise Failure(f'failed to unmarshal container spec, error: {error}')
    opts['runtime_config'], opts['runtime_parameters_given'] = None, False
    if values['runtime_config']:
        try:
            opts['runtime_config'] = _unmarshal(values['runtime_config'],
                                                pipeline_spec_pb2.PipelineJob.RuntimeConfig())
            opts['runtime_parameters_given'] = 'parameterValues' in json.loads(
                values['runtime_config']) or 'parameter_values' in json.loads(
                values['runtime_config'])
        except (json_format.ParseError, ValueError) as error:
            raise Failure(f'failed to unmarshal runtime config, error: {error}')
    k8s_config = None
    if values['kubernetes_config']:  # parseExecConfigJson()
        try:
            data = json.loads(values['kubernetes_config'])
            try:
                k8s_config = kfp_driver.parse_kubernetes_config(data, discard_unknown=False)
            except kfp_driver.DriverError as strict_error:
                import kfp_argo_compiler  # pylint: disable=import-outside-toplevel
                kfp_argo_compiler.refuse_newer_field(strict_error, 'KubernetesExecutorConfig')
                k8s_config = kfp_driver.parse_kubernetes_config(data, discard_unknown=True)
        except (ValueError, kfp_driver.DriverError) as error:
            raise Failure(f'failed to unmarshal Kubernetes config, error: {error}')
    try:
        opts['namespace'] = kfp_k8s_client.in_pod_namespace()
    except kfp_k8s_client.K8sError as error:
        raise Failure(str(error))
    if values['metadata_tls_enabled'] or values['ml_pipeline_tls_enabled']:
        raise NotTranscribed('TLS to ML Metadata and the API server is not transcribed')
    mlmd = kfp_mlmd_client.Client(values['mlmd_server_address'], values['mlmd_server_port'])
    cache = None if values['cache_disabled'] else kfp_task_api.Client(
        values['ml_pipeline_server_address'], values['ml_pipeline_server_port'])
    opts['create_time_utc'], opts['schedule_time_utc'] = _placeholder_times(
        values, opts['task'], opts['namespace'])
    execution = None
    driver_error = None
    try:
        if values['type'] == 'ROOT_DAG':
            execution = root_dag(opts, mlmd)
        elif values['type'] == 'DAG':
            raise NotTranscribed('driver.DAG (backend/src/v2/driver/dag.go) is not transcribed: '
                                 "the compiled workflow's root runs the ROOT_DAG driver")
        elif values['type'] == 'CONTAINER':
            opts['container'] = json_format.MessageToDict(container_spec)
            opts['kubernetes_config'] = k8s_config
            for name, default in (('default_run_as_user', -1), ('default_run_as_group', -1),
                                  ('default_run_as_non_root', ''),
                                  ('default_host_users', '')):
                if values[name] != default:
                    raise NotTranscribed(f'--{name} (k8s.go security defaults) is not '
                                         'transcribed')
            execution = container(opts, mlmd, cache)
        else:  # main.go sets err and goes on with a nil execution: handleExecution panics
            raise GoPanic('runtime error: invalid memory address or nil pointer dereference')
    except DriverFailed as error:
        if error.execution is None:
            raise
        execution, driver_error = error.execution, error
    handle_execution(execution, values['type'], values)
    if driver_error is not None:
        raise driver_error


def main(argv=None) -> int:
    return kfp_goflag.run_program(FLAGS, argv, lambda values, _: drive(values), 'KFP driver: ')


if __name__ == '__main__':
    sys.exit(main())
