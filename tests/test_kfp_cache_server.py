"""The ml-pipeline API server's task service, the cache KFP's driver and launcher call
(tests/support/kfp_cache_server.py), against the rules it transcribes (task_server.go,
resource_manager.go CreateTask, task_store.go): what the real cluster's runs reach under the
name ml-pipeline (tests/support/real_kfp.py)."""
import json

import grpc
import pytest

import kfp_cache_server
import kfp_task_api


def _task(run_id='run-1', fingerprint='f1', execution='7', seconds=100, pipeline='pipeline/p',
          namespace='kubeflow'):
    task = kfp_task_api.Task(pipelineName=pipeline, namespace=namespace, runId=run_id,
                             mlmdExecutionID=execution, fingerprint=fingerprint)
    task.created_at.seconds = seconds
    return task


def test_the_cache_finds_the_newest_task_of_a_fingerprint_per_pipeline_and_namespace():
    with kfp_cache_server.Server() as server:
        client = kfp_task_api.Client(server.host, str(server.port))
        assert client.get_execution_cache('f1', 'pipeline/p', 'kubeflow') == ''
        # resource_manager.go CreateTask: the run must exist.
        with pytest.raises(kfp_task_api.CacheError, match='code = NotFound .*run-1'):
            client.create_execution_cache(_task())
        server.service.add_run('run-1')
        server.service.add_run('run-2')
        client.create_execution_cache(_task(execution='7', seconds=100))
        client.create_execution_cache(_task(run_id='run-2', execution='9', seconds=200))
        client.create_execution_cache(_task(execution='8', seconds=150, pipeline='pipeline/q'))
        client.create_execution_cache(_task(execution='6', seconds=300, namespace='other'))
        assert client.get_execution_cache('f1', 'pipeline/p', 'kubeflow') == '9'
        assert client.get_execution_cache('f1', 'pipeline/q', 'kubeflow') == '8'
        assert client.get_execution_cache('f2', 'pipeline/p', 'kubeflow') == ''
        # task_server.go validateCreateTaskRequest.
        with pytest.raises(kfp_task_api.CacheError,
                           match='code = InvalidArgument .*must specify FingerPrint'):
            client.create_execution_cache(_task(fingerprint=''))
        no_time = _task()
        no_time.ClearField('created_at')
        with pytest.raises(kfp_task_api.CacheError, match='must specify CreatedAt'):
            client.create_execution_cache(no_time)
        client.close()


def test_the_task_list_refuses_an_unknown_filter_key_and_pages_in_order():
    service = kfp_cache_server.TaskService()
    service.add_run('r')
    for second in (5, 3, 9):
        service.create_task(kfp_task_api.CreateTaskRequest(task=_task('r', seconds=second)))
    with pytest.raises(kfp_cache_server.ApiError, match='no support for key "color"') as raised:
        service.list_tasks(kfp_task_api.ListTasksRequest(filter=json.dumps(
            {'predicates': [{'op': 'EQUALS', 'key': 'color', 'stringValue': 'x'}]})))
    assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
    first = service.list_tasks(kfp_task_api.ListTasksRequest(page_size=2))
    assert [t.created_at.seconds for t in first.tasks] == [3, 5] and first.total_size == 3
    rest = service.list_tasks(kfp_task_api.ListTasksRequest(page_size=2,
                                                            page_token=first.next_page_token))
    assert [t.created_at.seconds for t in rest.tasks] == [9] and not rest.next_page_token
