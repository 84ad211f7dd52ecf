"""Open-source KFP's launcher (component/launcher_v2.go), transcribed: what happens inside a task's
pod around the user's command.

A task's pod is a folder (Pod): its absolute paths (/gcs/..., /s3/..., /tmp/kfp/...) are rebased
under it. The pipeline root is either
- a local folder standing for a gs:// bucket: a URI here is a local absolute path P, read as
  gs:/P, so component.LocalPathForURI maps it to <pod>/gcs/P, and copies stand for uploads and
  downloads; or
- a real s3:// or minio:// bucket (tests/support/seaweedfs.py): the launcher opens the run's
  bucket (RunStore; kfp_objectstore.py transcribes objectstore/), copies every input artifact
  from it into the pod (downloadArtifacts) and uploads each output's local path
  (uploadOutputArtifacts), refusing a URI outside the run's prefixed bucket (KeyFromURI).
Test support only (no TFX imports).
"""
import dataclasses
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

from google.protobuf import json_format, struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2

import kfp_driver
import kfp_protojson
import kfp_mlmd
import kfp_objectstore
import warm_python

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_TYPE = pipeline_spec_pb2.ParameterType


class LauncherError(RuntimeError):
    """launcher_v2.go: Execute() failed; the message is KFP's, then the pod's log tail."""


@dataclasses.dataclass
class RunStore:
    """The launcher's bucket for a run on an object store: launcher_v2.go Execute() parses the
    run's root (the pipeline context's pipeline_root, <root>/<pipeline>/<run id>) with the run's
    store session info (objectstore.ParseBucketConfig) and opens it (objectstore.OpenBucket);
    `opener` opens the buckets of inputs stored elsewhere (fetchNonDefaultBuckets) and reopens
    the run's for an upload retry."""
    config: kfp_objectstore.Config
    bucket: kfp_objectstore.Bucket
    opener: kfp_objectstore.Opener


class PodStartError(RuntimeError):
    """The kubelet cannot create the task's container (CreateContainerConfigError); the message
    is the kubelet's."""


def make_environment(env: List[dict], secrets: Dict[str, Dict[str, str]],
                     namespace: str) -> Dict[str, str]:
    """What the kubelet makes of the container's env when it creates the container
    (kubernetes pkg/kubelet/kubelet_pods.go makeEnvironmentVariables): a value as is; a
    valueFrom.secretKeyRef read from the Secret in the pod's namespace (`secrets`: name -> data).
    A missing Secret (the secret manager's NotFound: `secret "NAME" not found`) or key
    (`couldn't find key KEY in Secret NS/NAME`) is skipped when the reference is optional, else
    the container is not created: kuberuntime_container.go startContainer reports
    CreateContainerConfigError and the pod stays Pending, retried at each sync, until the Secret
    appears. Here the task fails at once with that message (PodStartError), as a run would
    otherwise wait forever."""
    result = {}
    for var in env:
        reference = var.get('valueFrom', {}).get('secretKeyRef')
        if reference is None:
            result[var['name']] = var.get('value', '')
            continue
        optional = bool(reference.get('optional'))
        data = secrets.get(reference['name'])
        if data is None:
            if optional:
                continue
            raise PodStartError(f'secret "{reference["name"]}" not found')
        if reference['key'] not in data:
            if optional:
                continue
            raise PodStartError(f"couldn't find key {reference['key']} in Secret "
                                f"{namespace}/{reference['name']}")
        result[var['name']] = data[reference['key']]
    return result


class Pod:
    """A task's pod: a folder holding its local file system."""

    def __init__(self, folder: str):
        self.folder = folder  # made when the pod starts (run_command)
        self.log_file = os.path.join(folder, 'pod.log')

    def path(self, absolute: str) -> str:
        return self.folder + absolute

    def local_path_for_uri(self, uri: str) -> str:
        """component.LocalPathForURI() (launcher_v2.go): gs://B/K -> /gcs/B/K, minio://B/K ->
        /minio/B/K, s3://B/K -> /s3/B/K; a local absolute path P stands for gs:/P; any other
        scheme is ValueError with KFP's message (oci:// is not transcribed)."""
        for scheme, folder in (('gs://', '/gcs/'), ('minio://', '/minio/'), ('s3://', '/s3/')):
            if uri.startswith(scheme):
                return self.path(folder + uri[len(scheme):])
        if uri.startswith('/'):
            return self.path('/gcs' + uri)
        raise ValueError(f'failed to generate local path for URI {uri}: unsupported storage '
                         'scheme')

    def log_tail(self) -> str:
        if not os.path.exists(self.log_file):
            return ''
        with open(self.log_file) as log:
            return log.read()[-4000:]


def download_artifacts(executor_input, pod: Pod, remote: Optional[RunStore] = None) -> None:
    """launcher_v2.go: downloadArtifacts() over objectstore.DownloadBlob(): every file under each
    input artifact's URI is copied to its local path before the command runs (all artifacts of
    each list; not those flagged _kfp_workspace). A URI with nothing under it copies nothing.
    With a bucket (remote), from the bucket: _download_from_store."""
    if remote is not None:
        _download_from_store(executor_input, pod, remote)
        return
    for artifacts in executor_input.inputs.artifacts.values():
        for artifact in artifacts.artifacts:
            if artifact.metadata.fields.get('_kfp_workspace', struct_pb2.Value()).bool_value:
                continue
            _copy_blobs(artifact.uri, pod.local_path_for_uri(artifact.uri))


def _q(text: str) -> str:
    return kfp_objectstore._q(text)  # pylint: disable=protected-access  (Go's %q)


def _fetch_non_default_buckets(artifacts, remote: RunStore) -> Dict[str, object]:
    """launcher_v2.go: fetchNonDefaultBuckets(): for the first artifact of each input whose URI
    is not under the run's prefixed bucket (a cached output of another run, an import), its
    bucket opened, keyed by PrefixedBucket() (scheme + bucket: no prefix); the same scheme and
    bucket reuse the run's session info, any other opens from the pod's environment."""
    default, buckets = remote.config, {}
    for name, artifact_list in artifacts.items():
        if not artifact_list.artifacts:
            continue
        artifact = artifact_list.artifacts[0]
        if artifact.uri.startswith('oci://') or \
                artifact.uri.startswith(default.prefixed_bucket()):
            continue
        try:
            config = kfp_objectstore.parse_bucket_config_for_artifact_uri(artifact.uri)
        except kfp_objectstore.ObjectStoreError as error:
            raise LauncherError(f'failed to parse bucketConfig for output artifact {_q(name)} '
                                f'with uri {_q(artifact.uri)}: {error}')
        if config.scheme == default.scheme and config.bucket_name == default.bucket_name:
            config.session_info = default.session_info
        try:
            buckets[config.prefixed_bucket()] = remote.opener.open_bucket(config)
        except kfp_objectstore.ObjectStoreError as error:
            raise LauncherError(f'failed to open bucket for output artifact {_q(name)} with uri '
                                f'{_q(artifact.uri)}: {error}')
    return buckets


def _download_from_store(executor_input, pod: Pod, remote: RunStore) -> None:
    """launcher_v2.go: downloadArtifacts(): each input artifact (every one of each list) not
    flagged _kfp_workspace and with a local path (LocalPathForURI) is copied from its bucket
    (the run's, when its URI is under the run's prefixed bucket, else the one
    fetchNonDefaultBuckets opened) by objectstore.DownloadBlob of its key (KeyFromURI)."""
    artifacts = executor_input.inputs.artifacts
    try:
        others = _fetch_non_default_buckets(artifacts, remote)
    except LauncherError as error:
        raise LauncherError(f'failed to fetch non default buckets: {error}')
    for name, artifact_list in artifacts.items():
        for artifact in artifact_list.artifacts:
            if artifact.metadata.fields.get('_kfp_workspace', struct_pb2.Value()).bool_value:
                continue
            try:
                local = pod.local_path_for_uri(artifact.uri)
            except ValueError:  # "does not have a recognized storage URI": skipped
                continue
            if artifact.uri.startswith('oci://'):
                raise NotImplementedError('oci:// artifacts (Modelcar)')
            bucket, config = remote.bucket, remote.config
            if not artifact.uri.startswith(config.prefixed_bucket()):
                try:
                    config = kfp_objectstore.parse_bucket_config_for_artifact_uri(artifact.uri)
                except kfp_objectstore.ObjectStoreError as error:
                    raise LauncherError(f'failed to parse bucketConfig for output artifact '
                                        f'{_q(name)} with uri {_q(artifact.uri)}: {error}')
                bucket = others.get(config.prefixed_bucket())
                if bucket is None:  # Go wraps the nil error it has at hand
                    raise LauncherError(
                        f'failed to get bucket when downloading input artifact {name} with '
                        f'bucket key {config.prefixed_bucket()}: %!w(<nil>)')
            try:
                kfp_objectstore.download_blob(bucket, local, config.key_from_uri(artifact.uri))
            except kfp_objectstore.ObjectStoreError as error:
                raise LauncherError(f'failed to download input artifact {_q(name)} from remote '
                                    f'storage URI {_q(artifact.uri)}: {error}')


def _copy_blobs(source: str, dest: str) -> None:
    if os.path.isfile(source):
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(source, dest)
    elif os.path.isdir(source):  # object stores hold files only: empty folders vanish
        for folder, _, files in os.walk(source):
            for name in files:
                _copy_blobs(os.path.join(folder, name),
                            os.path.join(dest, os.path.relpath(os.path.join(folder, name), source)))


def prepare_output_folders(executor_input, pod: Pod) -> None:
    """launcher_v2.go: prepareOutputFolders(): the parent folder of each output parameter file
    and of each output artifact's local path."""
    for parameter in executor_input.outputs.parameters.values():
        os.makedirs(os.path.dirname(parameter.output_file), exist_ok=True)
    for artifacts in executor_input.outputs.artifacts.values():
        for artifact in artifacts.artifacts:
            os.makedirs(os.path.dirname(pod.local_path_for_uri(artifact.uri)), exist_ok=True)


def qualify_executor_logs(executor_input, retry_index: str = '0') -> None:
    """launcher_v2.go: qualifyExecutorLogsForRetry() / qualifyExecutorLogsURI(): executor-logs'
    URI gets "-<retry index>" once (KFP_RETRY_INDEX, else the pod's Argo node name, else "0")
    before the placeholders are compiled."""
    logs = executor_input.outputs.artifacts.get('executor-logs')
    suffix = '-' + retry_index
    if logs is not None and len(logs.artifacts) == 1 and logs.artifacts[0].uri and \
            not logs.artifacts[0].uri.endswith(suffix):
        logs.artifacts[0].uri += suffix


def with_default_params(executor_input, component):
    """launcher_v2.go: addDefaultParams(): a copy of the input with each declared parameter's
    default where the driver passed no value; only the command line sees it."""
    copy = pipeline_spec_pb2.ExecutorInput()
    copy.CopyFrom(executor_input)
    for name, spec in component.input_definitions.parameters.items():
        if spec.HasField('default_value') and name not in copy.inputs.parameter_values:
            copy.inputs.parameter_values[name].CopyFrom(spec.default_value)
    return copy


def compile_cmd_and_args(executor_input, pod: Pod, command: List[str], args: List[str]):
    """launcher_v2.go: compileCmdAndArgs() / getPlaceholders(): {{$}} is the ExecutorInput as
    JSON (in the command too); the artifact uri/path, parameter and output-file placeholders
    are replaced in the args only."""
    whole = kfp_protojson.protojson(executor_input)
    placeholders = {}
    for side, lists in (('inputs', executor_input.inputs.artifacts),
                        ('outputs', executor_input.outputs.artifacts)):
        for name, artifacts in lists.items():
            if artifacts.artifacts:
                uri = artifacts.artifacts[0].uri
                placeholders[f"{{{{$.{side}.artifacts['{name}'].uri}}}}"] = uri
                placeholders[f"{{{{$.{side}.artifacts['{name}'].path}}}}"] = \
                    pod.local_path_for_uri(uri)
    for name, value in executor_input.inputs.parameter_values.items():
        placeholders[f"{{{{$.inputs.parameters['{name}']}}}}"] = kfp_driver.pb_value_to_text(value)
    for name, parameter in executor_input.outputs.parameters.items():
        placeholders[f"{{{{$.outputs.parameters['{name}'].output_file}}}}"] = parameter.output_file
    compiled = []
    for arg in args:
        arg = arg.replace('{{$}}', whole)
        for placeholder, value in placeholders.items():
            arg = arg.replace(placeholder, value)
        compiled.append(arg)
    return [c.replace('{{$}}', whole) for c in command], compiled


def run_command(command: List[str], args: List[str], pod: Pod,
                pod_env: Optional[Dict[str, str]] = None) -> None:
    """launcher_v2.go: execute(): the command, its stdout and stderr to the pod's log; a non-zero
    exit fails the task ("exit status N"). `python`, the image's interpreter, is this one; the
    container's environment (make_environment) over this process's, less this process's
    object-store variables (AWS_*, and S3_* that core/storage.py derives): a pod
    has only what the compiled spec and its Secrets give it."""
    assert command[0] == 'python', command
    argv = [sys.executable] + command[1:] + args
    os.makedirs(pod.folder, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(('AWS_', 'S3_'))}
    env.update(PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2', **(pod_env or {}))
    # A child of the warm interpreter (tests/support/warm_python.py: TFX imported once), else a
    # fresh one.
    returncode = warm_python.run(argv[1:], REPO, env, pod.log_file, timeout=900)
    if returncode is None:
        with open(pod.log_file, 'a') as log:
            returncode = subprocess.run(argv, cwd=REPO, env=env, stdout=log,
                                        stderr=subprocess.STDOUT, timeout=900).returncode
    if returncode:
        raise LauncherError(f'exit status {returncode}')


def read_executor_output(path: str) -> pipeline_spec_pb2.ExecutorOutput:
    """launcher_v2.go: getExecutorOutputFile(): none written is an empty output; unknown fields
    fail (protojson.Unmarshal)."""
    output = pipeline_spec_pb2.ExecutorOutput()
    if not os.path.exists(path):
        return output
    with open(path) as handle:
        try:
            json_format.Parse(handle.read(), output, ignore_unknown_fields=False)
        except json_format.ParseError as error:
            raise LauncherError(f'failed to unmarshall ExecutorOutput in file "{path}": {error}')
    return output


def collect_output_parameters(executor_input, output, component) -> None:
    """launcher_v2.go: collectOutputParameters(): a parameter missing from the executor output is
    read from its output file and parsed by its declared type (text_to_pb_value)."""
    for name, parameter in executor_input.outputs.parameters.items():
        if name in output.parameter_values:
            continue
        if name not in component.output_definitions.parameters:
            raise LauncherError(f'failed to find output parameter name="{name}" in component '
                                'spec')
        kind = component.output_definitions.parameters[name].parameter_type
        where = (f'failed to read output parameter name="{name}" type='
                 f'"{_TYPE.ParameterTypeEnum.Name(kind)}" path="{parameter.output_file}"')
        try:
            with open(parameter.output_file) as handle:
                text = handle.read()
        except OSError as error:
            raise LauncherError(f'{where}: open {parameter.output_file}: '
                                f'{(error.strerror or str(error)).lower()}')
        output.parameter_values[name].CopyFrom(text_to_pb_value(text, kind, where))


def text_to_pb_value(text: str, kind, where: str) -> struct_pb2.Value:
    """converter.go: TextToPbValue(): STRING as is; NUMBER_INTEGER strconv.ParseInt (base 10) and
    NUMBER_DOUBLE strconv.ParseFloat of the trimmed text; BOOLEAN strconv.ParseBool; LIST and
    STRUCT JSON that must be of that kind."""
    name = _TYPE.ParameterTypeEnum.Name(kind)

    def failed(reason):
        return LauncherError(f'{where}: TextToPbValue(text={_q(text)}, type="{name}") failed: '
                             f'{reason}')
    value, trimmed = struct_pb2.Value(), text.strip()
    if kind == _TYPE.STRING:
        value.string_value = text
    elif kind == _TYPE.NUMBER_INTEGER:
        if not re.fullmatch(r'[+-]?[0-9]+', trimmed):
            raise failed(f'strconv.ParseInt: parsing {_q(trimmed)}: invalid syntax')
        value.number_value = float(int(trimmed))
    elif kind == _TYPE.NUMBER_DOUBLE:
        try:
            value.number_value = float(trimmed.replace('_', 'x'))
        except ValueError:
            raise failed(f'strconv.ParseFloat: parsing {_q(trimmed)}: invalid syntax')
    elif kind == _TYPE.BOOLEAN:
        flags = {'1': True, 't': True, 'T': True, 'TRUE': True, 'true': True, 'True': True,
                 '0': False, 'f': False, 'F': False, 'FALSE': False, 'false': False,
                 'False': False}
        if trimmed not in flags:
            raise failed(f'strconv.ParseBool: parsing {_q(trimmed)}: invalid syntax')
        value.bool_value = flags[trimmed]
    elif kind in (_TYPE.LIST, _TYPE.STRUCT):
        try:
            json_format.Parse(text, value)
        except json_format.ParseError as error:
            raise failed(str(error))
        if value.WhichOneof('kind') != ('list_value' if kind == _TYPE.LIST else 'struct_value'):
            raise failed('unexpected type')
    else:
        raise failed('unknown type. Expected STRING, NUMBER_INTEGER, NUMBER_DOUBLE, BOOLEAN, '
                     'LIST or STRUCT')
    return value


def merge_runtime_artifacts(src, dst) -> None:
    """launcher_v2.go: mergeRuntimeArtifacts(): from what the executor wrote, only a non-empty
    URI and the metadata fields (merged over the provisioned ones) are kept; its name and type
    are ignored."""
    if src.uri:
        dst.uri = src.uri
    if src.HasField('metadata'):
        for key, value in src.metadata.fields.items():
            dst.metadata.fields[key].CopyFrom(value)
    # (custom_path too, a field newer than the installed kfp-pipeline-spec)


def artifact_schema(artifact_type) -> str:
    """launcher_v2.go: getArtifactSchema()."""
    kind = artifact_type.WhichOneof('kind')
    if kind == 'instance_schema':
        return artifact_type.instance_schema
    if kind == 'schema_title':
        return 'title: ' + artifact_type.schema_title
    raise LauncherError('SchemaUri is unsupported' if kind == 'schema_uri' else
                        f'unknown type {kind} in ArtifactTypeSchema')


def upload_output_artifacts(executor_input, output, pod: Pod, store: kfp_mlmd.Store,
                            succeeded: bool, remote: Optional[RunStore] = None
                            ) -> Dict[str, int]:
    """launcher_v2.go: uploadOutputArtifacts(), tried twice (uploadOutputArtifactsWithRetry,
    the run's bucket reopened before the second try): each output merged with the executor's
    first artifact of that key (executor-logs never), its local path uploaded when it exists (a
    task may write the URI itself), then recorded in ML Metadata; after a failed command only
    executor-logs is recorded. With a bucket (remote): objectstore.UploadBlob to the key of the
    URI in the run's bucket (KeyFromURI: a URI outside the run's prefixed bucket fails the
    task), and the artifact's store_session_info is the run's."""
    error = None
    for attempt in range(2):
        try:
            if attempt and remote is not None:
                remote.bucket = remote.opener.open_bucket(remote.config)
            return _upload_once(executor_input, output, pod, store, succeeded, remote)
        except (kfp_mlmd.MLMDError, LauncherError) as failure:
            error = failure  # artifacts recorded before the failure stay in ML Metadata
        except kfp_objectstore.ObjectStoreError as failure:  # the reopen failed
            error = LauncherError(str(failure))
    raise error


def _upload_to_store(name, artifact, pod, remote: RunStore) -> bool:
    """uploadOutputArtifacts()'s upload step against a bucket; False: not to be recorded (an
    executor-logs without a local path or file)."""
    try:
        local = pod.local_path_for_uri(artifact.uri)
    except ValueError:  # "does not have a recognized storage URI": recorded, not uploaded
        return name != 'executor-logs'
    if artifact.uri.startswith('oci://'):
        return True
    try:
        key = remote.config.key_from_uri(artifact.uri)
    except kfp_objectstore.ObjectStoreError as error:
        raise LauncherError(f'failed to upload output artifact {_q(name)}: {error}')
    try:
        kfp_objectstore.upload_blob(remote.bucket, local, key)
    except FileNotFoundError:  # "We allow components to not produce output files"
        return name != 'executor-logs'
    except kfp_objectstore.ObjectStoreError as error:
        raise LauncherError(f'failed to upload output artifact {_q(name)} to remote storage URI '
                            f'{_q(artifact.uri)}: {error}')
    return True


def _upload_once(executor_input, output, pod, store, succeeded, remote=None) -> Dict[str, int]:
    recorded = {}
    for name, artifacts in executor_input.outputs.artifacts.items():
        if not succeeded and name != 'executor-logs':
            continue
        for artifact in artifacts.artifacts:
            written = output.artifacts.get(name) if output is not None else None
            if name != 'executor-logs' and written is not None and written.artifacts:
                merge_runtime_artifacts(written.artifacts[0], artifact)
            if remote is not None:
                if _upload_to_store(name, artifact, pod, remote):
                    recorded[name] = _record(store, name, artifact, remote)
                continue
            local = pod.local_path_for_uri(artifact.uri)
            if os.path.exists(local):
                if os.path.isdir(local):
                    shutil.copytree(local, artifact.uri, dirs_exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(artifact.uri), exist_ok=True)
                    shutil.copyfile(local, artifact.uri)
            elif name == 'executor-logs':
                continue  # no log on disk: not recorded
            recorded[name] = _record(store, name, artifact, None)
    return recorded


def _record(store: kfp_mlmd.Store, name: str, artifact, remote: Optional[RunStore]) -> int:
    """uploadOutputArtifacts(): metadataClient.RecordArtifact() with the run's bucket config
    (its session info becomes the artifact's store_session_info)."""
    session = (kfp_objectstore.session_info_json(remote.config.session_info)
               if remote is not None else None)
    try:
        return store.record_artifact(name, artifact_schema(artifact.type), artifact, session)
    except kfp_mlmd.MLMDError as error:
        raise kfp_mlmd.MLMDError(f'unable to produce MLMD artifact for output "{name}": {error}')
