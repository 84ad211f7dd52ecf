"""Open-source KFP's container driver, transcribed: a task's inputs, its output URIs, its cache key.

Each function follows one function of kubeflow/pipelines (master, VERSION 2.17.0), named in its
docstring, and fails with that function's message (DriverError). kfp_launcher.py calls them in
the order driver/container.go Container() does. Test support only (no TFX imports).
"""
import hashlib
import json
import os
import uuid
from typing import Dict, Optional

from google.protobuf import json_format, struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2

import kfp_mlmd
import kfp_objectstore

_TYPE = pipeline_spec_pb2.ParameterType
_KIND_TYPES = {'string_value': ('string', (_TYPE.STRING,)),
               'number_value': ('number', (_TYPE.NUMBER_DOUBLE, _TYPE.NUMBER_INTEGER)),
               'bool_value': ('bool', (_TYPE.BOOLEAN,)),
               'list_value': ('list', (_TYPE.LIST,)),
               # (and TASK_CONFIG, which the installed kfp-pipeline-spec predates)
               'struct_value': ('struct', (_TYPE.STRUCT, _TYPE.TASK_FINAL_STATUS))}


class DriverError(RuntimeError):
    """driver.Container() failed; the message is KFP's."""


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
        if spec.component_input_parameter not in opts['root_inputs']:
            raise param_error('parent DAG does not have input parameter '
                              + spec.component_input_parameter)
        return opts['root_inputs'][spec.component_input_parameter]
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
    placeholders = {'{{$.pipeline_job_name}}': opts['run_display_name'],
                    '{{$.pipeline_job_resource_name}}': opts['run_name'],
                    '{{$.pipeline_job_uuid}}': opts['run_id'],
                    '{{$.pipeline_task_name}}': opts['task_name'],
                    '{{$.pipeline_task_uuid}}': str(opts['dag_execution_id'])}
    if text in placeholders:
        return struct_pb2.Value(string_value=placeholders[text])
    return constant


def _go_type(prefix: str, kind: str) -> str:
    camel = ''.join(p.capitalize() for p in (kind or 'nil').split('_'))
    return f'*pipelinespec.{prefix}_{camel}'


def check_parameter_types(inputs, definitions) -> None:
    """resolve.go: resolveInputs() handleParamTypeValidationAndConversion(): a missing non-optional
    parameter without default fails; a STRING parameter takes any value as text
    (metadata.PbValueToText); any other type must match the value's kind."""
    for name, spec in definitions.parameters.items():
        if name not in inputs.parameter_values:
            if not spec.is_optional and not spec.HasField('default_value'):
                raise DriverError('neither value nor default value provided for non-optional '
                                  f'parameter "{name}"')
            continue
        value = inputs.parameter_values[name]
        kind = value.WhichOneof('kind')
        if spec.parameter_type == _TYPE.STRING:
            if kind != 'string_value':
                inputs.parameter_values[name].CopyFrom(
                    struct_pb2.Value(string_value=pb_value_to_text(value)))
            continue
        if kind == 'null_value':
            raise DriverError(f'got null for input parameter "{name}"')
        actual, allowed = _KIND_TYPES[kind]
        if spec.parameter_type not in allowed:
            raise DriverError(f'input parameter "{name}" type mismatch: expect '
                              f'{_TYPE.ParameterTypeEnum.Name(spec.parameter_type)}, got {actual}')


def pb_value_to_text(value: struct_pb2.Value) -> str:
    """converter.go: PbValueToText(): numbers without a trailing .0, bools lower case, lists and
    structs as compact JSON."""
    kind = value.WhichOneof('kind')
    if kind == 'number_value':
        number = value.number_value
        return str(int(number)) if number == int(number) else repr(number)
    if kind == 'bool_value':
        return 'true' if value.bool_value else 'false'
    if kind in ('list_value', 'struct_value'):
        return json.dumps(json_format.MessageToDict(value), separators=(',', ':'))
    return value.string_value if kind == 'string_value' else ''


def generate_output_uri(root: str, *paths: str) -> str:
    """metadata/client.go: GenerateOutputURI(): the root without trailing "/", then the paths
    joined (the query string, if any, is dropped for outputs)."""
    return root.split('?')[0].rstrip('/') + '/' + os.path.normpath('/'.join(paths))


def provision_outputs(run_root: str, task_name: str, outputs_spec, publish_logs: bool,
                      pod) -> pipeline_spec_pb2.ExecutorInput.Outputs:
    """driver.go: provisionOutputs(): every declared artifact (plus `executor-logs`, typed
    system.Artifact, when publish_logs is on) at <run root>/<task>/<uuid>/<key>, named after its
    key; output parameters to /tmp/kfp/outputs/<name>; the executor output file in the pod's
    local copy of the task root (component.LocalPathForURI), never uploaded."""
    outputs = pipeline_spec_pb2.ExecutorInput.Outputs()
    artifacts = dict(outputs_spec.artifacts)
    if publish_logs:
        artifacts['executor-logs'] = pipeline_spec_pb2.ComponentOutputsSpec.ArtifactSpec(
            artifact_type=pipeline_spec_pb2.ArtifactTypeSchema(schema_title='system.Artifact'))
    task_root = generate_output_uri(run_root, task_name, str(uuid.uuid4()))
    for name, spec in artifacts.items():
        artifact = outputs.artifacts[name].artifacts.add(
            name=name, uri=generate_output_uri(task_root, name))
        artifact.type.CopyFrom(spec.artifact_type)
        if spec.HasField('metadata'):
            artifact.metadata.CopyFrom(spec.metadata)
    for name in outputs_spec.parameters:
        outputs.parameters[name].output_file = pod.path(f'/tmp/kfp/outputs/{name}')
    outputs.output_file = os.path.join(pod.local_path_for_uri(task_root), 'output_metadata.json')
    return outputs


def fingerprint(task, component, container: dict, executor_input) -> str:
    """driver/cache.go: getFingerPrint() (no custom cache key, no PVC) over cacheutils/cache.go:
    GenerateCacheKey() and GenerateFingerPrint(): sha256 of the JSON of the input artifacts'
    names (their MLMD ids), the input parameter values, the outputs with their URIs wiped (name,
    type, metadata), the output parameters' types, the image and the spec's command + args
    (placeholders unresolved)."""
    if task.caching_options.cache_key:
        digest = hashlib.sha256(task.component_ref.name.encode() + b'\0'
                                + task.caching_options.cache_key.encode())
        return digest.hexdigest()
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
    text = json.dumps(key, sort_keys=True, separators=(',', ':'), ensure_ascii=False)
    for char, escaped in (('&', '\\u0026'), ('<', '\\u003c'), ('>', '\\u003e')):
        text = text.replace(char, escaped)  # Go's encoding/json escapes HTML characters
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
    """The task's KubernetesExecutorConfig, or None: compiler/visitor.go dfs() looks the
    executor label up in the platform spec's kubernetes deploymentSpec.executors, and
    argocompiler/spec_patch.go unmarshalKubernetesExecutorConfig parses it strictly (the driver
    gets it as --kubernetes_config). The proto is kfp-kubernetes 1.5.0's (what the lock holds)."""
    from kfp.kubernetes import kubernetes_executor_config_pb2 as k8s_pb
    executors = ((platform_spec or {}).get('platforms', {}).get('kubernetes', {})
                 .get('deploymentSpec', {}).get('executors', {}))
    if executor_label not in executors:
        return None
    config = k8s_pb.KubernetesExecutorConfig()
    try:
        json_format.ParseDict(executors[executor_label], config, ignore_unknown_fields=False)
    except json_format.ParseError as error:
        raise DriverError(f'failed to unmarshal kubernetes spec for component: {error}')
    return config


def pod_env(container: dict, config, resolve) -> list:
    """The user container's env in the pod spec patch, in order: driver.go initPodSpecPatch()
    copies the container spec's env (name and value), then k8s.go extendPodSpecPatch() appends,
    for every secretAsEnv entry and each of its keys, an env var whose value comes from the
    Secret (valueFrom.secretKeyRef {name, key, optional only when set}); the kubelet reads it
    (kfp_launcher_v2.make_environment). The Secret's name: secretNameParameter resolved as an
    input parameter (`resolve`, resolve.go; a null skips the entry), else the deprecated
    secretName, else an error."""
    env = [{'name': e['name'], 'value': e.get('value', '')} for e in container.get('env', [])]
    for secret in (config.secret_as_env if config is not None else ()):
        for key_to_env in secret.key_to_env:
            if secret.HasField('secret_name_parameter'):
                try:
                    value = resolve(secret.secret_name_parameter)
                except DriverError as error:
                    raise DriverError(f'failed to resolve secret name: {error}')
                if value.WhichOneof('kind') == 'null_value':  # ErrResolvedParameterNull
                    continue
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
