"""KFP's ML Metadata client (backend/src/v2/metadata/client.go, 2.17.0), transcribed over gRPC:
the same MetadataStoreService requests, in the same order, as the Go client sends them, so a
store served by tests/support/kfp_mlmd_server.py ends up with what the real driver and launcher
write (contexts, executions and their custom properties, artifacts, events, states).

Each method names its Go function. Value conversions are kfp_mlmd.py's (converter.go). The
channel is insecure (TLS is not transcribed) and retries Aborted and Unavailable up to 10 times
with exponential backoff from 1 s (NewClient's grpc_retry options). Test support only.
"""
import dataclasses
import json
import random
import time
from typing import Dict, List, Optional

import grpc
from google.protobuf import struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2
from ml_metadata.proto import metadata_store_pb2 as mlmd_pb
from ml_metadata.proto import metadata_store_service_pb2 as svc
from ml_metadata.proto import metadata_store_service_pb2_grpc as svc_grpc

import kfp_mlmd

PIPELINE_CONTEXT_TYPE = 'system.Pipeline'
RUN_CONTEXT_TYPE = 'system.PipelineRun'
DAG_EXECUTION_TYPE = 'system.DAGExecution'
CONTAINER_EXECUTION_TYPE = 'system.ContainerExecution'
_MAX_MESSAGE = 100 * 1024 * 1024
_RETRIED = (grpc.StatusCode.ABORTED, grpc.StatusCode.UNAVAILABLE)


class MLMDError(kfp_mlmd.MLMDError):
    """A metadata call failed; `code` is the gRPC status code when the server answered."""

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None):
        super().__init__(message)
        self.code = code


def grpc_text(error: grpc.RpcError) -> str:
    """grpc-go's status error text."""
    name = ''.join(p.capitalize() for p in error.code().name.split('_'))
    return f'rpc error: code = {name} desc = {error.details()}'


@dataclasses.dataclass
class Pipeline:
    """client.go: Pipeline, the pipeline context and the run context."""
    context: Optional[mlmd_pb.Context]
    run_context: Optional[mlmd_pb.Context]

    def store_session_info(self) -> str:
        """GetStoreSessionInfo()."""
        if self.run_context is None or 'store_session_info' not in \
                self.run_context.custom_properties:
            return ''
        return self.run_context.custom_properties['store_session_info'].string_value

    def pipeline_root(self) -> str:
        """GetPipelineRoot()."""
        if self.run_context is None or 'pipeline_root' not in self.run_context.custom_properties:
            return ''
        return self.run_context.custom_properties['pipeline_root'].string_value


@dataclasses.dataclass
class Execution:
    """client.go: Execution."""
    execution: mlmd_pb.Execution
    pipeline: Optional[Pipeline] = None

    @property
    def id(self) -> int:
        return self.execution.id

    def task_name(self) -> str:
        return self.execution.custom_properties['task_name'].string_value \
            if 'task_name' in self.execution.custom_properties else ''

    def fingerprint(self) -> str:
        return self.execution.custom_properties['cache_fingerprint'].string_value \
            if 'cache_fingerprint' in self.execution.custom_properties else ''

    def parameters(self):
        """model.go: GetParameters(): the "inputs" and "outputs" custom properties' fields."""
        props = self.execution.custom_properties
        inputs = dict(props['inputs'].struct_value.fields) if 'inputs' in props else {}
        outputs = dict(props['outputs'].struct_value.fields) if 'outputs' in props else {}
        return inputs, outputs


@dataclasses.dataclass
class OutputArtifact:
    """client.go: OutputArtifact."""
    name: str
    artifact: mlmd_pb.Artifact
    schema: str = ''

    def to_runtime_artifact(self) -> pipeline_spec_pb2.RuntimeArtifact:
        """ToRuntimeArtifact(): toRuntimeArtifact with the type's instanceSchema = Schema."""
        return kfp_mlmd.to_runtime_artifact(self.artifact, self.schema)


@dataclasses.dataclass
class ExecutionConfig:
    """client.go: ExecutionConfig (the fields KFP 2.17.0's driver sets for ROOT_DAG and
    CONTAINER; PluginCustomProperties stays empty: no task plugin is configured)."""
    execution_type: str
    task_name: str = ''
    display_name: str = ''
    name: str = ''
    not_triggered: bool = False
    parent_dag_id: int = 0
    input_parameters: Optional[Dict[str, struct_pb2.Value]] = None
    input_artifact_ids: Dict[str, List[int]] = dataclasses.field(default_factory=dict)
    iteration_index: Optional[int] = None
    iteration_count: Optional[int] = None
    total_dag_tasks: Optional[int] = None
    image: str = ''
    cached_mlmd_execution_id: str = ''
    fingerprint: str = ''
    pod_name: str = ''
    pod_uid: str = ''
    namespace: str = ''


def generate_execution_config(executor_input) -> ExecutionConfig:
    """GenerateExecutionConfig(): the input artifacts' names parsed as their ids; the input
    parameters (None when the executor input's map is nil: a ROOT_DAG run without
    parameters)."""
    config = ExecutionConfig(execution_type='')
    for name, artifacts in executor_input.inputs.artifacts.items():
        for artifact in artifacts.artifacts:
            try:
                config.input_artifact_ids.setdefault(name, []).append(int(artifact.name))
            except ValueError:
                raise MLMDError(f'unable to parse input artifact id from "{artifact.name}": '
                                f'strconv.ParseInt: parsing "{artifact.name}": invalid syntax')
    return config


def _string(value: str) -> mlmd_pb.Value:
    return mlmd_pb.Value(string_value=value)


def _int(value: int) -> mlmd_pb.Value:
    return mlmd_pb.Value(int_value=value)


def _event_path(name: str) -> mlmd_pb.Event.Path:
    path = mlmd_pb.Event.Path()
    path.steps.add().key = name
    return path


class Client:
    """client.go: Client over MetadataStoreService at address:port."""

    def __init__(self, address: str, port: str):
        self.target = f'{address}:{port}'
        self._channel = grpc.insecure_channel(self.target, options=[
            ('grpc.max_receive_message_length', _MAX_MESSAGE),
            ('grpc.max_send_message_length', _MAX_MESSAGE)])
        self._stub = svc_grpc.MetadataStoreServiceStub(self._channel)
        self._context_types: Dict[str, int] = {}

    def close(self):
        self._channel.close()

    def _call(self, method: str, request):
        """One RPC with grpc_retry's policy (Aborted, Unavailable; 10 tries, 1 s base)."""
        for attempt in range(10):
            try:
                return getattr(self._stub, method)(request, timeout=120)
            except grpc.RpcError as error:
                if error.code() not in _RETRIED or attempt == 9:
                    raise MLMDError(grpc_text(error), error.code())
                time.sleep(min(30.0, 2 ** attempt) * (1 + random.uniform(-0.25, 0.25)))
        raise AssertionError('unreachable')

    # --- contexts ----------------------------------------------------------------------------
    def _context_type_id(self, name: str) -> int:
        """getContextTypeID(): cached per client; GetContextType, else PutContextType."""
        if name in self._context_types:
            return self._context_types[name]
        try:
            try:
                answer = self._call('GetContextType', svc.GetContextTypeRequest(type_name=name))
                type_id = answer.context_type.id
            except MLMDError as error:
                if error.code != grpc.StatusCode.NOT_FOUND:
                    raise
                try:
                    type_id = self._call('PutContextType', svc.PutContextTypeRequest(
                        context_type=mlmd_pb.ContextType(name=name))).type_id
                except MLMDError as put_error:
                    if put_error.code != grpc.StatusCode.ALREADY_EXISTS:
                        raise
                    type_id = self._call('GetContextType', svc.GetContextTypeRequest(
                        type_name=name)).context_type.id
        except MLMDError as error:
            raise MLMDError(f'getContextTypeID(name="{name}") failed: {error}', error.code)
        self._context_types[name] = type_id
        return type_id

    def _get_or_insert_context(self, name: str, type_name: str,
                               custom: Optional[Dict[str, mlmd_pb.Value]]) -> mlmd_pb.Context:
        """getOrInsertContext()."""
        request = svc.GetContextByTypeAndNameRequest(type_name=type_name, context_name=name)
        try:
            answer = self._call('GetContextByTypeAndName', request)
        except MLMDError as error:
            raise MLMDError(f'Failed GetContextByTypeAndName(type="{type_name}", name="{name}")'
                            f': {error}', error.code)
        if answer.HasField('context'):
            return answer.context
        type_id = self._context_type_id(type_name)
        context = mlmd_pb.Context(name=name, type_id=type_id)
        for key, value in (custom or {}).items():
            context.custom_properties[key].CopyFrom(value)
        try:
            self._call('PutContexts', svc.PutContextsRequest(contexts=[context]))
        except MLMDError as error:
            if error.code != grpc.StatusCode.ALREADY_EXISTS:
                raise MLMDError(f'Failed PutContext(name="{name}", type="{type_name}", '
                                f'typeid={type_id}): {error}', error.code)
        try:
            return self._call('GetContextByTypeAndName', request).context
        except MLMDError as error:
            raise MLMDError(f'Failed GetContext(name="{name}", type="{type_name}"): {error}',
                            error.code)

    def get_pipeline(self, pipeline_name: str, run_id: str, namespace: str, run_resource: str,
                     pipeline_root: str, store_session_info: str) -> Pipeline:
        """GetPipeline(): the pipeline context, the run context (its namespace, resource name,
        pipeline root <root>/<pipeline>/<run id> and store session info, set when it is
        created), and the run context's parent link."""
        import kfp_driver  # (GenerateOutputURI lives with the driver's other rules)
        pipeline = self._get_or_insert_context(pipeline_name, PIPELINE_CONTEXT_TYPE, None)
        custom = {'namespace': _string(namespace), 'resource_name': _string(run_resource),
                  'pipeline_root': _string(kfp_driver.generate_output_uri(
                      pipeline_root, pipeline_name, run_id, preserve_query=True)),
                  'store_session_info': _string(store_session_info)}
        run = self._get_or_insert_context(run_id, RUN_CONTEXT_TYPE, custom)
        parents = self._call('GetParentContextsByContext',
                             svc.GetParentContextsByContextRequest(context_id=run.id)).contexts
        if len(parents) > 1:
            raise MLMDError(f'Current run context has more than 1 parent context: {parents}')
        if len(parents) == 1:
            if parents[0].id != pipeline.id:
                raise MLMDError(f'Parent context ID {parents[0].id} of current run is different '
                                f'from expected: {pipeline.id}')
            return Pipeline(pipeline, run)
        request = svc.PutParentContextsRequest(parent_contexts=[mlmd_pb.ParentContext(
            child_id=run.id, parent_id=pipeline.id)])
        try:
            self._call('PutParentContexts', request)
        except MLMDError as error:  # putParentContexts(): AlreadyExists is expected
            if error.code != grpc.StatusCode.ALREADY_EXISTS:
                raise MLMDError(f'Failed PutParentContexts({request}): {error}', error.code)
        return Pipeline(pipeline, run)

    def get_pipeline_from_execution(self, execution_id: int) -> Pipeline:
        """GetPipelineFromExecution()."""
        pipeline_type = self._context_type_id(PIPELINE_CONTEXT_TYPE)
        run_type = self._context_type_id(RUN_CONTEXT_TYPE)
        try:
            contexts = self._call('GetContextsByExecution', svc.GetContextsByExecutionRequest(
                execution_id=execution_id)).contexts
        except MLMDError as error:
            raise MLMDError(f'get contexts of execution ID={execution_id}: {error}', error.code)
        pipeline = Pipeline(None, None)
        for context in contexts:
            if context.type_id == pipeline_type:
                if pipeline.context is not None:
                    raise MLMDError('multiple pipeline contexts found')
                pipeline.context = context
            if context.type_id == run_type:
                if pipeline.run_context is not None:
                    raise MLMDError('multiple run contexts found')
                pipeline.run_context = context
        return pipeline

    # --- executions --------------------------------------------------------------------------
    def get_execution(self, execution_id: int) -> Execution:
        """GetExecution()."""
        try:
            found = self._call('GetExecutionsByID', svc.GetExecutionsByIDRequest(
                execution_ids=[execution_id])).executions
        except MLMDError as error:
            raise MLMDError(f'get execution ID={execution_id}: {error}', error.code)
        if not found:
            raise MLMDError(f'execution ID={execution_id} not found')
        return Execution(found[0], self.get_pipeline_from_execution(found[0].id))

    def get_dag(self, execution_id: int) -> Execution:
        """GetDAG()."""
        try:
            return Execution(self.get_execution(execution_id).execution)
        except MLMDError as error:
            raise MLMDError(f'failed to get DAG executionID={execution_id}: {error}', error.code)

    def get_execution_by_type_and_name(self, type_name: str, name: str) -> Execution:
        """GetExecutionByTypeAndName()."""
        try:
            answer = self._call('GetExecutionByTypeAndName', svc.GetExecutionByTypeAndNameRequest(
                type_name=type_name, execution_name=name))
        except MLMDError as error:
            raise MLMDError(f'GetExecutionsByTypeAndName(type="{type_name}", name="{name}"): '
                            f'{error}', error.code)
        if not answer.HasField('execution'):
            raise MLMDError(f'no execution found for type="{type_name}", name="{name}"')
        return Execution(answer.execution, self.get_pipeline_from_execution(answer.execution.id))

    def create_execution(self, pipeline: Pipeline, config: ExecutionConfig) -> Execution:
        """CreateExecution(): PutExecutionType, then PutExecution with the custom properties,
        the pipeline and run contexts and an INPUT event per input artifact id, then
        GetExecutionsByID."""
        type_id = self._call('PutExecutionType', svc.PutExecutionTypeRequest(
            execution_type=mlmd_pb.ExecutionType(name=config.execution_type))).type_id
        execution = mlmd_pb.Execution(type_id=type_id)
        props = execution.custom_properties
        props['display_name'].CopyFrom(_string(config.display_name))
        props['task_name'].CopyFrom(_string(config.task_name))
        if config.name:
            execution.name = config.name
        execution.last_known_state = (mlmd_pb.Execution.CANCELED if config.not_triggered
                                      else mlmd_pb.Execution.RUNNING)
        if config.parent_dag_id:
            props['parent_dag_id'].CopyFrom(_int(config.parent_dag_id))
        if config.iteration_index is not None:
            props['iteration_index'].CopyFrom(_int(config.iteration_index))
        if config.iteration_count is not None:
            props['iteration_count'].CopyFrom(_int(config.iteration_count))
        if config.execution_type == CONTAINER_EXECUTION_TYPE:
            for key in ('pod_name', 'pod_uid', 'namespace', 'image'):
                props[key].CopyFrom(_string(getattr(config, key)))
            if config.cached_mlmd_execution_id:
                props['cached_execution_id'].CopyFrom(_string(config.cached_mlmd_execution_id))
            if config.fingerprint:
                props['cache_fingerprint'].CopyFrom(_string(config.fingerprint))
        if config.input_parameters is not None:
            props['inputs'].struct_value.SetInParent()
            for key, value in config.input_parameters.items():
                props['inputs'].struct_value.fields[key].CopyFrom(value)
        if config.total_dag_tasks is not None:
            props['total_dag_tasks'].CopyFrom(_int(config.total_dag_tasks))
        request = svc.PutExecutionRequest(execution=execution,
                                          contexts=[pipeline.context, pipeline.run_context])
        for name, ids in config.input_artifact_ids.items():
            for artifact_id in ids:
                request.artifact_event_pairs.add().event.CopyFrom(mlmd_pb.Event(
                    artifact_id=artifact_id, path=_event_path(name), type=mlmd_pb.Event.INPUT))
        execution_id = self._call('PutExecution', request).execution_id
        found = self._call('GetExecutionsByID', svc.GetExecutionsByIDRequest(
            execution_ids=[execution_id])).executions
        if len(found) != 1:
            raise MLMDError(f'Expected to get one Execution, got {len(found)} instead.')
        return Execution(found[0], pipeline)

    def pre_publish_execution(self, execution: Execution, pod_name: str, pod_uid: str,
                              namespace: str) -> Execution:
        """PrePublishExecution(): the pod's name, uid and namespace, state RUNNING."""
        props = execution.execution.custom_properties
        props['pod_name'].CopyFrom(_string(pod_name))
        props['pod_uid'].CopyFrom(_string(pod_uid))
        props['namespace'].CopyFrom(_string(namespace))
        execution.execution.last_known_state = mlmd_pb.Execution.RUNNING
        self._call('PutExecution', svc.PutExecutionRequest(execution=execution.execution))
        return execution

    def publish_execution(self, execution: Execution,
                          output_parameters: Optional[Dict[str, struct_pb2.Value]],
                          output_artifacts: List[OutputArtifact], state) -> None:
        """PublishExecution(): the state, the "outputs" struct (when parameters are given), an
        OUTPUT event per artifact (a new artifact when it has no id), with the execution's
        pipeline and run contexts."""
        record = execution.execution
        record.last_known_state = state
        if output_parameters is not None:
            if 'outputs' in record.custom_properties:
                del record.custom_properties['outputs']
            record.custom_properties['outputs'].struct_value.SetInParent()
            for name, value in output_parameters.items():
                record.custom_properties['outputs'].struct_value.fields[name].CopyFrom(value)
        contexts = ([execution.pipeline.context, execution.pipeline.run_context]
                    if execution.pipeline is not None else [])
        request = svc.PutExecutionRequest(execution=record,
                                          contexts=[c for c in contexts if c is not None])
        for output in output_artifacts:
            pair = request.artifact_event_pairs.add()
            event = mlmd_pb.Event(type=mlmd_pb.Event.OUTPUT, path=_event_path(output.name))
            if output.artifact.id:
                event.artifact_id = output.artifact.id
            else:
                pair.artifact.CopyFrom(output.artifact)
            pair.event.CopyFrom(event)
        self._call('PutExecution', request)

    def put_dag_execution_state(self, execution_id: int, state) -> None:
        """PutDAGExecutionState()."""
        execution = self.get_execution(execution_id)
        execution.execution.last_known_state = state
        self._call('PutExecution', svc.PutExecutionRequest(execution=execution.execution))

    def update_dag_executions_state(self, dag: Execution, pipeline: Pipeline) -> None:
        """UpdateDAGExecutionsState(): a DAG with an expected task count (iteration_count,
        else total_dag_tasks) becomes COMPLETE when that many tasks ended well, FAILED when one
        failed, and its parent is updated in turn; the root DAG has neither and stays."""
        props = dag.execution.custom_properties
        has_count = 'iteration_count' in props
        expected = (props['iteration_count'].int_value if has_count else
                    props['total_dag_tasks'].int_value if 'total_dag_tasks' in props else 0)
        if expected == 0 and not has_count:
            return
        tasks = self.get_executions_in_dag(dag, pipeline, True)
        states = [mlmd_pb.Execution.State.Name(t.execution.last_known_state)
                  for t in tasks.values()]
        completed = sum(s in ('COMPLETE', 'CACHED', 'CANCELED') for s in states)
        failed = states.count('FAILED')
        if completed == expected:
            state = mlmd_pb.Execution.COMPLETE
        elif failed > 0:
            state = mlmd_pb.Execution.FAILED
        else:
            return
        self.put_dag_execution_state(dag.id, state)
        parent = props['parent_dag_id'].int_value if 'parent_dag_id' in props else 0
        if parent:
            self.update_dag_executions_state(self.get_dag(parent), pipeline)

    def get_executions_in_dag(self, dag: Execution, pipeline: Pipeline,
                              filter_dag: bool) -> Dict[str, Execution]:
        """GetExecutionsInDAG(): the run context's executions (of this DAG only with
        filter_dag), by "<task name>_<dag id>" (ParallelFor iterations: "_idx_<i>" more)."""
        try:
            return self._executions_in_dag(dag, pipeline, filter_dag)
        except MLMDError as error:
            raise MLMDError(f'failed to get executions in DAG(executionID={dag.id}): {error}',
                            error.code)

    def _executions_in_dag(self, dag, pipeline, filter_dag):
        found: Dict[str, Execution] = {}
        query = f'custom_properties.parent_dag_id.int_value = {dag.id}' if filter_dag else ''
        token = ''
        dag_props = dag.execution.custom_properties
        while True:
            answer = self._call('GetExecutionsByContext', svc.GetExecutionsByContextRequest(
                context_id=pipeline.run_context.id,
                options=mlmd_pb.ListOperationOptions(filter_query=query, next_page_token=token)))
            for record in answer.executions:
                execution = Execution(record)
                name = f'{execution.task_name()}_{dag.id}'
                if 'iteration_index' in record.custom_properties:
                    name += f"_idx_{record.custom_properties['iteration_index'].int_value}"
                elif 'iteration_index' in dag_props:
                    name += f"_idx_{dag_props['iteration_index'].int_value}"
                if name in found:
                    raise MLMDError(f'two tasks have the same task name "{name}", '
                                    f'id1={found[name].id} id2={execution.id}')
                found[name] = execution
            token = answer.next_page_token
            if not token:
                return found

    # --- artifacts ---------------------------------------------------------------------------
    def _events(self, execution_id: int):
        return self._call('GetEventsByExecutionIDs', svc.GetEventsByExecutionIDsRequest(
            execution_ids=[execution_id])).events

    def get_artifacts(self, ids: List[int]) -> List[mlmd_pb.Artifact]:
        """GetArtifacts()."""
        return list(self._call('GetArtifactsByID', svc.GetArtifactsByIDRequest(
            artifact_ids=ids)).artifacts)

    def get_output_artifacts_by_execution_id(self, execution_id: int
                                             ) -> Dict[str, OutputArtifact]:
        """GetOutputArtifactsByExecutionId(): the OUTPUT events' artifacts by the event's name,
        Schema "" ("TODO(Bobgy): figure out how to get schema")."""
        try:
            events = self._events(execution_id)
        except MLMDError as error:
            raise MLMDError(f'failed to get events with execution id {execution_id}: {error}',
                            error.code)
        names = {e.artifact_id: e.path.steps[0].key for e in events
                 if e.type == mlmd_pb.Event.OUTPUT}
        try:
            artifacts = self.get_artifacts(list(names))
        except MLMDError as error:
            raise MLMDError(f'failed to get output artifacts: {error}', error.code)
        return {names[a.id]: OutputArtifact(names[a.id], a) for a in artifacts}

    def get_input_artifacts_by_execution_id(self, execution_id: int):
        """GetInputArtifactsByExecutionID(): INPUT events' artifacts by name, as
        RuntimeArtifacts (no type)."""
        try:
            events = self._events(execution_id)
            names = {e.artifact_id: e.path.steps[0].key for e in events
                     if e.type == mlmd_pb.Event.INPUT}
            inputs = {}
            for artifact in self.get_artifacts(list(names)):
                inputs[names[artifact.id]] = [kfp_mlmd.to_runtime_artifact(artifact, None)]
            return inputs
        except (MLMDError, kfp_mlmd.MLMDError) as error:
            raise MLMDError(f'GetInputArtifactsByExecution(id={execution_id}) failed: {error}')

    def record_artifact(self, output_name: str, schema: str,
                        runtime: pipeline_spec_pb2.RuntimeArtifact, state,
                        session_info_json: str) -> OutputArtifact:
        """RecordArtifact(): toMLMDArtifact, the type from the schema's title
        (PutArtifactType), state, display_name and store_session_info when absent
        (json.Marshal of the bucket config's SessionInfo), PutArtifacts, GetArtifactsByID."""
        artifact = kfp_mlmd.to_mlmd_artifact(runtime)
        type_name = kfp_mlmd.schema_title(schema)
        type_id = self._call('PutArtifactType', svc.PutArtifactTypeRequest(
            artifact_type=mlmd_pb.ArtifactType(name=type_name))).type_id
        artifact.type_id = type_id
        artifact.state = state
        if 'display_name' not in artifact.custom_properties:
            artifact.custom_properties['display_name'].CopyFrom(_string(output_name))
        if 'store_session_info' not in artifact.custom_properties:
            artifact.custom_properties['store_session_info'].CopyFrom(_string(session_info_json))
        ids = self._call('PutArtifacts', svc.PutArtifactsRequest(artifacts=[artifact])).artifact_ids
        if len(ids) != 1:
            raise MLMDError('Failed to insert exactly one artifact')
        found = self.get_artifacts(list(ids))
        if len(found) != 1:
            raise MLMDError('Failed to retrieve exactly one artifact')
        return OutputArtifact(output_name, found[0], runtime.type.instance_schema)


def session_info_text(session: Optional[dict]) -> str:
    """json.Marshal(objectstore.SessionInfo) of a parsed session (None: "null")."""
    import kfp_objectstore
    return kfp_objectstore.session_info_json(session)


def parse_session_info(text: str) -> Optional[dict]:
    """objectstore.GetSessionInfoFromString(): "" is no session; else the JSON."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError as error:
        raise MLMDError(f'Encountered error when attempting to unmarshall bucket session '
                        f'info properties: {error}')
    return {'Provider': data.get('Provider', ''), 'Params': dict(data.get('Params') or {})}
