"""The messages and the gRPC client of the ml-pipeline API server's TaskService (v1beta1), what
KFP's driver and launcher use as their cache.

A transcription of kubeflow/pipelines 2.17.0 `backend/api/v1beta1/task.proto` (Task,
CreateTaskRequest, ListTasksRequest, ListTasksResponse, service TaskService with CreateTaskV1 and
ListTasksV1), `resource_reference.proto` (ResourceKey, ResourceType) and `filter.proto` (the
Predicate and Filter whose JSON the driver puts in ListTasksRequest.filter). No Python package
ships these (kfp-server-api is the REST client), so the file descriptor is built here, field by
field as the .proto files declare it; the wire format is the same as the Go client's.

`Client` transcribes `backend/src/v2/cacheutils/cache.go` (NewClient, GetExecutionCache,
CreateExecutionCache); GenerateCacheKey / GenerateFingerPrint are kfp_driver.fingerprint.
Test support only.
"""
import json
from typing import Optional

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

SERVICE = 'api.TaskService'
# cacheutils/cache.go: MaxClientGRPCMessageSize.
MAX_MESSAGE = 100 * 1024 * 1024

_F = descriptor_pb2.FieldDescriptorProto


def _field(message, name, number, kind, type_name=None, label=_F.LABEL_OPTIONAL, oneof=None,
           json_name=None):
    field = message.field.add(name=name, number=number, type=kind, label=label)
    if type_name:
        field.type_name = type_name
    if oneof is not None:
        field.oneof_index = oneof
    field.json_name = json_name or _camel(name)


def _camel(name):
    head, *rest = name.split('_')
    return head + ''.join(part[:1].upper() + part[1:] for part in rest)


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name='backend/api/v1beta1/task_cache.proto', package='api', syntax='proto3',
        dependency=['google/protobuf/timestamp.proto'])
    # task.proto: message Task.
    task = proto.message_type.add(name='Task')
    for number, name in enumerate(('id', 'namespace', 'pipelineName', 'runId',
                                   'mlmdExecutionID'), start=1):
        _field(task, name, number, _F.TYPE_STRING)
    _field(task, 'created_at', 6, _F.TYPE_MESSAGE, '.google.protobuf.Timestamp')
    _field(task, 'finished_at', 7, _F.TYPE_MESSAGE, '.google.protobuf.Timestamp')
    _field(task, 'fingerprint', 8, _F.TYPE_STRING)
    create = proto.message_type.add(name='CreateTaskRequest')
    _field(create, 'task', 1, _F.TYPE_MESSAGE, '.api.Task')
    # resource_reference.proto: enum ResourceType, message ResourceKey.
    kinds = proto.enum_type.add(name='ResourceType')
    for number, name in enumerate(('UNKNOWN_RESOURCE_TYPE', 'EXPERIMENT', 'JOB', 'PIPELINE',
                                   'PIPELINE_VERSION', 'NAMESPACE')):
        kinds.value.add(name=name, number=number)
    key = proto.message_type.add(name='ResourceKey')
    _field(key, 'type', 1, _F.TYPE_ENUM, '.api.ResourceType')
    _field(key, 'id', 2, _F.TYPE_STRING)
    listing = proto.message_type.add(name='ListTasksRequest')
    _field(listing, 'page_token', 1, _F.TYPE_STRING)
    _field(listing, 'page_size', 2, _F.TYPE_INT32)
    _field(listing, 'sort_by', 3, _F.TYPE_STRING)
    _field(listing, 'resource_reference_key', 4, _F.TYPE_MESSAGE, '.api.ResourceKey')
    _field(listing, 'filter', 5, _F.TYPE_STRING)
    answer = proto.message_type.add(name='ListTasksResponse')
    _field(answer, 'tasks', 1, _F.TYPE_MESSAGE, '.api.Task', label=_F.LABEL_REPEATED)
    _field(answer, 'next_page_token', 2, _F.TYPE_STRING)
    _field(answer, 'total_size', 3, _F.TYPE_INT32)
    service = proto.service.add(name='TaskService')
    service.method.add(name='CreateTaskV1', input_type='.api.CreateTaskRequest',
                       output_type='.api.Task')
    service.method.add(name='ListTasksV1', input_type='.api.ListTasksRequest',
                       output_type='.api.ListTasksResponse')
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
_POOL.Add(_file())
_CLASSES = message_factory.GetMessages([_file()], pool=_POOL)
Task = _CLASSES['api.Task']
CreateTaskRequest = _CLASSES['api.CreateTaskRequest']
ListTasksRequest = _CLASSES['api.ListTasksRequest']
ListTasksResponse = _CLASSES['api.ListTasksResponse']
ResourceKey = _CLASSES['api.ResourceKey']
# filter.proto: Predicate.Op.
PREDICATE_OPS = {'UNKNOWN': 0, 'EQUALS': 1, 'NOT_EQUALS': 2, 'GREATER_THAN': 3,
                 'GREATER_THAN_EQUALS': 5, 'LESS_THAN': 6, 'LESS_THAN_EQUALS': 7, 'IN': 8,
                 'IS_SUBSTRING': 9}


def filter_json(**equals: str) -> str:
    """The protojson of an api.Filter of EQUALS string predicates, in the order given
    (cache.go GetExecutionCache: fingerprint, pipelineName, namespace)."""
    return json.dumps({'predicates': [{'op': 'EQUALS', 'key': key, 'stringValue': value}
                                      for key, value in equals.items()]},
                      separators=(',', ':'), ensure_ascii=False)


class Client:
    """cache.go: client, the TaskService over gRPC (insecure credentials; TLS is not
    transcribed). `None` stands for disabledCacheClient: calling it is KFP's panic."""

    def __init__(self, address: str, port: str):
        # cache.go NewClient: grpc.NewClient(address + ":" + port), lazy like Go's.
        self.endpoint = f'{address}:{port}'
        self._channel = grpc.insecure_channel(self.endpoint, options=[
            ('grpc.max_receive_message_length', MAX_MESSAGE)])
        self._list = self._channel.unary_unary(
            f'/{SERVICE}/ListTasksV1', request_serializer=ListTasksRequest.SerializeToString,
            response_deserializer=ListTasksResponse.FromString)
        self._create = self._channel.unary_unary(
            f'/{SERVICE}/CreateTaskV1', request_serializer=CreateTaskRequest.SerializeToString,
            response_deserializer=Task.FromString)

    def get_execution_cache(self, fingerprint: str, pipeline_name: str, namespace: str) -> str:
        """GetExecutionCache(): the newest task ("created_at desc", page size 1) with this
        fingerprint, pipeline name and namespace; "" when there is none."""
        request = ListTasksRequest(filter=filter_json(
            fingerprint=fingerprint, pipelineName=pipeline_name, namespace=namespace),
            sort_by='created_at desc', page_size=1)
        try:
            answer = self._list(request)
        except grpc.RpcError as error:
            raise CacheError(f'failed to list tasks: {grpc_error_text(error)}')
        return answer.tasks[0].mlmdExecutionID if answer.tasks else ''

    def create_execution_cache(self, task) -> None:
        """CreateExecutionCache()."""
        try:
            self._create(CreateTaskRequest(task=task))
        except grpc.RpcError as error:
            raise CacheError(f'failed to create task: {grpc_error_text(error)}')

    def close(self):
        self._channel.close()


class CacheError(RuntimeError):
    """A cache call failed; the message is cache.go's."""


def grpc_error_text(error: grpc.RpcError) -> str:
    """How grpc-go's status error prints: `rpc error: code = Name desc = message`."""
    code: Optional[grpc.StatusCode] = error.code() if hasattr(error, 'code') else None
    name = ''.join(part.capitalize() for part in code.name.split('_')) if code else 'Unknown'
    name = {'Ok': 'OK'}.get(name, name)
    details = error.details() if hasattr(error, 'details') else error
    return f'rpc error: code = {name} desc = {details}'
