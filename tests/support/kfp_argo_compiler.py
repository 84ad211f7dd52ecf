"""KFP 2.17.0's backend compiler as the API server runs it for a run, transcribed: the upload
(a PipelineSpec and its kubernetes PlatformSpec) in, the Argo Workflow the server would create
out, as the dict its JSON decodes to. Test support only; the real Argo runs the
Workflow on the real cluster (real_kfp.py), since KFP's own compiler cannot be built in CI.

    workflow = compile_run('pipeline.spec.yaml', 's3://bucket/root', run_id='0b5f...')

Sources (kubeflow/pipelines tag 2.17.0, commit 4a3592cb): backend/src/apiserver/template/
v2_template.go (NewV2SpecTemplate, RunWorkflow, validatePipelineJobInputs) and template.go
(modelToPipelineJobRuntimeConfig, setDefaultServiceAccount), backend/src/common/util/
parameter_formatter.go and workflow.go (the Workflow edits RunWorkflow makes),
backend/src/v2/compiler/visitor.go (Accept: the traversal), backend/src/v2/compiler/
argocompiler/argo.go (Compile, the workflow arguments, hashComponentContainer) and dag.go (DAG,
task, dagDriverTask, addImplicitDependencies, depends); the templates are in
kfp_argo_templates.py, Go's text encodings in kfp_go_json.py. The upload's parse is
fake_kfp_rules.parse_template (template.go New), shared with the fake API server.

What KFP refuses is refused with its message (CompileError: the text Go's err.Error() gives,
and the gRPC code the server answers with). What is not transcribed raises NotImplementedError
naming the Go function: workspaces, COMPILED_PIPELINE_SPEC_PATCH, CA bundles, the admin's
default security contexts, Go time layouts in parameters. Known gaps, each also a
NotImplementedError where detectable: the installed kfp-pipeline-spec 0.6.0 / kfp-kubernetes
1.5.0 protos predate some 2.17 fields (NEWER_FIELDS); where Go iterates a map (implicit
dependencies, several bad parameters) the order is random there and sorted here; YAML is read
by PyYAML (YAML 1.1), not gopkg.in/yaml.v3.
"""
import datetime
import hashlib
import json
import os
import re
from typing import Dict, Mapping, Optional, Union

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

import fake_kfp_rules
import kfp_argo_templates as templates
import kfp_go_json

# Fields of 2.17.0's protos the installed Python ones lack (found by comparing
# api/v2alpha1/go/pipelinespec/pipeline_spec.pb.go and kubernetes_executor_config.pb.go with
# kfp-pipeline-spec 0.6.0 / kfp-kubernetes 1.5.0), by message and JSON name, and the enum value
# ParameterType.TASK_CONFIG: KFP accepts them, this transcription cannot read them, so a spec
# using one is refused as not transcribed rather than as invalid.
_PIPELINE_CONFIG = {'workspace', 'resourceTtlOnCompletion', 'resourceTtlOnSuccess',
                    'resourceTtlOnFailure', 'activeDeadlineSeconds'}
NEWER_FIELDS = {
    'ml_pipelines.ComponentSpec': {'taskConfigPassthroughs'},
    'ml_pipelines.ComponentInputsSpec.ParameterSpec': {'literals'},
    'ml_pipelines.PipelineDeploymentConfig.ImporterSpec': {'downloadToWorkspace'},
    'ml_pipelines.RuntimeArtifact': {'customPath'},
    'ml_pipelines.PipelineConfig': _PIPELINE_CONFIG,
    'ml_pipelines.ParameterType.ParameterTypeEnum': {'TASK_CONFIG'},
    'kfp_kubernetes.KubernetesExecutorConfig': {'securityContext'},
    'kfp_kubernetes.SecretAsEnv': {'optional'},
    'kfp_kubernetes.ConfigMapAsEnv': {'optional'},
    'kfp_kubernetes.PvcMount': {'subPath'},
    'kfp_kubernetes.CreatePvc': {'dataSource'},
    'kfp_kubernetes.NodeAffinityTerm': {'nodeAffinityJson'}}


def refuse_newer_field(error: json_format.ParseError, what: str) -> None:
    """NotImplementedError when json_format refused only a field (or enum value) of 2.17.0's
    protos the installed ones lack (NEWER_FIELDS); protojson accepts either spelling of a
    field, so the proto name counts too."""
    text = str(error)
    found = (re.search(r'Message type "([\w.]+)" has no field named "(\w+)"', text)
             or re.search(r'Invalid enum value (\w+) for enum type ([\w.]+)', text))
    if not found:
        return
    message, field = found.groups() if 'Message type' in found.group(0) else reversed(
        found.groups())
    camel = re.sub(r'_([a-z])', lambda m: m.group(1).upper(), field)
    if camel in NEWER_FIELDS.get(message, ()):
        raise NotImplementedError(f'{message}.{field}: a field of KFP 2.17.0\'s {what} the '
                                  f'installed protos lack ({text.splitlines()[0]})')


ROOT = 'root'  # visitor.go RootComponentName
EXIT_STRATEGY = 'ALL_UPSTREAM_TASKS_COMPLETED'


class CompileError(Exception):
    """KFP refused the run. `message` is Go's err.Error() (what handcompile prints after
    `template:` or `compile:`), `code` the gRPC code the API server answers with."""

    def __init__(self, message: str, code: str = 'Internal'):
        super().__init__(message)
        self.message, self.code = message, code

    def wrap(self, prefix: str) -> 'CompileError':
        """util.Wrap / fmt.Errorf("%s: %w"): the chain grows, the code stays."""
        return CompileError(f'{prefix}: {self.message}', self.code)


def protojson_error(error: json_format.ParseError) -> str:
    """protojson's wording of a strict parse's unknown field (`proto: (line 1:2): unknown field
    "x"`) for json_format's; the position is left out, other causes keep Python's text."""
    found = re.search(r'has no field named "([^"]+)"', str(error))
    return f'proto: unknown field "{found.group(1)}"' if found else str(error)


def _invalid_input(message: str) -> CompileError:
    """util.NewInvalidInputError: internal text `Invalid input error: <message>`."""
    return CompileError(f'Invalid input error: {message}', 'InvalidArgument')


def _invalid_spec(details: str, platform: bool = False) -> CompileError:
    """util.NewInvalidInputErrorWithDetails(ErrorInvalidPipelineSpec / PlatformSpec, ...)."""
    kind = 'platform spec is invalid' if platform else 'pipeline spec is invalid'
    return CompileError(f'InvalidInputError: {details}: {kind}', 'InvalidArgument')


# ---- entry point
def compile_run(upload: Union[str, bytes, os.PathLike], root: str, run_id: str,
                params: Union[None, str, Mapping] = None, name: Optional[str] = None,
                namespace: str = 'kubeflow', service_account: str = '', run_at: int = 0,
                scheduled_at: int = 0, server_env: Optional[Mapping[str, str]] = None,
                cache_disabled: bool = False) -> dict:
    """template.go New + v2_template.go RunWorkflow, as resource_manager.go CreateRun calls
    them: `upload` a file path or the upload's text; `root` the run's pipeline root
    (runtime_config.pipeline_root); `params` its parameters (a dict or their JSON; none: `{}`);
    `name` its display name (none: `run`, handcompile's default); `run_at`
    the creation time in epoch seconds (RunWorkflowOptions.RunAt; the by-hand handcompile
    passes 0), `scheduled_at` ScheduledAtInSec (0: not scheduled); `server_env` the API
    server's configuration and environment (kfp_argo_templates.ServerConfig; none: a default
    install); `cache_disabled` TemplateOptions.CacheDisabled. Returns the Workflow as a dict."""
    data = _read_upload(upload)
    spec, platform = parse_upload(data)
    config = templates.ServerConfig(server_env)
    if isinstance(params, Mapping):
        params = json.dumps(params)
    return run_workflow(spec, platform, root, run_id, params if params is not None else '{}',
                        'run' if name is None else name, namespace, service_account, run_at,
                        scheduled_at, config, cache_disabled)


def _read_upload(upload) -> bytes:
    if isinstance(upload, bytes):
        return upload
    text = os.fspath(upload)
    if '\n' not in text and (os.path.exists(text) or text.endswith(('.yaml', '.yml', '.json'))):
        with open(text, 'rb') as handle:  # a missing upload file is FileNotFoundError
            return handle.read()
    return text.encode()


def parse_upload(data: bytes):
    """template.go New -> NewV2SpecTemplate: (PipelineSpec, PlatformSpec or None) messages.
    An upload that is not YAML never gets an answer from KFP 2.17.0: template.go isV2Spec
    loops on yaml.v3's decoder, which repeats its error (seen with the real code: it spins until
    killed); here it is refused, saying so."""
    try:
        list(yaml.safe_load_all(data))
    except yaml.YAMLError as error:
        raise CompileError(f'the upload is not YAML ({error}); KFP 2.17.0 does not answer this '
                           '(template.go isV2Spec loops forever on a decode error)',
                           'InvalidArgument') from None
    _refuse_newer_fields(data)
    try:
        spec_doc, platform_doc = fake_kfp_rules.parse_template(data)
    except fake_kfp_rules.KfpError as error:
        raise _invalid_spec(error.external,
                            platform='platform spec' in error.external) from None
    spec = json_format.ParseDict(spec_doc, pipeline_spec_pb2.PipelineSpec())
    platform = None
    if platform_doc is not None:
        platform = json_format.ParseDict(platform_doc, pipeline_spec_pb2.PlatformSpec())
    return spec, platform


def _refuse_newer_fields(data: bytes) -> None:
    """NotImplementedError for a document the installed protos cannot read only because it
    uses a field of 2.17.0's (NEWER_FIELDS)."""
    for document in [d for d in yaml.safe_load_all(data) if isinstance(d, dict)]:
        message = (pipeline_spec_pb2.PlatformSpec() if 'platforms' in document
                   else pipeline_spec_pb2.PipelineSpec())
        try:
            json_format.ParseDict(document, message)
        except json_format.ParseError as error:
            refuse_newer_field(error, message.DESCRIPTOR.name)


# ---- v2_template.go RunWorkflow
def run_workflow(spec, platform, root: str, run_id: str, params_json: str, display_name: str,
                 namespace: str, service_account: str, run_at: int, scheduled_at: int,
                 config: templates.ServerConfig, cache_disabled: bool = False) -> dict:
    """v2_template.go RunWorkflow."""
    job = pipeline_spec_pb2.PipelineJob(display_name=display_name)
    job.runtime_config.CopyFrom(runtime_config(params_json, root))
    values = job.runtime_config.parameter_values
    if len(values) > 0:
        formatter = ParameterFormatter(run_id, scheduled_at if scheduled_at > 0 else -1,
                                       run_at, -1)
        for key in list(values):
            value = values[key]
            if value.WhichOneof('kind') == 'string_value' and value.string_value:
                values[key].string_value = formatter.format(value.string_value)
    try:
        validate_pipeline_job_inputs(spec, job.runtime_config)
    except CompileError as error:
        raise error.wrap('invalid pipeline job inputs') from None
    kubernetes = None
    if platform is not None and 'kubernetes' in platform.platforms:
        kubernetes = platform.platforms['kubernetes']
    try:
        workflow = Compiler(job, spec, kubernetes, config, cache_disabled).compile()
    except CompileError as error:
        raise error.wrap('Failed to compile job') from None
    if namespace:  # SetExecutionNamespace
        workflow['metadata']['namespace'] = namespace
    set_default_service_account(workflow, service_account, config)
    for template in workflow['spec']['templates']:  # SetAnnotationsToAllTemplatesIfKeyNotExist
        template['metadata'].setdefault('annotations', {}).setdefault(
            'sidecar.istio.io/inject', 'false')
    workflow['metadata'].setdefault('labels', {})['pipeline/runid'] = run_id  # SetLabels
    workflow['metadata'].setdefault('annotations', {})[
        'pipelines.kubeflow.org/run_name'] = display_name  # SetAnnotations
    workflow = replace_uid(workflow, run_id)
    pod_metadata = workflow['spec'].setdefault('podMetadata', {})  # SetPodMetadataLabels
    pod_metadata.setdefault('labels', {})['pipeline/runid'] = run_id
    return workflow


def runtime_config(params_json: str, root: str):
    """template.go modelToPipelineJobRuntimeConfig: the parameters' JSON, each value a
    structpb.Value (json.Unmarshal through protojson), and the pipeline root."""
    config = pipeline_spec_pb2.PipelineJob.RuntimeConfig(gcs_output_directory=root)
    if params_json:
        try:
            parameters = json.loads(params_json)
        except ValueError as error:  # (Python's decoder words the cause otherwise)
            raise CompileError(
                'InternalServerError: Failed to convert to PipelineJob RuntimeConfig: '
                f'InternalServerError: error unmarshalling model runtime config parameters: '
                f'{error}') from None
        for name, value in (parameters or {}).items():
            json_format.ParseDict(value, config.parameter_values[name])
    return config


def set_default_service_account(workflow: dict, service_account: str,
                                config: templates.ServerConfig) -> None:
    """template.go setDefaultServiceAccount: the run's account, else keep the compiled one
    unless it is empty or the SDK default `pipeline-runner`."""
    spec = workflow['spec']
    if service_account:
        spec['serviceAccountName'] = service_account
        return
    if spec.get('serviceAccountName', '') in ('', 'pipeline-runner'):
        spec['serviceAccountName'] = config.service_account


def replace_uid(workflow: dict, run_id: str) -> dict:
    """workflow.go ReplaceUID: `{{workflow.uid}}` replaced by the run id in the Workflow's JSON
    text, which is then decoded again."""
    text = json.dumps(workflow, ensure_ascii=False).replace('{{workflow.uid}}', run_id)
    try:
        return json.loads(text)
    except ValueError as error:
        raise CompileError(f'Failed to unmarshal workflow spec manifest: {error}')


_PARAMETER_TYPES = pipeline_spec_pb2.ParameterType


def validate_pipeline_job_inputs(spec, runtime_config) -> None:
    """v2_template.go validatePipelineJobInputs: every required root parameter given (or
    optional, or defaulted), of its declared type; nothing extra. Go walks maps in random
    order, so with several faults its message names any one; here the first by name."""
    required = spec.root.input_definitions.parameters
    given = runtime_config.parameter_values
    kinds = {_PARAMETER_TYPES.NUMBER_DOUBLE: ('number_value', 'double or integer', 'number'),
             _PARAMETER_TYPES.NUMBER_INTEGER: ('number_value', 'double or integer', 'number'),
             _PARAMETER_TYPES.STRING: ('string_value', 'string', 'string'),
             _PARAMETER_TYPES.BOOLEAN: ('bool_value', 'bool', 'bool'),
             _PARAMETER_TYPES.LIST: ('list_value', 'list', 'list'),
             _PARAMETER_TYPES.STRUCT: ('struct_value', 'struct', 'struct')}
    for name in sorted(required):
        param = required[name]
        if name not in given:
            if not param.is_optional and not param.HasField('default_value'):
                raise _invalid_input(f'parameter {name} is not optional, yet has neither '
                                     'default value nor user provided value')
            continue
        kind = param.parameter_type
        if kind == _PARAMETER_TYPES.PARAMETER_TYPE_ENUM_UNSPECIFIED:
            raise _invalid_input(f'input parameter {name} has unspecified type')
        if kind == _PARAMETER_TYPES.TASK_FINAL_STATUS:
            raise _invalid_input(f'input parameter {name} requires type TASK_FINAL_STATUS, '
                                 'which is invalid for root component')
        if kind not in kinds:
            raise _invalid_input(f'input parameter {name} requires type unknown')
        field, wanted, short = kinds[kind]
        if given[name].WhichOneof('kind') != field:
            if short == 'number':
                raise _invalid_input(f'input parameter {name} requires type double or integer, '
                                     'but the parameter value is not of number value type')
            if short in ('string', 'list', 'struct'):
                raise _invalid_input(f'input parameter {name} requires type {wanted}, but the '
                                     f'input parameter is not of {short} value type')
            raise _invalid_input(f'input parameter {name} requires type bool, but the input '
                                 'parameter is not of bool value type')
    extra = sorted(name for name in given if name not in required)
    if extra:
        raise _invalid_input('parameter(s) provided are not required by pipeline: '
                             + ', '.join(extra))


class ParameterFormatter:
    """common/util/parameter_formatter.go ParameterFormatter (NewSWFParameterFormatter): run
    macros in string parameters. A field of -1 is disabled and its macro kept as written."""

    _MACRO = re.compile(r'\[\[(.*?)\]\]|\{\{\$\.(.*?)\}\}')
    # lestrrat-go/strftime verbs that print as Python's do for a UTC time (and %s, the
    # WithUnixSeconds option); others are not transcribed.
    _STRFTIME = set('YmdHMSyjFT%')

    def __init__(self, run_uuid: str, scheduled_epoch: int, now_epoch: int, index: int):
        self.run_uuid, self.scheduled, self.now, self.index = (run_uuid, scheduled_epoch,
                                                               now_epoch, index)

    def format(self, text: str) -> str:
        """Format: each match replaced once, in order."""
        result = text
        for match in self._MACRO.finditer(text):
            whole = match.group(0)
            result = result.replace(whole, self._substitute(whole), 1)
        return result

    def _substitute(self, match: str) -> str:
        """createSubstitutes."""
        if self.run_uuid and match.startswith('[[RunUUID]]'):
            return self.run_uuid
        if self.scheduled != -1 and match.startswith('[[ScheduledTime]]'):
            return _utc(self.scheduled).strftime('%Y%m%d%H%M%S')  # "20060102150405"
        if self.now != -1 and match.startswith('[[CurrentTime]]'):
            return _utc(self.now).strftime('%Y%m%d%H%M%S')
        if self.index != -1 and match.startswith('[[Index]]'):
            return str(self.index)
        for epoch, prefix in ((self.scheduled, '[[ScheduledTime.'),
                              (self.now, '[[CurrentTime.')):
            if epoch != -1 and match.startswith(prefix):
                raise NotImplementedError(f'parameter_formatter.go createSubstitutes: the Go '
                                          f'time layout in {match} is not transcribed')
        for epoch, prefix in ((self.scheduled, "{{$.scheduledTime.strftime('"),
                              (self.now, "{{$.currentTime.strftime('")):
            if epoch != -1 and match.startswith(prefix):
                layout = match[len(prefix):].replace("')}}", '', 1)
                verbs = set(re.findall(r'%(.)', layout))
                if not verbs <= self._STRFTIME | {'s'}:
                    raise NotImplementedError(f'parameter_formatter.go createSubstitutes: '
                                              f'strftime verbs {sorted(verbs)} in {match}')
                return _utc(epoch).strftime(layout.replace('%s', str(epoch)))
        return match


def _utc(epoch: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)


# ---- argocompiler: argo.go Compile, visitor.go Accept, dag.go
def depends(deps) -> str:
    """dag.go depends: enhanced depends, every upstream Succeeded (a Skipped one must not let
    its dependants run, which plain `dependencies` would)."""
    return ' && '.join(f'{dep}.Succeeded' for dep in deps)


def add_implicit_dependencies(dag) -> None:
    """dag.go addImplicitDependencies: the producer of every task-output input joins the
    task's dependentTasks (appended when missing). Go ranges over the inputs maps (random
    order); here by input name."""
    for task_name in dag.tasks:
        task = dag.tasks[task_name]
        producers = []
        for name in sorted(task.inputs.parameters):
            spec = task.inputs.parameters[name]
            if spec.WhichOneof('kind') == 'task_output_parameter':
                producers.append(spec.task_output_parameter.producer_task)
        for name in sorted(task.inputs.artifacts):
            spec = task.inputs.artifacts[name]
            if spec.WhichOneof('kind') == 'task_output_artifact':
                producers.append(spec.task_output_artifact.producer_task)
        for producer in producers:
            if producer not in dag.tasks:
                raise CompileError(f'failed to add implicit deps: unknown producer task '
                                   f'"{producer}" in DAG')
            if producer not in task.dependent_tasks:
                task.dependent_tasks.append(producer)


def _is_exit_task(task) -> bool:
    """An exit handler's task: triggerPolicy.strategy ALL_UPSTREAM_TASKS_COMPLETED."""
    return pipeline_spec_pb2.PipelineTaskSpec.TriggerPolicy.TriggerStrategy.Name(
        task.trigger_policy.strategy) == EXIT_STRATEGY


def add_exit_task(task: dict, exit_template: str, parent_dag_id: str) -> None:
    """common.go addExitTask: the exit lifecycle hook running the exit handler's template."""
    if exit_template:
        task['hooks'] = {'exit': {'template': exit_template, 'arguments': {'parameters': [
            {'name': 'parent-dag-id', 'value': parent_dag_id}]}}}


class TaskInputs:
    """dag.go taskInputs: the parent DAG's execution (a placeholder), and for an iteration its
    index and the loop's task name, for a task an exit handler follows its template."""

    def __init__(self, parent_dag_id: str, iteration_index: str = '', task_name: str = '',
                 exit_template: str = ''):
        self.parent_dag_id, self.iteration_index = parent_dag_id, iteration_index
        self.task_name, self.exit_template = task_name, exit_template


class Compiler:
    """argo.go workflowCompiler with the visitor.go traversal driving it."""

    def __init__(self, job, spec, kubernetes, config: templates.ServerConfig,
                 cache_disabled: bool = False):
        self.job, self.config, self.cache_disabled = job, config, cache_disabled
        # Compile clones the job; GetPipelineSpec / GetDeploymentConfig re-read the spec
        # through protojson (the deployment spec with unknown fields discarded).
        self.spec = pipeline_spec_pb2.PipelineSpec()
        self.spec.CopyFrom(spec)
        self.deploy = pipeline_spec_pb2.PipelineDeploymentConfig()
        json_format.ParseDict(kfp_go_json.proto_dict(spec.deployment_spec), self.deploy,
                              ignore_unknown_fields=True)
        self.executors = self.deploy.executors
        self.kubernetes = kubernetes
        self.templates: Dict[str, dict] = {}
        self.workflow = None

    # argo.go Compile
    def compile(self) -> dict:
        runtime = self.job.runtime_config
        name = self.spec.pipeline_info.name
        if not name:
            raise CompileError('pipelineInfo.name is empty')
        # Root parameters' defaults (or null when optional) join the runtime config.
        for param_name, param in self.spec.root.input_definitions.parameters.items():
            if param_name not in runtime.parameter_values:
                if param.HasField('default_value'):
                    runtime.parameter_values[param_name].CopyFrom(param.default_value)
                elif param.is_optional:
                    runtime.parameter_values[param_name].null_value = 0
        # The pipelineConfig's workspace (GetWorkspacePVC), TTL strategy and active deadline
        # are fields the installed PipelineConfig lacks: refused in parse_upload.
        security = {'runAsNonRoot': True, 'seccompProfile': {'type': 'RuntimeDefault'}}
        if self.config.run_as_user is not None:
            security['runAsUser'] = self.config.run_as_user
        self.workflow = {
            'kind': 'Workflow', 'apiVersion': 'argoproj.io/v1alpha1',
            'metadata': {'generateName': name.split('/')[-1] + '-'},  # retrieveLastValidString
            'spec': {'templates': [], 'entrypoint': 'entrypoint',
                     'arguments': {'parameters': []},
                     'serviceAccountName': self.config.service_account,
                     'securityContext': security,
                     'podMetadata': {
                         'annotations': {'pipelines.kubeflow.org/v2_component': 'true'},
                         'labels': {'pipelines.kubeflow.org/v2_component': 'true'}}},
            # wfv1.WorkflowStatus's two metav1.Time fields print as null when unset.
            'status': {'startedAt': None, 'finishedAt': None}}
        self._visited = set()
        self._dfs(ROOT, self.spec.root, None)
        if not self.workflow['spec']['arguments']['parameters']:
            self.workflow['spec']['arguments'] = {}
        return self.workflow

    # visitor.go pipelineDFS.dfs
    def _dfs(self, name: str, component, component_task) -> None:
        if name in self._visited:
            return
        self._visited.add(name)

        def component_error(message: str) -> CompileError:
            return CompileError(f'error processing component name="{name}": {message}')

        label = component.executor_label
        if label:
            if label not in self.deploy.executors:
                raise component_error(f'executor(label="{label}") not found in deployment '
                                      'config')
            executors = (self.kubernetes.deployment_spec.executors
                         if self.kubernetes is not None else {})
            if label in executors:  # AddKubernetesSpec
                self._save_argument('kubernetes-' + name, kfp_go_json.dumps(
                    kfp_go_json.proto_dict(executors[label])))
            executor = self.deploy.executors[label]
            # container.go Container / importer.go Importer: saveComponentSpec, then
            # saveComponentImpl of the container or importer spec.
            kind = executor.WhichOneof('spec')
            if kind in ('container', 'importer'):
                self._save_argument('components-' + self._hash(name),
                                    kfp_go_json.stably_marshal_json(component))
                self._save_argument('implementations-' + self._hash(name),
                                    kfp_go_json.stably_marshal_json(getattr(executor, kind)))
                return
            raise component_error(f'executor(label="{label}"): non-container and '
                                  'non-importer executor not implemented')
        if not component.HasField('dag'):
            raise component_error(f'unknown component implementation: {component}')
        for key in sorted(component.dag.tasks):
            task = component.dag.tasks[key]
            ref = task.component_ref.name
            if not ref:
                raise component_error(f'component ref name is empty for task '
                                      f'name="{task.task_info.name}"')
            if ref not in self.spec.components:
                raise component_error(f'cannot find component ref name="{ref}"')
            if not task.HasField('retry_policy') and component_task is not None \
                    and component_task.HasField('retry_policy'):
                task.retry_policy.CopyFrom(component_task.retry_policy)
            self._dfs(ref, self.spec.components[ref], task)
        try:
            self._dag(name, component, component.dag)
        except CompileError as error:
            raise error.wrap(f'compiling DAG "{name}"') from None

    # argo.go saveProtoToArguments / argumentsPlaceholder / hashComponentContainer
    def _save_argument(self, key: str, value: str) -> None:
        parameters = self.workflow['spec']['arguments']['parameters']
        if not any(p['name'] == key for p in parameters):  # the first one saved stays
            parameters.append({'name': key, 'value': value})

    def _placeholder(self, key: str) -> str:
        if not any(p['name'] == key for p in self.workflow['spec']['arguments']['parameters']):
            raise CompileError(f'using component spec: failed to find workflow parameter '
                               f'"{key}"')
        return templates.workflow_parameter(key)

    def _hash(self, component_name: str) -> str:
        """hashComponentContainer: a container component's arguments are keyed by the sha256 of
        encoding/json of its PipelineContainerSpec struct (so components with the same
        container share them); others by their name."""
        if component_name == ROOT:
            return component_name
        label = self.spec.components[component_name].executor_label \
            if component_name in self.spec.components else ''
        if label in self.executors and self.executors[label].HasField('container'):
            text = kfp_go_json.go_struct_json(self.executors[label].container)
            return hashlib.sha256(text.encode()).hexdigest()
        return component_name

    def _add_template(self, template: dict) -> None:
        """argo.go addTemplate."""
        if template['name'] in self.templates:
            raise CompileError(f'template name="{template["name"]}": template already exists')
        self.templates[template['name']] = template
        self.workflow['spec']['templates'].append(template)

    def _system_template(self, name: str, build) -> str:
        """The add*Template functions: built once, on first use, in that order."""
        if name not in self.templates:
            for template in build():
                self.templates[template['name']] = template
                self.workflow['spec']['templates'].append(template)
        return name

    def _display(self):
        return (self.spec.pipeline_info.name, self.job.display_name, self.cache_disabled)

    def _dag_driver_template(self) -> str:
        name, display, cache = self._display()
        return self._system_template('system-dag-driver', lambda: [
            templates.dag_driver_template(self.config, name, display, cache)])

    def _container_driver_template(self) -> str:
        name, display, cache = self._display()
        return self._system_template('system-container-driver', lambda: [
            templates.container_driver_template(self.config, name, display, cache)])

    def _importer_template(self) -> str:
        name, _, cache = self._display()
        return self._system_template('system-importer', lambda: [
            templates.importer_template(self.config, name, cache)])

    def _container_executor_template(self, retry: bool, pod_metadata) -> str:
        """The executor templates' names say what they take: `retry-` for a retry policy,
        `metadata-<annotations>-<labels>-` for pod metadata (Argo cannot patch a pod's
        metadata, so each count gets its own templates)."""
        name = ('retry-' if retry else '') + 'system-container-executor'
        if pod_metadata is not None:
            name = (f'metadata-{len(pod_metadata.annotations)}-{len(pod_metadata.labels)}-'
                    + name)
        return self._system_template(name, lambda: templates.container_executor_templates(
            self.config, self.cache_disabled, retry, pod_metadata))

    # dag.go DAG
    def _dag(self, name: str, component, dag) -> None:
        add_implicit_dependencies(dag)
        self._save_argument('components-' + self._hash(name),
                            kfp_go_json.stably_marshal_json(component))
        keys = sorted(dag.tasks)
        exit_templates = {}  # task -> the exit-hook template its exit task runs after it
        # Exit tasks first: each becomes a template of its own, run as the exit lifecycle hook
        # of the tasks it depends on.
        for key in keys:
            task = dag.tasks[key]
            if task.HasField('parameter_iterator') and task.HasField('artifact_iterator'):
                raise CompileError(f'invalid task "{key}": parameterIterator and '
                                   'artifactIterator cannot be specified at the same time')
            if task.HasField('artifact_iterator'):
                raise CompileError('artifact iterator not implemented yet')
            if not _is_exit_task(task):
                continue
            hook_tasks = self._task(key, task, TaskInputs(templates.input_value('parent-dag-id')))
            hook_name = f'exit-hook-{name}-{key}'
            for dep in task.dependent_tasks:
                exit_templates[dep] = hook_name
            try:
                self._add_template(templates.new_template(
                    hook_name, inputs={'parameters': [{'name': 'parent-dag-id'}]},
                    dag={'tasks': hook_tasks}))
            except CompileError as error:
                raise error.wrap('DAG') from None
        tasks = []
        for key in keys:
            if not _is_exit_task(dag.tasks[key]):
                tasks += self._task(key, dag.tasks[key], TaskInputs(
                    templates.input_value('parent-dag-id'),
                    exit_template=exit_templates.get(key, '')))
        if not tasks:
            raise CompileError(f'DAG {name} must contain one or more non-exit tasks')
        try:
            self._add_template(templates.new_template(
                name, inputs={'parameters': [{'name': 'parent-dag-id'}]}, dag={'tasks': tasks}))
        except CompileError as error:
            raise error.wrap('DAG') from None
        if name == ROOT:
            driver = self._dag_driver_task(f'{name}-driver', component=self._placeholder(
                'components-root'), runtime_config=self.job.runtime_config)
            root_task = self._dag_task('root', name, templates.task_output_parameter(
                f'{name}-driver', 'execution-id'), condition='')
            root_task['depends'] = depends([f'{name}-driver'])
            self._add_template(templates.new_template('entrypoint',
                                                      dag={'tasks': [driver, root_task]}))

    def _dag_task(self, name: str, component_name: str, parent_dag_id: str, condition: str,
                  exit_template: str = '', hook_parent_dag_id: str = '') -> dict:
        """dag.go dagTask."""
        task = {'name': name, 'template': component_name, 'arguments': {'parameters': [
            {'name': 'parent-dag-id', 'value': parent_dag_id},
            {'name': 'condition', 'value': condition}]}}
        add_exit_task(task, exit_template, hook_parent_dag_id)
        return task

    def _dag_driver_task(self, name: str, component: str, parent_dag_id: str = '',
                         runtime_config=None, task: str = '', task_name: str = '',
                         iteration_index: str = '') -> dict:
        """dag.go dagDriverTask."""
        parameters = [{'name': 'component', 'value': component}]
        if iteration_index:
            parameters.append({'name': 'iteration-index', 'value': iteration_index})
        if parent_dag_id:
            parameters.append({'name': 'parent-dag-id', 'value': parent_dag_id})
        if runtime_config is not None:
            parameters += [{'name': 'runtime-config',
                            'value': kfp_go_json.stably_marshal_json(runtime_config)},
                           {'name': 'driver-type', 'value': 'ROOT_DAG'}]
        if task:
            parameters.append({'name': 'task', 'value': task})
        if task_name:
            parameters.append({'name': 'task-name', 'value': task_name})
        return {'name': name, 'template': self._dag_driver_template(),
                'arguments': {'parameters': parameters}}

    # dag.go task
    def _task(self, name: str, task, inputs: 'TaskInputs') -> list:
        try:
            return self._task_unwrapped(name, task, inputs)
        except CompileError as error:
            raise error.wrap(f'compiling task "{name}"') from None

    def _task_unwrapped(self, name: str, task, inputs: 'TaskInputs') -> list:
        component_name = task.component_ref.name
        if component_name not in self.spec.components:
            raise CompileError(f'component spec for "{component_name}" not found')
        component = self.spec.components[component_name]
        component_placeholder = self._placeholder('components-' + self._hash(component_name))
        task_json = kfp_go_json.stably_marshal_json(task)
        if not inputs.iteration_index and (task.HasField('parameter_iterator')
                                           or task.HasField('artifact_iterator')):
            try:
                return self._iterator_task(name, task, task_json, inputs.parent_dag_id)
            except CompileError as error:
                raise error.wrap('iterator task') from None
        # triggerPolicy.condition: the driver evaluates it and writes `condition`; the task
        # behind the driver runs `when` it is not false.
        condition = task.trigger_policy.condition
        task_name = inputs.task_name or name
        driver_name = f'{name}-driver'
        # Iterations belong to a sub-DAG, and an exit task waits for nothing: no depends.
        driver_depends = (depends(task.dependent_tasks)
                          if not inputs.iteration_index and not _is_exit_task(task) else '')
        if component.HasField('dag'):
            driver = self._dag_driver_task(driver_name, component_placeholder,
                                           parent_dag_id=inputs.parent_dag_id, task=task_json,
                                           task_name=task_name,
                                           iteration_index=inputs.iteration_index)
            if driver_depends:
                driver['depends'] = driver_depends
            sub_dag = self._dag_task(
                name, component_name,
                templates.task_output_parameter(driver_name, 'execution-id'),
                templates.task_output_parameter(driver_name, 'condition'),
                inputs.exit_template, inputs.parent_dag_id)
            sub_dag['depends'] = depends([driver_name])
            if condition:
                sub_dag['when'] = templates.task_output_parameter(driver_name, 'condition') \
                    + ' != false'
            return [driver, sub_dag]
        label = component.executor_label
        if not label:
            raise CompileError('unsupported component implementation kind: <nil>')
        if label not in self.executors:
            raise CompileError(f'executor with label "{label}" not found')
        executor = self.executors[label]
        kind = executor.WhichOneof('spec')
        if kind == 'importer':
            if condition:  # one container runs both the driver and the importer
                raise CompileError('triggerPolicy.condition on importer task is not supported')
            task_dict = templates.importer_task(
                name, task_json, component_placeholder,
                self._placeholder('implementations-' + self._hash(component_name)),
                inputs.parent_dag_id)
            task_dict['template'] = self._importer_template()
            return [task_dict]
        if kind == 'resolver':
            raise CompileError('resolver executors not implemented')
        if kind == 'custom_job':
            raise CompileError("custom job executors is Google Cloud only, it's not supported")
        if kind != 'container':
            raise CompileError(f'unknown executor spec type: {kind}')
        container_placeholder = self._placeholder('implementations-'
                                                  + self._hash(component_name))
        kubernetes_key = 'kubernetes-' + component_name
        kubernetes_placeholder = ''
        if any(p['name'] == kubernetes_key
               for p in self.workflow['spec']['arguments']['parameters']):
            kubernetes_placeholder = templates.workflow_parameter(kubernetes_key)
        driver = templates.container_driver_task(
            driver_name, component_placeholder, task_json, container_placeholder, task_name,
            inputs.parent_dag_id, inputs.iteration_index, kubernetes_placeholder)
        driver['template'] = self._container_driver_template()
        if driver_depends:
            driver['depends'] = driver_depends
        if executor.container.image in ('argostub/createpvc', 'argostub/deletepvc'):
            # argo.go dummyImages: a task for Kubernetes configs only (kfp-kubernetes'
            # CreatePVC/DeletePVC): the driver does it, under the task's name; no launcher.
            driver['name'] = name
            return [driver]
        try:
            kubernetes_config = self._kubernetes_config(kubernetes_key)
        except CompileError as error:
            raise CompileError(f'error creating executor for "{name}": {error.message}')
        retry = task.retry_policy if task.HasField('retry_policy') else None
        pod_metadata = (kubernetes_config.pod_metadata if kubernetes_config is not None
                        and kubernetes_config.HasField('pod_metadata') else None)
        executor_task = templates.container_executor_task(name, driver_name, retry,
                                                          pod_metadata)
        executor_task['template'] = self._container_executor_template(retry is not None,
                                                                      pod_metadata)
        if condition:
            executor_task['when'] = templates.task_output_parameter(driver_name, 'condition') \
                + ' != false'
        add_exit_task(executor_task, inputs.exit_template, inputs.parent_dag_id)
        executor_task['depends'] = depends([driver_name])
        return [driver, executor_task]

    def _iterator_task(self, name: str, task, task_json: str, parent_dag_id: str) -> list:
        """dag.go iteratorTask: a loop template `<component>-<task>-iterator` holding
        iterationItemTask's driver (which counts the items) and the iterations, a withSequence
        over that count, each iteration `<component>-iteration` with its index."""
        component_name = task.component_ref.name
        try:
            iteration = self._iteration_item_tasks(task, task_json, parent_dag_id, name)
        except CompileError as error:
            raise error.wrap('iterationItem task') from None
        loop = templates.new_template(f'{component_name}-{name}-iterator',
                                      inputs={'parameters': [{'name': 'parent-dag-id'}]},
                                      dag={'tasks': iteration})
        if task.iterator_policy.parallelism_limit > 0:
            loop['parallelism'] = task.iterator_policy.parallelism_limit
        self._add_template(loop)
        loop_task = {'name': name, 'template': loop['name'],
                     'arguments': {'parameters': [{'name': 'parent-dag-id',
                                                   'value': parent_dag_id}]}}
        if task.dependent_tasks:
            loop_task['depends'] = depends(task.dependent_tasks)
        return [loop_task]

    def _iteration_item_tasks(self, task, task_json: str, parent_dag_id: str,
                              parallel_for_task: str) -> list:
        """dag.go iterationItemTask."""
        component_name = task.component_ref.name
        driver = self._dag_driver_task(
            'iteration-driver', self._placeholder('components-' + self._hash(component_name)),
            parent_dag_id=parent_dag_id, task=task_json, task_name=parallel_for_task)
        items = self._task('iteration-item', task, TaskInputs(
            templates.input_value('parent-dag-id'),
            iteration_index=templates.input_value('iteration-index'),
            task_name=parallel_for_task))
        iterations = templates.new_template(
            f'{component_name}-iteration',
            inputs={'parameters': [{'name': 'parent-dag-id'}, {'name': 'iteration-index'}]},
            dag={'tasks': items})
        self._add_template(iterations)
        iterations_task = {
            'name': 'iteration-iterations', 'template': iterations['name'],
            'depends': depends(['iteration-driver']),
            'arguments': {'parameters': [
                {'name': 'parent-dag-id', 'value': templates.task_output_parameter(
                    'iteration-driver', 'execution-id')},
                {'name': 'iteration-index', 'value': '{{item}}'}]},  # argo.go loopItem
            'withSequence': {'count': templates.task_output_parameter(
                'iteration-driver', 'iteration-count')}}
        if task.trigger_policy.condition:
            iterations_task['when'] = templates.task_output_parameter(
                'iteration-driver', 'condition') + ' != false'
        return [driver, iterations_task]

    def _kubernetes_config(self, key: str):
        """container.go containerExecutorTask: the kubernetes config argument read strictly
        as a KubernetesExecutorConfig (protojson.Unmarshal); None without one."""
        from kfp.kubernetes import kubernetes_executor_config_pb2 as k8s_pb
        for parameter in self.workflow['spec']['arguments']['parameters']:
            if parameter['name'] != key:
                continue
            config = k8s_pb.KubernetesExecutorConfig()
            try:
                json_format.Parse(parameter['value'], config)
            except json_format.ParseError as error:
                refuse_newer_field(error, 'KubernetesExecutorConfig')
                raise CompileError(f'failed to unmarshal kubernetes config: '
                                   f'{protojson_error(error)}')
            return config
        return None


def main(argv=None) -> int:
    """The flags of the by-hand `handcompile` (template.New + RunWorkflow): prints the
    Workflow's JSON, or `template:`/`compile:` and KFP's message with exit status 1."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument('--upload', required=True, help='pipeline.spec.yaml as uploaded')
    parser.add_argument('--root', default='', help="run's pipeline root")
    parser.add_argument('--params', default='{}', help='runtime parameters JSON')
    parser.add_argument('--run_id', default='run-1', help='run id')
    parser.add_argument('--name', default='run', help='run display name')
    args = parser.parse_args(argv)
    with open(args.upload, 'rb') as handle:
        data = handle.read()
    try:
        spec, platform = parse_upload(data)
    except CompileError as error:
        print('template:', error.message, file=sys.stderr)
        return 1
    try:
        workflow = run_workflow(spec, platform, args.root, args.run_id, args.params, args.name,
                                'kubeflow', '', 0, 0, templates.ServerConfig(os.environ))
    except CompileError as error:
        print('compile:', error.message, file=sys.stderr)
        return 1
    print(json.dumps(workflow))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
