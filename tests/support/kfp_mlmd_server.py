"""An ML Metadata gRPC server (`ml_metadata.MetadataStoreService`) over the library's SQLite store.

What a Kubeflow cluster runs as `metadata-grpc-service` (KFP's driver and launcher talk to it on
port 8080, backend/src/v2/metadata/env.go). A transcription of ml-metadata's
`ml_metadata/metadata_store/metadata_store_service_impl.cc`: every RPC takes the one
`absl::WriterMutexLock` around the one `MetadataStore`, calls the store's method of the same name,
and returns its status as the gRPC status (`ToGRPCStatus`: "the tensorflow and grpc status codes
align with each other"). The store here is the C++ store of the installed `ml_metadata` wheel,
called as its Python `MetadataStore` calls it (`metadata_store.py` `_pywrap_cc_call`: the method by
name, the serialized request in, the serialized response, message and code out), so requests and
answers are bytes the server never reinterprets.

    server = Server(sqlite_path, host='127.0.0.1', port=0)   # port 0: any free port
    server.start(); ...; server.stop()

Three RPCs of the service proto are not exposed by the wheel's extension
(GetParentContextsByContexts, GetChildrenContextsByContexts, GetLineageGraph); they answer
UNIMPLEMENTED, which is also what the real server answers for a method it lacks. KFP 2.17.0's
backend/src/v2 calls none of them.
"""
import threading
from concurrent import futures

import grpc
from ml_metadata.metadata_store.pywrap.metadata_store_extension import metadata_store as _cc
from ml_metadata.proto import metadata_store_pb2, metadata_store_service_pb2

SERVICE = 'ml_metadata.MetadataStoreService'
_CODES = {code.value[0]: code for code in grpc.StatusCode}


def _connection_config(sqlite_path):
    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = str(sqlite_path)
    config.sqlite.connection_mode = (
        metadata_store_pb2.SqliteMetadataSourceConfig.READWRITE_OPENCREATE)
    return config


class Serving:
    """start/stop and `address` of a grpc.server kept in self._grpc with self.host and
    self.port (shared by the harness's gRPC services)."""

    @property
    def address(self):
        return f'{self.host}:{self.port}'

    def start(self):
        self._grpc.start()
        return self

    def stop(self):
        self._grpc.stop(grace=None).wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class Server(Serving):
    """The gRPC service on host:port; `calls` counts the RPCs served, by method name."""

    def __init__(self, sqlite_path, host='127.0.0.1', port=0, workers=8):
        migration = metadata_store_pb2.MigrationOptions(enable_upgrade_migration=True)
        # metadata_store_server_main.cc: one store for the server's life, created (and its schema
        # initialised) before the service accepts calls.
        self._store = _cc.CreateMetadataStore(
            _connection_config(sqlite_path).SerializeToString(), migration.SerializeToString())
        self._lock = threading.Lock()
        self.calls = {}
        self.host = host
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
        service = metadata_store_service_pb2.DESCRIPTOR.services_by_name['MetadataStoreService']
        handlers = {m.name: grpc.unary_unary_rpc_method_handler(self._handler(m.name))
                    for m in service.methods}
        self._grpc.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),))
        self.port = self._grpc.add_insecure_port(f'{host}:{port}')
        if not self.port:
            raise RuntimeError(f'ML Metadata server: cannot listen on {host}:{port}')

    def _handler(self, name):
        method = getattr(_cc, name, None)

        def call(request: bytes, context):
            if method is None:
                context.abort(grpc.StatusCode.UNIMPLEMENTED, f'{name} is not served by this store')
            with self._lock:  # metadata_store_service_impl.cc: absl::WriterMutexLock l(&lock_)
                self.calls[name] = self.calls.get(name, 0) + 1
                response, message, code = method(self._store, request)
            if code != 0:
                context.abort(_CODES.get(code, grpc.StatusCode.UNKNOWN),
                              message.decode('utf-8', 'replace'))
            return response
        return call
