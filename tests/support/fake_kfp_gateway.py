"""The gRPC services of the fake KFP API server (fake_kfp_server.py) as the grpc-gateway exposes
them: pipelines and versions (list, get), experiments (list, create, get), recurring runs (list,
create, get, delete). Test support only.

Each rule names its source in kubeflow/pipelines master, backend/src/apiserver/server/. In
multi-user mode every call checks the namespace the real one checks (the can*Access functions),
through the handler's IsAuthorized. Returns the JSON payload, None for a route not modelled, or
raises KfpError.
"""
import json
import re
import time
from typing import Any, Dict, List

from fake_kfp_rules import KfpError, check_kubernetes_configs, invalid, parse_cron


def _matches(item: Dict[str, Any], query: Dict[str, List[str]]) -> bool:
    if 'filter' not in query:
        return True
    for predicate in json.loads(query['filter'][0])['predicates']:
        # kfp.Client sends the enum's number (1), JSON the name; both mean EQUALS.
        assert predicate['operation'] in ('EQUALS', 1) and predicate['key'] == 'display_name'
        if item['display_name'] != predicate['stringValue']:
            return False
    return True


def _listing(key: str, items: List[Dict[str, Any]]) -> Dict[str, Any]:
    # common/utils.go CustomMarshaler: EmitUnpopulated false, so an empty list is omitted.
    return {key: items, 'total_size': len(items)} if items else {}


def _internal(message: str) -> KfpError:
    # common/util/error.go NewInternalServerError: the external message is always this.
    return KfpError('Internal', 'Internal Server Error', f'InternalServerError: {message}')


def route(handler, method: str, path: str, query, body):
    state, arg = handler.state, lambda key: query.get(key, [''])[0]
    stamp = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    pipeline_path = re.fullmatch(r'/pipelines/([^/]+)(/versions)?', path)
    experiment_path = re.fullmatch(r'/experiments/([^/]+)', path)
    run_path = re.fullmatch(r'/recurringruns/([^/]+)', path)

    if (method, path) == ('GET', '/pipelines'):
        # pipeline_server.go listPipelines -> canAccessPipeline: listing shared pipelines (no
        # namespace) is not checked; a namespace's pipelines are.
        namespace = handler._namespace(arg('namespace'))
        if namespace:
            handler._authorize(namespace, 'list', 'pipelines')
        return _listing('pipelines', [p for p in state.pipelines if _matches(p, query)
                                      and p.get('namespace', '') == namespace])
    if method == 'GET' and pipeline_path:
        pipeline = state.find(state.pipelines, 'pipeline_id', pipeline_path.group(1), 'Pipeline')
        if pipeline.get('namespace'):  # canAccessPipeline(id, get / list)
            handler._authorize(pipeline['namespace'], 'get' if not pipeline_path.group(2)
                               else 'list', 'pipelines', pipeline['name'])
        if not pipeline_path.group(2):
            return pipeline
        # listPipelineVersions; sort_by and page_size as kfp.Client uses them.
        found = [v for v in state.versions
                 if v['pipeline_id'] == pipeline['pipeline_id'] and _matches(v, query)]
        if arg('sort_by') == 'created_at desc':
            found = found[::-1]
        return _listing('pipeline_versions', found[:int(arg('page_size') or 10)])

    if (method, path) == ('GET', '/experiments'):
        namespace = handler._namespace(arg('namespace'))
        _can_access(handler, 'experiments', namespace, 'list')
        return _listing('experiments', [e for e in state.experiments if _matches(e, query)
                                        and e.get('namespace', '') == namespace])
    if (method, path) == ('POST', '/experiments'):
        # api_converter.go toModelExperiment, experiment_server.go createExperiment
        name = body.get('display_name', '')
        if not name or len(name) > 128:  # ValidateModel (Experiment.Name) is wrapped as internal
            raise _internal('Failed to convert API experiment to model experiment')
        namespace = handler._namespace(body.get('namespace', ''))
        _can_access(handler, 'experiments', namespace, 'create', name)
        if any(e['display_name'] == name and e.get('namespace', '') == namespace
               for e in state.experiments):  # unique index idx_name_namespace
            raise KfpError('AlreadyExists', f'Failed to create a new experiment. The name {name} '
                           'already exists. Please specify a new name')
        experiment = dict(experiment_id=state.new_id('experiment'), display_name=name,
                          created_at=stamp, storage_state='AVAILABLE',
                          **({'namespace': namespace} if namespace else {}))
        state.experiments.append(experiment)
        return experiment
    if method == 'GET' and experiment_path:
        experiment = state.find(state.experiments, 'experiment_id', experiment_path.group(1),
                                'Experiment')
        _can_access(handler, 'experiments', experiment.get('namespace', ''), 'get')
        return experiment

    if (method, path) == ('GET', '/recurringruns'):
        # job_server.go listJobs: the experiment's namespace wins over the query's.
        namespace = handler._namespace(arg('namespace'))
        if arg('experiment_id'):
            namespace = state.find(state.experiments, 'experiment_id', arg('experiment_id'),
                                   'Experiment').get('namespace', '')
        _can_access(handler, 'jobs', namespace, 'list')
        key, value = (('experiment_id', arg('experiment_id')) if arg('experiment_id')
                      else ('namespace', namespace))
        return _listing('recurringRuns', [r for r in state.recurring_runs
                                          if r.get(key, '') == value and _matches(r, query)])
    if (method, path) == ('POST', '/recurringruns'):
        return _create_recurring_run(handler, body, stamp)
    if method in ('GET', 'DELETE') and run_path:
        # job_server.go canAccessJob(id) then resource_manager.go GetJob / DeleteJob.
        run = state.find(state.recurring_runs, 'recurring_run_id', run_path.group(1), 'Job')
        _can_access(handler, 'jobs', run.get('namespace', ''), method.lower(),
                    run['display_name'])
        if method == 'GET':
            return run
        state.recurring_runs.remove(run)
        return {}
    return None


def _can_access(handler, resource: str, namespace: str, verb: str, name: str = ''):
    """experiment_server.go canAccessExperiment, job_server.go canAccessJob: in multi-user
    mode a namespace is required, then the request is authorized in it."""
    if not handler.state.multi_user:
        return
    if not namespace:
        raise invalid({'experiments': 'An experiment', 'jobs': 'a recurring run'}[resource] +
                      ' cannot have an empty namespace in multi-user mode')
    handler._authorize(namespace, verb, resource, name)


def _create_recurring_run(handler, body, stamp):
    """job_server.go CreateRecurringRun: api_converter.go toModelJob, then createJob, then
    resource_manager.go CreateJob (the pinned pipeline version must exist)."""
    state = handler.state
    name = body.get('display_name', '')
    if not name:
        raise _internal("Recurring run's name cannot be empty")
    concurrency = int(body.get('max_concurrency', 0))  # int64: a JSON number or string
    cron = (body.get('trigger') or {}).get('cron_schedule', {}).get('cron')
    try:
        if concurrency > 10 or concurrency < 1:
            raise invalid('Max concurrency of a recurring run must be at least 1 and at most '
                          f'10. Received {concurrency}')
        if cron is not None:
            try:
                parse_cron(cron)
            except ValueError as error:
                raise invalid('Schedule cron is not a supported format(https://godoc.org/'
                              f'github.com/robfig/cron). Error: {error}')
    except KfpError as error:
        raise error.wrap('Failed to create a recurring run due to conversion error')
    # resource_manager.go GetValidExperimentNamespacePair
    if state.multi_user and not body.get('experiment_id'):
        raise invalid('Experiment id can not be empty in multi-user mode')
    experiment = state.find(state.experiments, 'experiment_id', body.get('experiment_id'),
                            'Experiment')
    namespace = experiment.get('namespace', '')
    if state.multi_user and not namespace:
        raise invalid('Recurring run cannot have an empty namespace in multi-user mode')
    _can_access(handler, 'jobs', namespace, 'create', name)
    reference = body.get('pipeline_version_reference') or {}
    version = next((v for v in state.versions
                    if v['pipeline_version_id'] == reference.get('pipeline_version_id')), None)
    if version is None or version['pipeline_id'] != reference.get('pipeline_id',
                                                                  version['pipeline_id']):
        raise _internal('Failed to create a recurring run with an invalid pipeline spec manifest')
    check_kubernetes_configs(version['pipeline_spec'])  # compiling it: tmpl.ScheduledWorkflow
    created = dict(body, recurring_run_id=state.new_id('recurring-run'), created_at=stamp,
                   status='ENABLED' if body.get('mode') == 'ENABLE' else 'DISABLED',
                   **({'namespace': namespace} if namespace else {}))
    state.recurring_runs.append(created)
    return created
