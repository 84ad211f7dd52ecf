"""The ML Metadata store and the cache table that open-source KFP keeps across runs, in memory.

kfp_launcher.py records every task here as KFP's driver and launcher record it in ML Metadata
(integer ids, INPUT/OUTPUT events, the value conversion of backend/src/v2/metadata/converter.go)
and reads inputs back as they do, so a downstream task gets what KFP hands it: an id for a name,
an empty type and converted metadata. The cache table stands for the API server's tasks table
that backend/src/v2/cacheutils/cache.go queries. Test support only (no TFX imports).
"""
import json
from typing import Dict, List, Optional

from google.protobuf import struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2
from ml_metadata.proto import metadata_store_pb2

SESSION_INFO_GS = {'Provider': 'gs', 'Params': {'fromEnv': 'true'}}


class MLMDError(RuntimeError):
    """An error of the metadata client, with KFP's message."""


def struct_value_to_mlmd(value: struct_pb2.Value) -> metadata_store_pb2.Value:
    """converter.go: StructValueToMLMDValue(): strings and numbers as they are, bools as ints,
    lists and structs wrapped in a struct under "list" / "struct", null refused."""
    kind, out = value.WhichOneof('kind'), metadata_store_pb2.Value()
    if kind == 'string_value':
        out.string_value = value.string_value
    elif kind == 'number_value':
        out.double_value = value.number_value
    elif kind == 'bool_value':
        out.int_value = int(value.bool_value)
    elif kind == 'list_value':
        out.struct_value.fields['list'].list_value.CopyFrom(value.list_value)
    elif kind == 'struct_value':
        out.struct_value.fields['struct'].struct_value.CopyFrom(value.struct_value)
    else:  # "// TODO: support null" in converter.go
        raise MLMDError('unknown/unsupported value type *structpb.Value_NullValue')
    return out


def mlmd_to_struct_value(value: metadata_store_pb2.Value) -> struct_pb2.Value:
    """converter.go: toRuntimeArtifact() propertiesToMetadata: ints and doubles become numbers,
    a struct comes back as it was stored (still wrapped)."""
    kind, out = value.WhichOneof('value'), struct_pb2.Value()
    if kind == 'string_value':
        out.string_value = value.string_value
    elif kind == 'double_value':
        out.number_value = value.double_value
    elif kind == 'int_value':
        out.number_value = float(value.int_value)
    elif kind == 'struct_value':
        out.struct_value.CopyFrom(value.struct_value)
    else:
        raise MLMDError(f'failed to convert MLMD artifact to RuntimeArtifact: unknown property '
                        f'type in MLMD artifact: {kind}')
    return out


def to_mlmd_artifact(runtime: pipeline_spec_pb2.RuntimeArtifact) -> metadata_store_pb2.Artifact:
    """converter.go: toMLMDArtifact(): the URI, and every metadata field but _kfp_workspace as a
    custom property (StructValueToMLMDValue; any error fails the conversion)."""
    artifact = metadata_store_pb2.Artifact(uri=runtime.uri)
    for key, value in runtime.metadata.fields.items():
        if key == '_kfp_workspace':  # never persisted
            continue
        try:
            artifact.custom_properties[key].CopyFrom(struct_value_to_mlmd(value))
        except MLMDError as error:
            raise MLMDError(f'failed to convert RuntimeArtifact to MLMD artifact: {error}')
    return artifact


def to_runtime_artifact(artifact: metadata_store_pb2.Artifact,
                        schema: Optional[str]) -> pipeline_spec_pb2.RuntimeArtifact:
    """converter.go: toRuntimeArtifact(): the id as the name, the URI, every property and custom
    property as metadata; with `schema` (OutputArtifact.ToRuntimeArtifact) the type's
    instanceSchema is set to it ("" from GetOutputArtifactsByExecutionId: "TODO(Bobgy): figure
    out how to get schema"), without it (GetInputArtifactsByExecutionID) no type."""
    runtime = pipeline_spec_pb2.RuntimeArtifact(name=str(artifact.id), uri=artifact.uri)
    runtime.metadata.SetInParent()
    for properties in (artifact.properties, artifact.custom_properties):
        for key, value in properties.items():
            runtime.metadata.fields[key].CopyFrom(mlmd_to_struct_value(value))
    if schema is not None:
        runtime.type.instance_schema = schema
    return runtime


def schema_title(schema: str) -> str:
    """client.go: SchemaToArtifactType(): the YAML schema's title is the MLMD type name."""
    for line in schema.splitlines():
        if line.startswith('title:'):
            return line.split(':', 1)[1].strip()
    raise MLMDError('No title specified')  # glog.Fatal in KFP: the launcher dies


class Store:
    """Artifacts, executions and events with integer ids (as ML Metadata numbers them), and the
    API server's cache entries."""

    def __init__(self, convert: bool = True):
        # convert=False: Vertex AI's metadata store, which keeps an artifact's metadata as the
        # Struct it was given (no converter.go step, no display_name/store_session_info).
        self.convert = convert
        self.raw: Dict[int, pipeline_spec_pb2.RuntimeArtifact] = {}
        self.artifacts: Dict[int, metadata_store_pb2.Artifact] = {}
        self.type_names: Dict[int, str] = {}
        self.executions: Dict[int, metadata_store_pb2.Execution] = {}
        self.events: List[metadata_store_pb2.Event] = []
        self.cache_entries: List[dict] = []

    def create_execution(self, type_name: str, custom: dict,
                         input_ids: Dict[str, List[int]]) -> int:
        """client.go: CreateExecution(): state RUNNING, its custom properties, INPUT events."""
        execution = metadata_store_pb2.Execution(
            id=len(self.executions) + 1, type=type_name,
            last_known_state=metadata_store_pb2.Execution.RUNNING)
        for key, value in custom.items():
            execution.custom_properties[key].CopyFrom(value)
        self.executions[execution.id] = execution
        for name, ids in input_ids.items():
            for artifact_id in ids:
                self._event(execution.id, artifact_id, name, metadata_store_pb2.Event.INPUT)
        return execution.id

    def _event(self, execution_id, artifact_id, name, event_type):
        event = metadata_store_pb2.Event(execution_id=execution_id, artifact_id=artifact_id,
                                         type=event_type)
        event.path.steps.add().key = name  # client.go: eventPath()
        self.events.append(event)

    def record_artifact(self, output_name: str, schema: str,
                        runtime: pipeline_spec_pb2.RuntimeArtifact,
                        session_info: Optional[str] = None) -> int:
        """client.go: RecordArtifact(): toMLMDArtifact() converts the metadata (any error fails
        the recording), then display_name and store_session_info (the bucket config's session
        info as JSON; session_info, else the local folders' stand-in for gs://) are added if
        absent."""
        artifact = metadata_store_pb2.Artifact(uri=runtime.uri,
                                               state=metadata_store_pb2.Artifact.LIVE)
        artifact.id = len(self.artifacts) + 1
        self.raw[artifact.id] = pipeline_spec_pb2.RuntimeArtifact()
        self.raw[artifact.id].CopyFrom(runtime)
        if not self.convert:
            self.artifacts[artifact.id] = artifact
            return artifact.id
        artifact.MergeFrom(to_mlmd_artifact(runtime))
        custom = artifact.custom_properties
        if 'display_name' not in custom:
            custom['display_name'].string_value = output_name
        if 'store_session_info' not in custom:  # json.Marshal(bucketConfig.SessionInfo)
            custom['store_session_info'].string_value = session_info or json.dumps(
                SESSION_INFO_GS, separators=(',', ':'))
        self.artifacts[artifact.id] = artifact
        self.type_names[artifact.id] = schema_title(schema)
        return artifact.id

    def publish_execution(self, execution_id: int, output_parameters: Optional[dict],
                          outputs: Dict[str, int], state) -> None:
        """client.go: PublishExecution(): the state, the output parameters, OUTPUT events."""
        execution = self.executions[execution_id]
        execution.last_known_state = state
        if output_parameters is not None:
            fields = execution.custom_properties['outputs'].struct_value.fields
            for name, value in output_parameters.items():
                fields[name].CopyFrom(value)
        for name, artifact_id in outputs.items():
            self._event(execution_id, artifact_id, name, metadata_store_pb2.Event.OUTPUT)

    def output_artifacts(self, execution_id: int) -> Dict[str, int]:
        """client.go: GetOutputArtifactsByExecutionId(): the OUTPUT events' names and ids."""
        return {e.path.steps[0].key: e.artifact_id for e in self.events
                if e.execution_id == execution_id and e.type == metadata_store_pb2.Event.OUTPUT}

    def to_runtime_artifact(self, artifact_id: int, schema: str = ''
                            ) -> pipeline_spec_pb2.RuntimeArtifact:
        """client.go: OutputArtifact.ToRuntimeArtifact() (to_runtime_artifact) of a recorded
        artifact; `Schema` is "" as GetOutputArtifactsByExecutionId leaves it."""
        return to_runtime_artifact(self.artifacts[artifact_id], schema)

    def execution_outputs(self, execution_id: int) -> Dict[str, struct_pb2.Value]:
        """model.go: Execution.GetParameters(): the "outputs" custom property."""
        execution = self.executions[execution_id]
        if 'outputs' not in execution.custom_properties:
            return {}
        return dict(execution.custom_properties['outputs'].struct_value.fields)

    # --- the API server's cache (cacheutils/cache.go) ---------------------------------------
    def get_execution_cache(self, fingerprint: str, pipeline_name: str, namespace: str) -> str:
        """cache.go: GetExecutionCache(): the newest task with this fingerprint, pipeline name and
        namespace ("created_at desc", page size 1); "" when there is none."""
        matches = [e for e in self.cache_entries if (e['fingerprint'], e['pipelineName'],
                   e['namespace']) == (fingerprint, pipeline_name, namespace)]
        return matches[-1]['mlmdExecutionID'] if matches else ''

    def create_execution_cache(self, fingerprint, pipeline_name, namespace, run_id,
                               execution_id) -> None:
        """launcher_v2.go: Execute(): after a successful run of a task with a fingerprint."""
        self.cache_entries.append({'fingerprint': fingerprint, 'pipelineName': pipeline_name,
                                   'namespace': namespace, 'runId': run_id,
                                   'mlmdExecutionID': str(execution_id)})
