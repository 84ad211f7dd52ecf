"""The Argo templates KFP 2.17.0's backend compiler adds to every Workflow, transcribed for
kfp_argo_compiler.py: the DAG and container drivers, the container executor and its pod, and
the security contexts each gets. Each returns a template dict shaped as the API server's
json.Marshal of argo's wfv1.Template prints it (`inputs`, `outputs` and `metadata` always
present, other fields only when set). Test support only.

Sources (kubeflow/pipelines tag 2.17.0, backend/src/v2/compiler/argocompiler/):
container.go (addContainerDriverTemplate, addContainerExecutorTemplate, containerDriverTask,
containerExecutorTask, the image and command getters), importer.go (addImporterTemplate,
importerTask), dag.go (addDAGDriverTemplate),
argo.go (driverResources, launcherResources, the param names), common.go (commonEnvs,
metadataEnvFrom, setRuntimeRole), security_context.go, backend/src/v2/component/constants.go
(KFPLauncherPath, VolumePathKFPLauncher), backend/src/apiserver/config/proxy/config.go.
"""
import copy
from typing import List, Mapping

import kfp_go_json

# argo.go: k8sres.MustParse("0.5Gi") etc., as Quantity's canonical form marshals them.
DRIVER_RESOURCES = {'limits': {'cpu': '500m', 'memory': '512Mi'},
                    'requests': {'cpu': '100m', 'memory': '64Mi'}}
LAUNCHER_RESOURCES = {'limits': {'cpu': '500m', 'memory': '256Mi'}, 'requests': {'cpu': '100m'}}

# common.go commonEnvs / metadataEnvFrom.
COMMON_ENVS = [{'name': 'KFP_POD_NAME', 'valueFrom': {'fieldRef': {'fieldPath': 'metadata.name'}}},
               {'name': 'KFP_POD_UID', 'valueFrom': {'fieldRef': {'fieldPath': 'metadata.uid'}}}]
METADATA_ENV_FROM = {'configMapRef': {'name': 'metadata-grpc-configmap', 'optional': True}}

# component/constants.go
VOLUME_PATH_KFP_LAUNCHER = '/kfp-launcher'
KFP_LAUNCHER_PATH = VOLUME_PATH_KFP_LAUNCHER + '/launch'
# container.go: the executor pod's emptyDir scratch folders, in the order it mounts them.
SCRATCH_VOLUMES = (('kfp-launcher', VOLUME_PATH_KFP_LAUNCHER), ('gcs-scratch', '/gcs'),
                   ('s3-scratch', '/s3'), ('minio-scratch', '/minio'),
                   ('dot-local-scratch', '/.local'), ('dot-cache-scratch', '/.cache'),
                   ('dot-config-scratch', '/.config'))

RUNTIME_ROLE = 'pipelines.kubeflow.org/runtime-role'  # util.AnnotationKeyRuntimeRole


class ServerConfig:
    """What the API server's compile reads from its configuration (viper: config.json and the
    environment) and its process environment (os.Getenv). `env` holds both, by key; an empty
    mapping is a default install, and what the by-hand `handcompile` sees."""

    def __init__(self, env: Mapping[str, str] = None):
        self.env = dict(env or {})
        self._refuse_untranscribed()

    def get(self, key: str, default: str) -> str:
        """common/config.go GetStringConfigWithDefault (viper.IsSet, else the default)."""
        return self.env.get(key, default)

    def _refuse_untranscribed(self) -> None:
        for key, what in (('CABUNDLE_SECRET_NAME', 'ConfigureCustomCABundle'),
                          ('CABUNDLE_CONFIGMAP_NAME', 'ConfigureCustomCABundle'),
                          ('DEFAULT_SECURITY_CONTEXT_RUN_AS_USER', 'the driver args defaults'),
                          ('DEFAULT_SECURITY_CONTEXT_RUN_AS_GROUP', 'the driver args defaults'),
                          ('DEFAULT_SECURITY_CONTEXT_RUN_AS_NON_ROOT',
                           'the driver args defaults'),
                          ('DEFAULT_SECURITY_CONTEXT_HOST_USERS', 'the driver args defaults')):
            if self.env.get(key):
                raise NotImplementedError(f'{key}: container.go/common.go {what} is not '
                                          'transcribed')
        if self.env.get('COMPILED_PIPELINE_SPEC_PATCH', '{}') not in ('', '{}'):
            raise NotImplementedError('COMPILED_PIPELINE_SPEC_PATCH: spec_patch.go '
                                      'ApplyWorkflowSpecPatch (a strategic merge patch) is not '
                                      'transcribed')

    # metadata/env.go GetMetadataConfig, config/env.go GetMLPipelineServerConfig: the address is
    # <service>.<POD_NAMESPACE>.svc.<CLUSTER_DOMAIN>, the ports fixed.
    def _service(self, key: str, default: str) -> str:
        return (f'{self.get(key, default)}.{self.get("POD_NAMESPACE", "kubeflow")}.svc.'
                f'{self.get("CLUSTER_DOMAIN", "cluster.local")}')

    @property
    def ml_pipeline_address(self) -> str:
        return self._service('ML_PIPELINE_SERVICE_NAME', 'ml-pipeline')

    ml_pipeline_port = '8887'  # config/env.go mlPipelineGrpcServicePort

    @property
    def mlmd_address(self) -> str:
        return self._service('METADATA_SERVICE_NAME', 'metadata-grpc-service')

    mlmd_port = '8080'  # metadata/env.go metadataGrpcServicePort

    @property
    def metadata_tls(self) -> bool:
        """common/config.go GetMetadataTLSEnabled (strconv.ParseBool)."""
        return _parse_bool(self.get('METADATA_TLS_ENABLED', 'false'))

    @property
    def service_account(self) -> str:
        return self.get('DEFAULTPIPELINERUNNERSERVICEACCOUNT', 'pipeline-runner')

    # container.go GetDriverImage / GetLauncherImage / Get*Command: os.Getenv, space-split.
    @property
    def driver_image(self) -> str:
        return self.env.get('V2_DRIVER_IMAGE') or 'ghcr.io/kubeflow/kfp-driver:latest'

    @property
    def launcher_image(self) -> str:
        return self.env.get('V2_LAUNCHER_IMAGE') or 'ghcr.io/kubeflow/kfp-launcher:latest'

    @property
    def driver_command(self) -> List[str]:
        return (self.env.get('V2_DRIVER_COMMAND') or 'driver').split(' ')

    @property
    def launcher_command(self) -> List[str]:
        return (self.env.get('V2_LAUNCHER_COMMAND') or 'launcher-v2').split(' ')

    @property
    def run_as_user(self):
        """container.go GetPipelineRunAsUser: PIPELINE_RUN_AS_USER as an int64, else unset."""
        try:
            return int(self.env.get('PIPELINE_RUN_AS_USER', ''), 10)
        except ValueError:
            return None

    def log_args(self) -> List[str]:
        """`--log_level` / `--publish_logs` when PIPELINE_LOG_LEVEL / PUBLISH_LOGS are set."""
        args = []
        for key, flag in (('PIPELINE_LOG_LEVEL', '--log_level'), ('PUBLISH_LOGS',
                                                                    '--publish_logs')):
            if key in self.env:
                args += [flag, self.env[key]]
        return args

    # proxy/config.go newConfigFromEnv (InitializeConfigWithEnv) and GetEnvVars.
    def proxy(self):
        http, https = self.env.get('HTTP_PROXY'), self.env.get('HTTPS_PROXY')
        no_proxy = self.env.get('NO_PROXY')
        if (http is not None or https is not None) and no_proxy is None:
            no_proxy = ('localhost,127.0.0.1,.svc.' + self.get('CLUSTER_DOMAIN', 'cluster.local')
                        + ',kubernetes.default.svc,minio-service.kubeflow,metadata-grpc-service,'
                        'metadata-grpc-service.kubeflow,ml-pipeline.kubeflow')
        return http or '', https or '', no_proxy or ''

    def proxy_env(self) -> list:
        env = []
        for value, names in zip(self.proxy(), (('http_proxy', 'HTTP_PROXY'),
                                               ('https_proxy', 'HTTPS_PROXY'),
                                               ('no_proxy', 'NO_PROXY'))):
            if value:
                env += [{'name': name, 'value': value} for name in names]
        return env

    def server_args(self, cache_disabled: bool, ml_pipeline_tls: bool) -> List[str]:
        """The tail both driver templates share (dag.go / container.go): proxies, the baked
        ml-pipeline and ML Metadata addresses, then the optional flags."""
        http, https, no_proxy = self.proxy()
        args = ['--http_proxy', http, '--https_proxy', https, '--no_proxy', no_proxy,
                '--ml_pipeline_server_address', self.ml_pipeline_address,
                '--ml_pipeline_server_port', self.ml_pipeline_port,
                '--mlmd_server_address', self.mlmd_address,
                '--mlmd_server_port', self.mlmd_port]
        return args + self.optional_args(cache_disabled, ml_pipeline_tls)

    def optional_args(self, cache_disabled: bool, ml_pipeline_tls: bool) -> List[str]:
        """The flags the drivers and the importer append after the addresses, in this order."""
        args = ['--cache_disabled'] if cache_disabled else []
        if ml_pipeline_tls:
            args.append('--ml_pipeline_tls_enabled')
        if self.metadata_tls:
            args.append('--metadata_tls_enabled')
        return args + self.log_args()


def _parse_bool(text: str) -> bool:
    """strconv.ParseBool; common/config.go GetBoolConfigWithDefault glog.Fatalf's otherwise."""
    if text in ('1', 't', 'T', 'TRUE', 'true', 'True'):
        return True
    if text in ('0', 'f', 'F', 'FALSE', 'false', 'False'):
        return False
    raise ValueError(f'Failed converting string to bool {text}')


def input_value(name: str) -> str:
    """argo.go inputValue / inputParameter."""
    return '{{inputs.parameters.%s}}' % name


def output_path(name: str) -> str:
    """argo.go outputPath."""
    return '{{outputs.parameters.%s.path}}' % name


def task_output_parameter(task: str, name: str) -> str:
    """argo.go taskOutputParameter."""
    return '{{tasks.%s.outputs.parameters.%s}}' % (task, name)


def workflow_parameter(name: str) -> str:
    """argo.go workflowParameter."""
    return '{{workflow.parameters.%s}}' % name


def new_template(name: str, **fields) -> dict:
    """A wfapi.Template as json.Marshal prints it: inputs, outputs and metadata are structs
    without omitempty, so always there."""
    template = {'name': name, 'inputs': {}, 'outputs': {}, 'metadata': {}}
    template.update({k: v for k, v in fields.items() if v is not None})
    return template


def set_runtime_role(template: dict, role: str) -> None:
    """common.go setRuntimeRole."""
    template['metadata'].setdefault('annotations', {})[RUNTIME_ROLE] = role


# ---- security_context.go
def _default_container_security_context() -> dict:
    """defaultContainerSecurityContext."""
    return {'allowPrivilegeEscalation': False, 'runAsNonRoot': True,
            'capabilities': {'drop': ['ALL']}, 'seccompProfile': {'type': 'RuntimeDefault'}}


def _apply_to_container(container: dict) -> None:
    """applySecurityContextToContainer."""
    if container is None:
        return
    context = container.get('securityContext')
    if context is None:
        container['securityContext'] = _default_container_security_context()
        return
    context.setdefault('allowPrivilegeEscalation', False)
    context.setdefault('runAsNonRoot', True)
    context.setdefault('capabilities', {'drop': ['ALL']})
    context.setdefault('seccompProfile', {'type': 'RuntimeDefault'})


def _apply_to_user_container(container: dict) -> None:
    """applyUserContainerSecurityContext: as above without runAsNonRoot."""
    if container is None:
        return
    context = container.get('securityContext')
    if context is None:
        container['securityContext'] = {'allowPrivilegeEscalation': False,
                                        'capabilities': {'drop': ['ALL']},
                                        'seccompProfile': {'type': 'RuntimeDefault'}}
        return
    context.setdefault('allowPrivilegeEscalation', False)
    context.setdefault('capabilities', {'drop': ['ALL']})
    context.setdefault('seccompProfile', {'type': 'RuntimeDefault'})


def apply_security_context_to_template(template: dict) -> None:
    """applySecurityContextToTemplate: applyPodSecurityDefaults, then every container."""
    pod = template.setdefault('securityContext', {})
    pod.setdefault('runAsNonRoot', True)
    pod.setdefault('seccompProfile', {'type': 'RuntimeDefault'})
    _apply_to_container(template.get('container'))
    for container in template.get('initContainers', []) + template.get('sidecars', []):
        _apply_to_container(container)


def apply_security_context_to_executor_template(template: dict) -> None:
    """applySecurityContextToExecutorTemplate with no admin defaults (DefaultRunAsUser etc.
    nil): only the seccomp profile on the pod and the user container, since user images may
    run as root; the launcher init container gets the full context."""
    template.setdefault('securityContext', {}).setdefault('seccompProfile',
                                                          {'type': 'RuntimeDefault'})
    _apply_to_user_container(template.get('container'))
    for container in template.get('initContainers', []):
        _apply_to_container(container)
    for container in template.get('sidecars', []):
        _apply_to_user_container(container)


# ---- the templates
def _driver_args(driver_type: str, pipeline_name: str, display_name: str) -> List[str]:
    """The head both driver templates' args share (dag.go addDAGDriverTemplate, container.go
    addContainerDriverTemplate): the run, then the task's parameters."""
    return ['--type', driver_type,
            '--pipeline_name', pipeline_name,
            '--run_id', '{{workflow.uid}}',  # argo.go runID: the API server puts the run id
            '--run_name', '{{workflow.name}}',
            '--run_display_name', display_name,
            '--pipeline_job_create_time_utc', '{{workflow.creationTimestamp}}',
            '--dag_execution_id', input_value('parent-dag-id'),
            '--component', input_value('component'),
            '--task', input_value('task'),
            '--task_name', input_value('task-name')]


def _driver_template(config: ServerConfig, name: str, args: List[str], env: list, inputs: list,
                     outputs: list) -> dict:
    """What both driver templates are: the driver image with its resources, the runtime role,
    the full security context."""
    container = {'name': '', 'image': config.driver_image, 'command': config.driver_command,
                 'args': args, 'resources': copy.deepcopy(DRIVER_RESOURCES)}
    if env:  # a nil slice is left out
        container['env'] = env
    template = new_template(name, inputs={'parameters': inputs},
                            outputs={'parameters': outputs}, container=container)
    set_runtime_role(template, 'driver')
    apply_security_context_to_template(template)
    return template


def dag_driver_template(config: ServerConfig, pipeline_name: str, display_name: str,
                        cache_disabled: bool = False, ml_pipeline_tls: bool = False) -> dict:
    """dag.go addDAGDriverTemplate: `system-dag-driver` (env: the proxy variables only)."""
    args = _driver_args(input_value('driver-type'), pipeline_name, display_name) + [
        '--runtime_config', input_value('runtime-config'),
        '--iteration_index', input_value('iteration-index'),
        '--execution_id_path', output_path('execution-id'),
        '--iteration_count_path', output_path('iteration-count'),
        '--condition_path', output_path('condition')]
    args += config.server_args(cache_disabled, ml_pipeline_tls)
    return _driver_template(
        config, 'system-dag-driver', args, config.proxy_env(),
        inputs=[{'name': 'component'},
                {'name': 'runtime-config', 'default': ''},
                {'name': 'task', 'default': ''},
                {'name': 'task-name', 'default': ''},
                {'name': 'parent-dag-id', 'default': '0'},
                {'name': 'iteration-index', 'default': '-1'},
                {'name': 'driver-type', 'default': 'DAG'}],
        outputs=[{'name': 'execution-id', 'valueFrom': {'path': '/tmp/outputs/execution-id'}},
                 {'name': 'iteration-count',
                  'valueFrom': {'path': '/tmp/outputs/iteration-count', 'default': '0'}},
                 {'name': 'condition',
                  'valueFrom': {'path': '/tmp/outputs/condition', 'default': 'true'}}])


def container_driver_template(config: ServerConfig, pipeline_name: str, display_name: str,
                              cache_disabled: bool = False, ml_pipeline_tls: bool = False
                              ) -> dict:
    """container.go addContainerDriverTemplate: `system-container-driver`. The driver writes
    the pod spec patch, the cache decision and the condition to files Argo reads as outputs."""
    args = _driver_args('CONTAINER', pipeline_name, display_name) + [
        '--container', input_value('container'),
        '--iteration_index', input_value('iteration-index'),
        '--cached_decision_path', output_path('cached-decision'),
        '--pod_spec_patch_path', output_path('pod-spec-patch'),
        '--condition_path', output_path('condition'),
        '--kubernetes_config', input_value('kubernetes-config')]
    args += config.server_args(cache_disabled, ml_pipeline_tls)
    return _driver_template(
        config, 'system-container-driver', args,
        config.proxy_env() + copy.deepcopy(COMMON_ENVS),
        inputs=[{'name': 'component'}, {'name': 'task'}, {'name': 'container'},
                {'name': 'task-name'}, {'name': 'parent-dag-id'},
                {'name': 'iteration-index', 'default': '-1'},
                {'name': 'kubernetes-config', 'default': ''}],
        outputs=[{'name': 'pod-spec-patch',
                  'valueFrom': {'path': '/tmp/outputs/pod-spec-patch', 'default': ''}},
                 {'name': 'cached-decision', 'default': 'false',
                  'valueFrom': {'path': '/tmp/outputs/cached-decision', 'default': 'false'}},
                 {'name': 'condition',
                  'valueFrom': {'path': '/tmp/outputs/condition', 'default': 'true'}}])


# argo.go: the retry parameters a task with a retry policy passes to its executor templates.
RETRY_PARAMS = ('retry-max-count', 'retry-backoff-duration', 'retry-backoff-factor',
                'retry-backoff-max-duration')


def pod_metadata_parameters(pod_metadata, with_values: bool) -> list:
    """container.go getPodMetadataParameters / formatPodMetadataParameters: annotations then
    labels, each by sorted key, as pod-metadata-{annotation,label}-{key,val} parameters
    (numbered -1, -2, ... when there are several), with their values or names only."""
    parameters = []
    if pod_metadata is None:
        return parameters
    for entries, kind in ((pod_metadata.annotations, 'annotation'),
                          (pod_metadata.labels, 'label')):
        for count, key in enumerate(sorted(entries), 1):
            suffix = f'-{count}' if len(entries) > 1 else ''
            names = (f'pod-metadata-{kind}-key{suffix}', f'pod-metadata-{kind}-val{suffix}')
            if with_values:
                parameters += [{'name': names[0], 'value': key},
                               {'name': names[1], 'value': entries[key]}]
            else:
                parameters += [{'name': names[0]}, {'name': names[1]}]
    return parameters


def container_executor_templates(config: ServerConfig, cache_disabled: bool = False,
                                 retry: bool = False, pod_metadata=None) -> list:
    """container.go addContainerExecutorTemplate: `system-container-executor` (a DAG that
    runs the pod unless the driver found a cache hit, so a cached task still counts as
    Succeeded downstream) and `system-container-impl` (the pod: the launcher copies itself into
    /kfp-launcher in an init container; the main container is a placeholder the driver's pod
    spec patch replaces). With a retry policy (`retry`) they are `retry-system-container-*`:
    the retry parameters pass through (addParameterDefault "0", addParameterInputPath) to the
    pod's retryStrategy, and the launcher learns its attempt from KFP_RETRY_INDEX
    (`{{retries}}`, valid only in a template with a retryStrategy). With pod metadata,
    `metadata-<annotations>-<labels>-` templates take its keys and values as parameters and put
    them on the pod (extendPodMetadata; the template's own keys win)."""
    prefix = 'retry-' if retry else ''
    if pod_metadata is not None:
        prefix = (f'metadata-{len(pod_metadata.annotations)}-{len(pod_metadata.labels)}-'
                  + prefix)
    retry_names = RETRY_PARAMS if retry else ()
    metadata_names = [p['name'] for p in pod_metadata_parameters(pod_metadata, False)]
    executor = new_template(
        f'{prefix}system-container-executor',
        inputs={'parameters': [{'name': 'pod-spec-patch'},
                               {'name': 'cached-decision', 'default': 'false'}]
                + [{'name': n} for n in metadata_names]
                + [{'name': n, 'default': '0'} for n in retry_names]},
        dag={'tasks': [{'name': 'executor', 'template': f'{prefix}system-container-impl',
                        'arguments': {'parameters': [
                            {'name': 'pod-spec-patch', 'value': input_value('pod-spec-patch')}]
                            + [{'name': n, 'value': input_value(n)}
                               for n in metadata_names + list(retry_names)]},
                        'when': input_value('cached-decision') + ' != true'}]})
    args = ['--copy', KFP_LAUNCHER_PATH]
    if cache_disabled:
        args.append('--cache_disabled')
    args += config.log_args()
    impl = new_template(
        f'{prefix}system-container-impl',
        inputs={'parameters': [{'name': 'pod-spec-patch'}]
                + [{'name': n} for n in metadata_names + list(retry_names)]},
        podSpecPatch=input_value('pod-spec-patch'),
        volumes=[{'name': name, 'emptyDir': {}} for name, _ in SCRATCH_VOLUMES],
        initContainers=[{'name': 'kfp-launcher', 'image': config.launcher_image,
                         'command': config.launcher_command, 'args': args,
                         'volumeMounts': [{'name': 'kfp-launcher',
                                           'mountPath': VOLUME_PATH_KFP_LAUNCHER}],
                         'resources': copy.deepcopy(LAUNCHER_RESOURCES)}],
        container={'name': '', 'image': 'gcr.io/ml-pipeline/should-be-overridden-during-runtime',
                   'command': ['should-be-overridden-during-runtime'],
                   'volumeMounts': [{'name': name, 'mountPath': path}
                                    for name, path in SCRATCH_VOLUMES],
                   'envFrom': [copy.deepcopy(METADATA_ENV_FROM)],
                   'env': copy.deepcopy(COMMON_ENVS),
                   'resources': {}})
    set_runtime_role(impl, 'launcher')
    apply_security_context_to_executor_template(impl)
    if retry:  # getTaskRetryStrategyFromInput
        impl['retryStrategy'] = {'limit': input_value('retry-max-count'), 'backoff': {
            'duration': input_value('retry-backoff-duration'),
            'factor': input_value('retry-backoff-factor'),
            'maxDuration': input_value('retry-backoff-max-duration')}}
        impl['container']['env'].append({'name': 'KFP_RETRY_INDEX', 'value': '{{retries}}'})
    if pod_metadata is not None:  # extendPodMetadata
        for entries, kind, field in ((pod_metadata.labels, 'label', 'labels'),
                                     (pod_metadata.annotations, 'annotation', 'annotations')):
            if not entries:
                continue
            placed = impl['metadata'].setdefault(field, {})
            for count in range(1, len(entries) + 1):
                suffix = f'-{count}' if len(entries) > 1 else ''
                key = input_value(f'pod-metadata-{kind}-key{suffix}')
                if key not in placed:
                    placed[key] = input_value(f'pod-metadata-{kind}-val{suffix}')
    return [executor, impl]


def importer_template(config: ServerConfig, pipeline_name: str, cache_disabled: bool = False,
                      ml_pipeline_tls: bool = False) -> dict:
    """importer.go addImporterTemplate (no download to a workspace): `system-importer`, the
    launcher in importer mode, which is its own driver."""
    args = ['--executor_type', 'importer',
            '--task_spec', input_value('task'),
            '--component_spec', input_value('component'),
            '--importer_spec', input_value('importer'),
            '--pipeline_name', pipeline_name,
            '--run_id', '{{workflow.uid}}',
            '--parent_dag_id', input_value('parent-dag-id'),
            '--pod_name', '$(KFP_POD_NAME)',  # component.EnvPodName, from commonEnvs
            '--pod_uid', '$(KFP_POD_UID)',
            '--mlmd_server_address', config.mlmd_address,
            '--mlmd_server_port', config.mlmd_port]
    args += config.optional_args(cache_disabled, ml_pipeline_tls)
    template = new_template(
        'system-importer',
        inputs={'parameters': [{'name': 'task'}, {'name': 'component'}, {'name': 'importer'},
                               {'name': 'parent-dag-id'}]},
        container={'name': '', 'image': config.launcher_image,
                   'command': config.launcher_command, 'args': args,
                   'envFrom': [copy.deepcopy(METADATA_ENV_FROM)],
                   'env': copy.deepcopy(COMMON_ENVS),
                   'resources': copy.deepcopy(DRIVER_RESOURCES)})
    set_runtime_role(template, 'launcher')
    apply_security_context_to_template(template)
    return template


def importer_task(name: str, task: str, component: str, importer: str,
                  parent_dag_id: str) -> dict:
    """importer.go importerTask. dag.go task gives it no `depends`: an importer waits for
    nothing, whatever its dependentTasks say."""
    return {'name': name, 'template': 'system-importer', 'arguments': {'parameters': [
        {'name': 'task', 'value': task}, {'name': 'component', 'value': component},
        {'name': 'importer', 'value': importer},
        {'name': 'parent-dag-id', 'value': parent_dag_id}]}}


def container_driver_task(name: str, component: str, task: str, container: str,
                          task_name: str, parent_dag_id: str, iteration_index: str,
                          kubernetes_config: str) -> dict:
    """container.go containerDriverTask."""
    parameters = [{'name': 'component', 'value': component}, {'name': 'task', 'value': task},
                  {'name': 'container', 'value': container},
                  {'name': 'task-name', 'value': task_name},
                  {'name': 'parent-dag-id', 'value': parent_dag_id}]
    if iteration_index:
        parameters.append({'name': 'iteration-index', 'value': iteration_index})
    if kubernetes_config:
        parameters.append({'name': 'kubernetes-config', 'value': kubernetes_config})
    return {'name': name, 'template': 'system-container-driver',
            'arguments': {'parameters': parameters}}


def container_executor_task(name: str, driver_task: str, retry_policy=None,
                            pod_metadata=None) -> dict:
    """container.go containerExecutorTask (its condition and exit hook the caller adds): the
    driver's pod spec patch and cache decision, the pod metadata's keys and values, and with a
    retry policy its values (getTaskRetryParametersWithValues: the durations only when set)."""
    parameters = [{'name': 'pod-spec-patch',
                   'value': task_output_parameter(driver_task, 'pod-spec-patch')},
                  {'name': 'cached-decision', 'default': 'false',
                   'value': task_output_parameter(driver_task, 'cached-decision')}]
    parameters += pod_metadata_parameters(pod_metadata, True)
    prefix = ''
    if retry_policy is not None:
        prefix = 'retry-'
        parameters.append({'name': 'retry-max-count',
                           'value': str(retry_policy.max_retry_count)})
        if retry_policy.HasField('backoff_duration'):
            parameters.append({'name': 'retry-backoff-duration',
                               'value': str(retry_policy.backoff_duration.seconds)})
        parameters.append({'name': 'retry-backoff-factor',
                           'value': kfp_go_json.sprint_float(retry_policy.backoff_factor)})
        if retry_policy.HasField('backoff_max_duration'):
            parameters.append({'name': 'retry-backoff-max-duration',
                               'value': str(retry_policy.backoff_max_duration.seconds)})
    return {'name': name, 'template': f'{prefix}system-container-executor',
            'arguments': {'parameters': parameters}}  # (the caller names the template)
