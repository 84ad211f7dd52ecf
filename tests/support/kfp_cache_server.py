"""The ml-pipeline API server's task service, the only part of it KFP's driver and launcher call.

KFP 2.17.0's driver and launcher reach the API server only through its cache client
(backend/src/v2/cacheutils/cache.go, gRPC `api.TaskService` on port 8887):
- `GetExecutionCache(fingerprint, "pipeline/"+name, namespace)` (called by driver/cache.go
  getFingerPrintsAndID): `ListTasksV1` with a JSON filter of three EQUALS predicates
  (fingerprint, pipelineName, namespace), `sort_by "created_at desc"`, `page_size 1`; the newest
  task's `mlmdExecutionID` is the cached execution, none means a miss;
- `CreateExecutionCache(task)` (driver/cache.go createCache, component/launcher_v2.go Execute
  after a run that enabled the cache and missed): `CreateTaskV1`.

Served here as the API server serves them (file and function named at each rule):
backend/src/apiserver/server/task_server.go CreateTaskV1 (validateCreateTaskRequest) and
ListTasksV1; resource/resource_manager.go CreateTask (the run must exist; the task takes its
namespace); storage/task_store.go CreateTask and ListTasks; model/task.go (the field map a filter
and a sort name); list/list.go (order and pages); server/api_converter.go toModelTask /
toApiTaskV1 (timestamps kept to the second).

The messages are kfp_task_api.py's (built from the field numbers of backend/api/v1beta1/task.proto
and resource_reference.proto: KFP's Python packages carry no stubs for them); the filter arrives
as the protojson of filter.proto's Filter and is read as JSON here. The run table
behind it holds what the harness registers when it starts a run (the API server creates the run
before its workflow, resource_manager.go CreateRun).
"""
import base64
import json
import threading
import uuid
from concurrent import futures

import grpc
from google.protobuf import json_format, timestamp_pb2

import kfp_mlmd_server
import kfp_task_api

SERVICE = kfp_task_api.SERVICE
# filter.proto Predicate.Op, by number (protojson also writes the name).
_OP_NAMES = {number: name for name, number in kfp_task_api.PREDICATE_OPS.items()}
# filter.proto Predicate's `value` oneof: protojson names (and the proto names it also accepts).
_VALUE_FIELDS = {'intValue': 'int', 'int_value': 'int', 'longValue': 'int', 'long_value': 'int',
                 'stringValue': 'str', 'string_value': 'str', 'timestampValue': 'time',
                 'timestamp_value': 'time', 'intValues': 'ints', 'int_values': 'ints',
                 'longValues': 'ints', 'long_values': 'ints', 'stringValues': 'strs',
                 'string_values': 'strs'}

# model/task.go taskAPIToModelFieldMap: the names a v1beta1 filter or sort may use.
_FIELDS = {'id': 'UUID', 'namespace': 'Namespace', 'pipelineName': 'PipelineName',
           'runId': 'RunUUID', 'fingerprint': 'Fingerprint',
           'mlmdExecutionID': 'MLMDExecutionID', 'created_at': 'CreatedTimestamp',
           'finished_at': 'FinishedTimestamp'}
# list/list.go: defaultPageSize / maxPageSize.
_DEFAULT_PAGE, _MAX_PAGE = 20, 200


class ApiError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _validate_create(task):
    """task_server.go validateCreateTaskRequest."""
    def must(what):
        return ApiError(grpc.StatusCode.INVALID_ARGUMENT,
                        f'Failed to create a new task due to validation error: Invalid task: '
                        f'must specify {what}')
    if task.id:
        raise ApiError(grpc.StatusCode.INVALID_ARGUMENT, 'Failed to create a new task due to '
                       'validation error: Invalid task: Id should not be set')
    if not task.pipelineName:
        raise must('PipelineName')
    if task.pipelineName.startswith('namespace/'):
        parts = task.pipelineName.split('/', 3)
        if len(parts) != 4:
            raise ApiError(grpc.StatusCode.INVALID_ARGUMENT, 'invalid PipelineName for namespaced '
                           "pipelines, need to follow 'namespace/${namespace}/pipeline/"
                           f"${{pipelineName}}': {task.pipelineName}")
        if task.namespace and parts[1] != task.namespace:
            raise ApiError(grpc.StatusCode.INVALID_ARGUMENT, f'the namespace {parts[1]} extracted '
                           'from pipelineName is not equal to the namespace '
                           f'{task.namespace} in task')
    if not task.runId:
        raise must('RunID')
    if not task.mlmdExecutionID:
        raise must('MlmdExecutionID')
    if not task.fingerprint:
        raise must('FingerPrint')
    if not task.HasField('created_at'):
        raise must('CreatedAt')


_OPS = {'EQUALS': lambda a, b: a == b, 'NOT_EQUALS': lambda a, b: a != b,
        'GREATER_THAN': lambda a, b: a > b, 'GREATER_THAN_EQUALS': lambda a, b: a >= b,
        'LESS_THAN': lambda a, b: a < b, 'LESS_THAN_EQUALS': lambda a, b: a <= b,
        'IN': lambda a, b: a in b, 'IS_SUBSTRING': lambda a, b: str(b) in str(a)}


class TaskService:
    """The task table and the run table, under one lock (the API server's database)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.tasks = []          # model.Task rows, as dicts keyed by column name
        self.runs = {}           # run id -> namespace ('' in single-user mode)
        self.calls = []          # (method, request as a dict)

    def add_run(self, run_id, namespace=''):
        with self._lock:
            self.runs[run_id] = namespace

    def create_task(self, request):
        task = request.task
        _validate_create(task)
        with self._lock:
            # resource_manager.go CreateTask: r.GetRun(t.RunID) first.
            if task.runId not in self.runs:
                raise ApiError(grpc.StatusCode.NOT_FOUND,
                               f'Failed to create a new task: Failed to create a task for run '
                               f'{task.runId}: ResourceNotFoundError: Run {task.runId} not found')
            namespace = task.namespace or self.runs[task.runId]
            # api_converter.go toModelTask: seconds only; task_store.go CreateTask: a random UUID.
            row = {'UUID': str(uuid.uuid4()), 'Namespace': namespace,
                   'PipelineName': task.pipelineName, 'RunUUID': task.runId,
                   'MLMDExecutionID': task.mlmdExecutionID,
                   'CreatedTimestamp': task.created_at.seconds,
                   'FinishedTimestamp': task.finished_at.seconds,
                   'Fingerprint': task.fingerprint}
            self.tasks.append(row)
        return _api_task(row)

    def list_tasks(self, request):
        predicates = [(_FIELDS[key], _OPS[op], value)
                      for key, op, value in _parse_filter(request.filter)]
        # list.go NewOptions: "<field> [asc|desc]", default the model's DefaultSortField
        # (task.go: CreatedTimestamp), ascending; the key field (UUID) breaks ties, same order.
        sort_field, descending = 'CreatedTimestamp', False
        if request.sort_by:
            words = request.sort_by.split()
            if len(words) > 2 or words[0] not in _FIELDS or \
                    (len(words) == 2 and words[1] not in ('asc', 'desc')):
                raise ApiError(grpc.StatusCode.INVALID_ARGUMENT, 'Failed to create list options: '
                               f'Invalid sorting field: "{request.sort_by}"')
            sort_field, descending = _FIELDS[words[0]], len(words) == 2 and words[1] == 'desc'
        size = request.page_size or _DEFAULT_PAGE
        if size < 0:
            raise ApiError(grpc.StatusCode.INVALID_ARGUMENT,
                           f'Failed to create list options: Invalid page size {size}')
        size = min(size, _MAX_PAGE)
        start = int(base64.b64decode(request.page_token)) if request.page_token else 0
        with self._lock:
            rows = [r for r in self.tasks if all(op(r[f], v) for f, op, v in predicates)]
        if request.resource_reference_key.id:
            # task_store.go ListTasks: a PIPELINE key filters PipelineName; the v1 key types
            # have no run type, so validateFilterV1 leaves only that one.
            if request.resource_reference_key.type == 3:
                rows = [r for r in rows if r['PipelineName'] == request.resource_reference_key.id]
        rows.sort(key=lambda r: (r[sort_field], r['UUID']), reverse=descending)
        page = rows[start:start + size]
        token = base64.b64encode(str(start + size).encode()).decode() \
            if start + size < len(rows) else ''
        return kfp_task_api.ListTasksResponse(tasks=[_api_task(r) for r in page],
                                              total_size=len(rows), next_page_token=token)


def _api_task(row):
    """api_converter.go toApiTaskV1."""
    task = kfp_task_api.Task(
        id=row['UUID'], namespace=row['Namespace'], pipelineName=row['PipelineName'],
        runId=row['RunUUID'], mlmdExecutionID=row['MLMDExecutionID'],
        fingerprint=row['Fingerprint'])
    task.created_at.seconds = row['CreatedTimestamp']
    task.finished_at.seconds = row['FinishedTimestamp']
    return task


def _invalid_filter(message):
    return ApiError(grpc.StatusCode.INVALID_ARGUMENT,
                    f'Failed to create list options: Invalid filter: {message}')


def _parse_filter(text):
    """list_request_util.go parseAPIFilter (protojson of api.Filter) and filter.go New: the
    (key, op name, value) of each predicate; an unknown key, op or field is refused."""
    if not text:
        return []
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise _invalid_filter(exc) from exc
    predicates = []
    for predicate in parsed.get('predicates', []):
        op = predicate.get('op', 'UNKNOWN')
        op = _OP_NAMES.get(op, op) if isinstance(op, int) else op
        key = predicate.get('key', '')
        values = [k for k in predicate if k in _VALUE_FIELDS]
        unknown = set(predicate) - {'op', 'key'} - set(values)
        if unknown or len(values) != 1:
            raise _invalid_filter(f'bad predicate {predicate}')
        if key not in _FIELDS:
            raise _invalid_filter(f'no support for key "{key}"')
        if op not in _OPS:
            raise _invalid_filter(f'invalid op {op}')
        kind, raw = _VALUE_FIELDS[values[0]], predicate[values[0]]
        if kind == 'int':
            value = int(raw)
        elif kind == 'time':
            stamp = timestamp_pb2.Timestamp()
            stamp.FromJsonString(raw)
            value = stamp.seconds
        elif kind in ('ints', 'strs'):
            value = [int(v) if kind == 'ints' else v for v in raw.get('values', [])]
        else:
            value = raw
        predicates.append((key, op, value))
    return predicates


class Server(kfp_mlmd_server.Serving):
    """`api.TaskService` over gRPC on host:port (the API server's 8887), insecure as
    cacheutils.NewClient dials it when --ml_pipeline_tls_enabled is off (the default)."""

    def __init__(self, host='127.0.0.1', port=0, service=None):
        self.service = service or TaskService()
        self.host = host
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handlers = {
            'CreateTaskV1': self._handler('CreateTaskV1', kfp_task_api.CreateTaskRequest,
                                          self.service.create_task),
            'ListTasksV1': self._handler('ListTasksV1', kfp_task_api.ListTasksRequest,
                                         self.service.list_tasks)}
        self._grpc.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),))
        self.port = self._grpc.add_insecure_port(f'{host}:{port}')
        if not self.port:
            raise RuntimeError(f'task service: cannot listen on {host}:{port}')

    def _handler(self, name, request_type, method):
        def call(request, context):
            self.service.calls.append((name, json_format.MessageToDict(request)))
            try:
                return method(request)
            except ApiError as exc:
                context.abort(exc.code, str(exc))
        return grpc.unary_unary_rpc_method_handler(
            call, request_deserializer=request_type.FromString,
            response_serializer=lambda m: m.SerializeToString())
