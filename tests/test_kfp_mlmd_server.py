"""The ML Metadata gRPC server of the KFP harness (tests/support/kfp_mlmd_server.py), through the
library's own gRPC client: `MetadataStore(MetadataStoreClientConfig(host, port))`.
"""
import threading

import grpc
import pytest
from ml_metadata import errors
from ml_metadata.metadata_store import metadata_store
from ml_metadata.proto import metadata_store_pb2, metadata_store_service_pb2

import kfp_mlmd_server


def _client(server):
    return metadata_store.MetadataStore(
        metadata_store_pb2.MetadataStoreClientConfig(host=server.host, port=server.port))


def test_rpcs_reach_the_sqlite_store_and_errors_keep_their_code(tmp_path):
    db = tmp_path / 'mlmd.sqlite'
    with kfp_mlmd_server.Server(db) as server:
        store = _client(server)
        type_id = store.put_context_type(metadata_store_pb2.ContextType(name='system.PipelineRun'))
        [ctx] = store.put_contexts([metadata_store_pb2.Context(type_id=type_id, name='run-1')])
        assert store.get_context_by_type_and_name('system.PipelineRun', 'run-1').id == ctx
        # The store refuses a second context of that name: AlreadyExists crosses gRPC intact.
        with pytest.raises(errors.AlreadyExistsError):
            store.put_contexts([metadata_store_pb2.Context(type_id=type_id, name='run-1')])
        with pytest.raises(errors.NotFoundError):
            store.get_context_type('no-such-type')
        assert server.calls['PutContexts'] == 2
    # The store is the file: a new server over it sees what the first one wrote.
    with kfp_mlmd_server.Server(db) as again:
        assert _client(again).get_context_by_type_and_name('system.PipelineRun', 'run-1').id == ctx


def test_concurrent_writers_get_distinct_ids(tmp_path):
    with kfp_mlmd_server.Server(tmp_path / 'mlmd.sqlite') as server:
        type_id = _client(server).put_execution_type(
            metadata_store_pb2.ExecutionType(name='system.ContainerExecution'))
        ids, failures = [], []

        def put(i):
            try:
                store = _client(server)
                for j in range(10):
                    execution = metadata_store_pb2.Execution(type_id=type_id, name=f'e{i}-{j}')
                    ids.extend(store.put_executions([execution]))
            except Exception as exc:  # collected: a thread's exception would otherwise vanish
                failures.append(exc)
        threads = [threading.Thread(target=put, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures
        assert len(set(ids)) == 40
        assert len(_client(server).get_executions()) == 40


def test_a_method_the_wheel_lacks_answers_unimplemented(tmp_path):
    with kfp_mlmd_server.Server(tmp_path / 'mlmd.sqlite') as server:
        channel = grpc.insecure_channel(server.address)
        call = channel.unary_unary(f'/{kfp_mlmd_server.SERVICE}/GetLineageGraph')
        with pytest.raises(grpc.RpcError) as raised:
            call(metadata_store_service_pb2.GetLineageGraphRequest().SerializeToString())
        assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
        channel.close()
