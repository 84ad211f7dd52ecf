"""Open-source KFP's container driver, transcribed: a task's inputs, its output URIs, its cache key.

Each function follows one function of kubeflow/pipelines (master, VERSION 2.17.0), named in its
docstring, and fails with that function's message (DriverError). kfp_launcher.py calls them in
the order driver/container.go Container() does. Test support only (no TFX imports).
"""
import hashlib
import json
import os
import posixpath
import re
import uuid
from typing import Dict, Optional

from google.protobuf import json_format, struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2

import kfp_go_json
import kfp_mlmd
import kfp_protojson
import kfp_objectstore

_TYPE = pipeline_spec_pb2.ParameterType
_KIND_TYPES = {'string_value': ('string', (_TYPE.STRING,)),
               'number_value': ('number', (_TYPE.NUMBER_DOUBLE, _TYPE.NUMBER_INTEGER)),
               'bool_value': ('bool', (_TYPE.BOOLEAN,)),
               'list_value': ('list', (_TYPE.LIST,)),
               # (and TASK_CONFIG = 9, which the installed kfp-pipeline-spec predates)
               'struct_value': ('struct', (_TYPE.STRUCT, _TYPE.TASK_FINAL_STATUS, 9))}


class DriverError(RuntimeError):
    """driver.Container() failed; the message is KFP's."""


class ResolvedNull(DriverError):
    """resolve.go: ErrResolvedParameterNull (an optional pipeline input given no value)."""


def go_text(message) -> str:
    """A message as Go's prototext prints it in a %s (`a:{b:"c"}`), for KFP's error texts."""
    parts = []
    for field, value in message.ListFields():
        values = value if field.label == field.LABEL_REPEATED else [value]
        for item in values:
            if field.message_type is not None:
                parts.append(f'{field.name}:{{{go_text(item)}}}')
            else:
                parts.append(f'{field.name}:{json.dumps(item) if isinstance(item, str) else item}')
    return ' '.join(parts)


def check_pipeline_root(root: str, info: str) -> str:
    """objectstore/config.go: ParseBucketPathToConfig(), as driver.RootDAG() applies it: only
    gs://, s3://, minio:// and mem:// roots. A local absolute folder stands for a gs:// bucket
    (see kfp_launcher_v2.py); s3:// and minio:// roots are real buckets (store_session_info);
    gs:// is refused here (no GCS on this machine)."""
    if kfp_objectstore.BUCKET_PATTERN.match(root) is None and os.path.isabs(root):
        return root
    try:
        config = kfp_objectstore.parse_bucket_path_to_config(root)
    except kfp_objectstore.ObjectStoreError as error:
        raise DriverError(f'driver.RootDAG({info}) failed: {error}')
    if config.scheme == 'gs://':
        raise NotImplementedError(f'{root}: no GCS here; give a local folder or an S3 bucket')
    return root


def store_session_info(root: str, info: str) -> Optional[dict]:
    """driver/root_dag.go RootDAG(): the run's store session info (config/env.go
    GetStoreSessionInfo, no kfp-launcher ConfigMap), kept in the run's context for the launcher;
    None for a local folder (the stand-in for gs://)."""
    if os.path.isabs(root):
        return None
    try:
        return kfp_objectstore.store_session_info(root)
    except kfp_objectstore.ObjectStoreError as error:
        raise DriverError(f'driver.RootDAG({info}) failed: {error}')


def resolve_parameter(spec, opts: dict, upstream_outputs) -> struct_pb2.Value:
    """resolve.go: resolveInputParameter(): componentInputParameter from the root DAG's inputs,
    taskOutputParameter from the producer's recorded outputs, runtimeValue only as `constant`
    (with the run-level placeholders); anything else is "not implemented"."""
    def param_error(text):
        return DriverError(f'resolving input parameter with spec {go_text(spec)}: {text}')
    kind = spec.WhichOneof('kind')
    if kind == 'component_input_parameter':
        if not spec.component_input_parameter:
            raise param_error('empty component input')
        if spec.component_input_parameter not in opts['root_inputs']:
            raise param_error('parent DAG does not have input parameter '
                              + spec.component_input_parameter)
        value = opts['root_inputs'][spec.component_input_parameter]
        if value.WhichOneof('kind') == 'null_value':  # ErrResolvedParameterNull
            raise ResolvedNull(f'the resolved input parameter is null: '
                               f'{spec.component_input_parameter}')
        return value
    if kind == 'task_output_parameter':
        output = spec.task_output_parameter
        return upstream_outputs(output.producer_task)[output.output_parameter_key]
    if kind != 'runtime_value':
        go_type = _go_type('TaskInputsSpec_InputParameterSpec', kind)
        raise param_error(f'parameter spec of type {go_type} not implemented yet')
    value_kind = spec.runtime_value.WhichOneof('value')
    if value_kind != 'constant':  # the deprecated constantValue of schema 2.0.0
        raise param_error(f'param runtime value spec of type '
                          f'{_go_type("ValueOrRuntimeParameter", value_kind)} not implemented')
    constant = spec.runtime_value.constant
    text = constant.string_value if constant.WhichOneof('kind') == 'string_value' else ''
    if '{{$.workspace_path}}' in text:  # component.WorkspaceMountPath
        return struct_pb2.Value(string_value=text.replace('{{$.workspace_path}}',
                                                          '/kfp-workspace'))
    placeholders = {'{{$.pipeline_job_name}}': opts['run_display_name'],
                    '{{$.pipeline_job_resource_name}}': opts['run_name'],
                    '{{$.pipeline_job_uuid}}': opts['run_id'],
                    '{{$.pipeline_task_name}}': opts['task_name'],
                    '{{$.pipeline_task_uuid}}': str(opts['dag_execution_id']),
                    '{{$.pipeline_job_create_time_utc}}': opts.get('create_time_utc', ''),
                    '{{$.pipeline_job_schedule_time_utc}}': opts.get('schedule_time_utc', '')}
    if text in placeholders:
        return struct_pb2.Value(string_value=placeholders[text])
    return constant


def _go_type(prefix: str, kind: str) -> str:
    camel = ''.join(p.capitalize() for p in (kind or 'nil').split('_'))
    return f'*pipelinespec.{prefix}_{camel}'


def check_parameter_types(inputs, definitions, nils=()) -> None:
    """resolve.go: resolveInputs() handleParamTypeValidationAndConversion(): an optional
    parameter without a value is skipped; a non-optional one without a value fails unless it has
    a default, and then it is checked with no value at all (KFP's code falls through with a nil
    Value): a STRING parameter becomes "" (metadata.PbValueToText(nil)), any other type fails
    with "unknown protobuf.Value type: <nil>". A STRING parameter takes any value as text
    (PbValueToText); any other type must match the value's kind (a struct also fits
    TASK_FINAL_STATUS and TASK_CONFIG). `nils`: parameters resolved to Go's nil *Value (an
    upstream output its producer never recorded), checked as that nil."""
    for name, spec in definitions.parameters.items():
        has_value = name in inputs.parameter_values or name in nils
        if not has_value:
            if spec.is_optional:
                continue
            if not spec.HasField('default_value'):
                raise DriverError('neither value nor default value provided for non-optional '
                                  f'parameter "{name}"')
        value = inputs.parameter_values[name] if name in inputs.parameter_values else None
        kind = value.WhichOneof('kind') if value is not None else None
        if spec.parameter_type == _TYPE.STRING:
            if kind != 'string_value':
                text = pb_value_to_text(value) if value is not None else ''
                inputs.parameter_values[name].CopyFrom(struct_pb2.Value(string_value=text))
            continue
        if kind is None:
            raise DriverError(f'parameter {name} has unknown protobuf.Value type: <nil>')
        if kind == 'null_value':
            raise DriverError(f'got null for input parameter "{name}"')
        actual, allowed = _KIND_TYPES[kind]
        if spec.parameter_type not in allowed:
            raise DriverError(f'input parameter "{name}" type mismatch: expect '
                              f'{_TYPE.ParameterTypeEnum.Name(spec.parameter_type)}, got {actual}')


def pb_value_to_text(value: struct_pb2.Value) -> str:
    """converter.go: PbValueToText(): numbers by strconv.FormatFloat(x, 'f', -1, 64) (0.00001,
    not 1e-05), bools lower case, lists and structs as json.Marshal writes the message (its
    protojson, compacted, HTML characters escaped), null as ""."""
    kind = value.WhichOneof('kind')
    if kind == 'number_value':
        return kfp_protojson.format_float(value.number_value)
    if kind == 'bool_value':
        return 'true' if value.bool_value else 'false'
    if kind in ('list_value', 'struct_value'):  # protojson sorts a Struct's keys too
        return kfp_go_json.dumps(json_format.MessageToDict(getattr(value, kind)))
    return value.string_value if kind == 'string_value' else ''


def generate_output_uri(root: str, *paths: str, preserve_query: bool = False) -> str:
    """metadata/client.go: GenerateOutputURI(): the root without its query string and trailing
    "/", then path.Join of the paths, then the query string again when preserve_query (the run
    context's pipeline_root) and the root had exactly one "?"."""
    parts = root.split('?')
    query = ''
    if len(parts) == 2:
        root = parts[0]
        if preserve_query:
            query = '?' + parts[1]
    joined = posixpath.normpath('/'.join(p for p in paths if p)) if any(paths) else ''
    return root.rstrip('/') + '/' + joined + query


def provision_outputs(run_root: str, task_name: str, outputs_spec, publish_logs: bool,
                      pod, salt: Optional[str] = None) -> pipeline_spec_pb2.ExecutorInput.Outputs:
    """driver.go: provisionOutputs(): every declared artifact (plus `executor-logs`, typed
    system.Artifact, when publish_logs is on) at <run root>/<task>/<salt: a uuid>/<key>, named
    after its key; output parameters to /tmp/kfp/outputs/<name>; the executor output file in
    the pod's local copy of the task root (component.LocalPathForURI), never uploaded, or
    /tmp/kfp_outputs/output_metadata.json for a root of another scheme. KFP adds
    executor-logs to the component's own map of output artifacts when it has one (Go maps are
    shared), so the component spec the driver hands the launcher lists it too: so does
    `outputs_spec` here."""
    outputs = pipeline_spec_pb2.ExecutorInput.Outputs()
    logs = pipeline_spec_pb2.ComponentOutputsSpec.ArtifactSpec(
        artifact_type=pipeline_spec_pb2.ArtifactTypeSchema(schema_title='system.Artifact'))
    if publish_logs and outputs_spec.artifacts:
        outputs_spec.artifacts['executor-logs'].CopyFrom(logs)
    artifacts = dict(outputs_spec.artifacts)
    if publish_logs:
        artifacts['executor-logs'] = logs
    task_root = generate_output_uri(run_root, task_name, salt or str(uuid.uuid4()))
    for name, spec in artifacts.items():
        artifact = outputs.artifacts[name].artifacts.add(
            name=name, uri=generate_output_uri(task_root, name))
        artifact.type.CopyFrom(spec.artifact_type)
        if spec.HasField('metadata'):
            artifact.metadata.CopyFrom(spec.metadata)
    for name in outputs_spec.parameters:
        outputs.parameters[name].output_file = pod.path(f'/tmp/kfp/outputs/{name}')
    try:
        local_root = pod.local_path_for_uri(task_root)
    except ValueError:  # component.OutputMetadataFilepath
        outputs.output_file = pod.path('/tmp/kfp_outputs/output_metadata.json')
    else:
        outputs.output_file = os.path.join(local_root, 'output_metadata.json')
    return outputs


def fingerprint(task, component, container: dict, executor_input) -> str:
    """driver/cache.go: getFingerPrint() (no custom cache key, no PVC) over cacheutils/cache.go:
    GenerateCacheKey() and GenerateFingerPrint(): sha256 of the JSON of the input artifacts'
    names (their MLMD ids), the input parameter values, the outputs with their URIs wiped (name,
    type, metadata), the output parameters' types, the image and the spec's command + args
    (placeholders unresolved)."""
    inputs, outputs = executor_input.inputs, executor_input.outputs
    key = {
        'inputArtifactNames': {name: {'artifactNames': [a.name for a in artifacts.artifacts]}
                               for name, artifacts in inputs.artifacts.items()},
        'inputParameterValues': {name: json_format.MessageToDict(value)
                                 for name, value in inputs.parameter_values.items()},
        'outputArtifactsSpec': {name: json_format.MessageToDict(
            pipeline_spec_pb2.RuntimeArtifact(name=artifacts.artifacts[0].name,
                                              type=artifacts.artifacts[0].type,
                                              metadata=artifacts.artifacts[0].metadata
                                              if artifacts.artifacts[0].HasField('metadata')
                                              else None))
            for name, artifacts in outputs.artifacts.items() if artifacts.artifacts},
        'outputParametersSpec': {name: _TYPE.ParameterTypeEnum.Name(
            component.output_definitions.parameters[name].parameter_type)
            for name in outputs.parameters},
        'containerSpec': {'image': container['image'],
                          'cmdArgs': container.get('command', []) + container.get('args', [])},
    }
    key = {k: v for k, v in key.items() if v}  # protojson omits empty maps
    # json.Unmarshal into interface{} then json.Marshal: keys sorted, numbers as Go writes
    # float64 (0, not 0.0), HTML characters escaped.
    text = kfp_go_json.dumps(key)
    return hashlib.sha256(text.encode()).hexdigest()


def input_artifact_ids(executor_input) -> Dict[str, list]:
    """metadata/client.go: GenerateExecutionConfig(): every input artifact's name must be its
    MLMD id."""
    ids = {}
    for name, artifacts in executor_input.inputs.artifacts.items():
        for artifact in artifacts.artifacts:
            try:
                ids.setdefault(name, []).append(int(artifact.name))
            except ValueError:
                raise DriverError(f'unable to parse input artifact id from "{artifact.name}"')
    return ids


def cached_outputs(store: kfp_mlmd.Store, executor_input, cached_id: str) -> Optional[dict]:
    """driver/cache.go: reuseCachedOutputs() / collectOutputArtifactMetadataFromCache(): the
    older execution's output parameters and, for every output of this task (executor-logs
    included), the older execution's artifact of that name, by id."""
    old = int(cached_id)
    recorded = store.output_artifacts(old)
    artifacts = {}
    for name, artifacts_list in executor_input.outputs.artifacts.items():
        if not artifacts_list.artifacts:
            continue
        if name not in recorded:
            raise DriverError('failed collect output artifact metadata from cache: unable to '
                              f'find artifact with name {name} in mlmd output artifacts')
        artifacts[name] = recorded[name]
    return {'parameters': store.execution_outputs(old), 'artifacts': artifacts}


def kubernetes_config(platform_spec: Optional[dict], executor_label: str):
    """The task's KubernetesExecutorConfig from the platform spec, or None (see
    parse_kubernetes_config)."""
    executors = ((platform_spec or {}).get('platforms', {}).get('kubernetes', {})
                 .get('deploymentSpec', {}).get('executors', {}))
    if executor_label not in executors:
        return None
    return parse_kubernetes_config(executors[executor_label], discard_unknown=False)


def parse_kubernetes_config(data: dict, discard_unknown: bool):
    """A KubernetesExecutorConfig from its JSON: argocompiler/spec_patch.go
    unmarshalKubernetesExecutorConfig parses strictly; the driver's --kubernetes_config
    (main.go parseExecConfigJson, util.UnmarshalString) discards unknown fields. The proto is
    kfp-kubernetes 1.5.0's (what the lock holds)."""
    from kfp.kubernetes import kubernetes_executor_config_pb2 as k8s_pb
    config = k8s_pb.KubernetesExecutorConfig()
    try:
        json_format.ParseDict(data, config, ignore_unknown_fields=discard_unknown)
    except json_format.ParseError as error:
        raise DriverError(f'failed to unmarshal kubernetes spec for component: {error}')
    return config


def pod_env(container: dict, config, resolve, proxy_env: Optional[list] = None) -> list:
    """The user container's env in the pod spec patch, in order: driver.go initPodSpecPatch()
    copies the container spec's env (name and value), then the proxy variables
    (proxy.GetConfig().GetEnvVars(): http_proxy and HTTP_PROXY, https_proxy and HTTPS_PROXY,
    no_proxy and NO_PROXY, each pair only when set), then k8s.go extendPodSpecPatch() appends,
    for every secretAsEnv entry and each of its keys, an env var whose value comes from the
    Secret (valueFrom.secretKeyRef {name, key, optional only when set}); the kubelet reads it
    (kfp_launcher_v2.make_environment). The Secret's name: secretNameParameter resolved as an
    input parameter (`resolve`, resolve.go resolveInputParameterStr: a null skips the entry,
    anything but a non-empty string fails), else the deprecated secretName, else an error."""
    env = [{'name': e['name'], 'value': e.get('value', '')} for e in container.get('env', [])]
    env.extend(proxy_env or [])
    for secret in (config.secret_as_env if config is not None else ()):
        for key_to_env in secret.key_to_env:
            if secret.HasField('secret_name_parameter'):
                spec = secret.secret_name_parameter
                try:
                    value = resolve(spec)
                except ResolvedNull:
                    continue
                except DriverError as error:
                    raise DriverError(f'failed to resolve secret name: {error}')
                if value.WhichOneof('kind') != 'string_value':
                    raise DriverError(f'failed to resolve secret name: resolving input parameter '
                                      f'with spec {go_text(spec)}. Expected a string but got: '
                                      f'{_go_type("structpb.Value", value.WhichOneof("kind"))}')
                if not value.string_value:
                    raise DriverError(f'failed to resolve secret name: resolving input parameter '
                                      f'with spec {go_text(spec)}. Expected a non-empty string')
                name = value.string_value
            elif secret.secret_name:
                name = secret.secret_name
            else:
                raise DriverError('missing either SecretName or SecretNameParameter for secret '
                                  'environment variable in executor config')
            reference = {'name': name, 'key': key_to_env.secret_key}
            if getattr(secret, 'optional', None) is not None and secret.HasField('optional'):
                reference['optional'] = secret.optional  # (not in kfp-kubernetes 1.5.0's proto)
            env.append({'name': key_to_env.env_var, 'valueFrom': {'secretKeyRef': reference}})
    return env


def proxy_env(http_proxy: str, https_proxy: str, no_proxy: str) -> list:
    """apiserver/config/proxy/config.go: GetEnvVars()."""
    env = []
    for lower, value in (('http_proxy', http_proxy), ('https_proxy', https_proxy),
                         ('no_proxy', no_proxy)):
        if value:
            env += [{'name': lower, 'value': value}, {'name': lower.upper(), 'value': value}]
    return env


_INPUT_PARAMETER = re.compile(r"\{\{\$\.inputs\.parameters\['(.+?)']}}")
_CHANNEL = re.compile(r"\$.inputs.parameters\['(.+?)'\]")


def resolve_pod_spec_runtime_parameter(text: str, executor_input) -> str:
    """resolve.go: resolvePodSpecInputRuntimeParameter(): an input-parameter channel is the
    parameter's string value; anything else as is."""
    match = _CHANNEL.search(text)
    if match is None:
        return text
    values = executor_input.inputs.parameter_values
    if match.group(1) not in values:
        raise DriverError('executorInput did not contain container Image input parameter')
    value = values[match.group(1)]
    return value.string_value if value.WhichOneof('kind') == 'string_value' else ''


def resolve_container_args(args: list, executor_input) -> list:
    """util.go: resolveContainerArgs(): arguments naming "$.outputs" are left for later; input
    parameter placeholders are replaced by their values (pbValueToString); the IfPresent
    clause is not transcribed (refused)."""
    resolved = []
    for arg in args:
        if '$.outputs' in arg:
            resolved.append(arg)
            continue
        if arg.strip().startswith('{"IfPresent":'):
            raise NotImplementedError('util.go resolveCondition (IfPresent arguments) is not '
                                      'transcribed')
        values = executor_input.inputs.parameter_values

        def value_of(match):
            if match.group(1) not in values:
                raise DriverError(f'failed to resolve input parameters: parameter '
                                  f'"{match.group(1)}" not found in executor input')
            return pb_value_to_string(values[match.group(1)])
        resolved.append(_INPUT_PARAMETER.sub(value_of, arg))
    return resolved


def pb_value_to_string(value: struct_pb2.Value) -> str:
    """util.go: pbValueToString(): integral numbers as integers, others %g (Python's repr
    here: the same digits, an exponent from 1e16 where Go's starts at 1e21), lists and
    structs as json.Marshal of their Go values."""
    kind = value.WhichOneof('kind')
    if kind == 'number_value':
        number = value.number_value
        return str(int(number)) if number == int(number) else repr(number)
    if kind in ('list_value', 'struct_value'):
        return kfp_go_json.dumps(json_format.MessageToDict(getattr(value, kind)))
    return pb_value_to_text(value)


_QUANTITY = re.compile(r'^([0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$')
_DECIMAL = {'m': -3, '': 0, 'k': 3, 'M': 6, 'G': 9, 'T': 12, 'P': 15, 'E': 18}
_BINARY = {'Ki': 10, 'Mi': 20, 'Gi': 30, 'Ti': 40, 'Pi': 50, 'Ei': 60}


def quantity(text: str) -> str:
    """k8s.io/apimachinery resource.ParseQuantity(text).String() for whole numbers with an
    optional suffix (canonical form: the largest suffix of the same kind that keeps the number
    whole); other forms (fractions, exponents) are not transcribed."""
    match = _QUANTITY.match(text)
    if match is None:
        raise NotImplementedError(f'resource quantity {text!r}: only whole numbers with a '
                                  'suffix are transcribed')
    number, suffix = int(match.group(1)), match.group(2) or ''
    if number == 0:
        return '0'
    if suffix in _BINARY:
        value = number << _BINARY[suffix]
        for name, shift in sorted(_BINARY.items(), key=lambda item: -item[1]):
            if value % (1 << shift) == 0:
                return f'{value >> shift}{name}'
        return str(value)
    milli = number * 10 ** (_DECIMAL[suffix] + 3)
    for name, exponent in sorted(_DECIMAL.items(), key=lambda item: -item[1]):
        if milli % 10 ** (exponent + 3) == 0:
            return f'{milli // 10 ** (exponent + 3)}{name}'
    return f'{milli}m'


def pod_resources(resources: dict, executor_input) -> dict:
    """driver.go initPodSpecPatch(): ResourceRequirements from getPodResource() (the
    placeholder-capable field first, else the old number: memory "%vG", cpu "%v"); maps with
    no entry are left out (omitempty); accelerators are not transcribed."""
    if resources.get('accelerator'):
        raise NotImplementedError('driver.go initPodSpecPatch: accelerators are not transcribed')
    limits, requests = {}, {}
    for target, key, new, old, unit in (
            (limits, 'memory', 'resourceMemoryLimit', 'memoryLimit', 'G'),
            (requests, 'memory', 'resourceMemoryRequest', 'memoryRequest', 'G'),
            (limits, 'cpu', 'resourceCpuLimit', 'cpuLimit', ''),
            (requests, 'cpu', 'resourceCpuRequest', 'cpuRequest', '')):
        if resources.get(new):
            try:
                text = resolve_pod_spec_runtime_parameter(resources[new], executor_input)
            except DriverError as error:
                raise DriverError(f'failed to init podSpecPatch: failed to resolve executor '
                                  f'input when retrieving pod resource: {error}')
        elif resources.get(old):
            text = pb_value_to_string(struct_pb2.Value(number_value=resources[old])) + unit
        else:
            continue
        target[key] = quantity(text)
    out = {}
    if limits:
        out['limits'] = dict(sorted(limits.items()))
    if requests:
        out['requests'] = dict(sorted(requests.items()))
    return out


def init_pod_spec_patch(container: dict, component, executor_input, execution_id: int,
                        opts: dict, env: list) -> dict:
    """driver.go: initPodSpecPatch(): the "main" container runs the launcher copy
    (/kfp-launcher/launch) with the task's flags, then "--", then the user's command and
    arguments (input parameter placeholders resolved); image (a parameter channel resolved),
    env (pod_env) and resources. The result is a core/v1 PodSpec in Go's field order, written
    with go_json. Modelcar (oci://) inputs and the workspace PVC are not transcribed."""
    for artifacts in executor_input.inputs.artifacts.values():
        for artifact in artifacts.artifacts:
            if artifact.uri.startswith('oci://'):
                raise NotImplementedError('driver.go addModelcarsToPodSpec is not transcribed')
    command = ['/kfp-launcher/launch', '--pipeline_name', opts['pipeline_name'],
               '--run_id', opts['run_id'], '--execution_id', str(execution_id),
               '--executor_input', kfp_protojson.protojson(executor_input),
               '--component_spec', kfp_protojson.protojson(component),
               '--pod_name', '$(KFP_POD_NAME)', '--pod_uid', '$(KFP_POD_UID)',
               '--ml_pipeline_server_address', opts['ml_pipeline_server_address'],
               '--ml_pipeline_server_port', opts['ml_pipeline_server_port'],
               '--mlmd_server_address', opts['mlmd_server_address'],
               '--mlmd_server_port', opts['mlmd_server_port'],
               '--publish_logs', opts['publish_logs']]
    if opts.get('ml_pipeline_tls_enabled'):
        command.append('--ml_pipeline_tls_enabled')
    if opts.get('metadata_tls_enabled'):
        command.append('--metadata_tls_enabled')
    if opts.get('ca_cert_path'):
        command += ['--ca_cert_path', opts['ca_cert_path']]
    if opts.get('cache_disabled'):
        command.append('--cache_disabled')
    if opts.get('log_level', '1') != '1':
        command += ['--log_level', opts['log_level']]
    if opts['publish_logs'] == 'true':  # (a second time: KFP's code adds it twice)
        command += ['--publish_logs', opts['publish_logs']]
    command.append('--')
    try:
        args = (resolve_container_args(container.get('command', []), executor_input)
                + resolve_container_args(container.get('args', []), executor_input))
    except DriverError as error:
        raise DriverError(f'failed to resolve container args: {error}')
    main = {'name': 'main',
            'image': resolve_pod_spec_runtime_parameter(container.get('image', ''),
                                                        executor_input),
            'command': command}
    if args:
        main['args'] = args
    if env:
        main['env'] = env
    main['resources'] = pod_resources(container.get('resources', {}), executor_input)
    return {'containers': [main]}
