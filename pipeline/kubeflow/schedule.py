"""Scheduling on Kubeflow Pipelines: upload the compiled pipeline and keep one recurring run.

    client = connect(kubeflow)  -> kfp.Client with the namespace and credentials configured
    schedule(client, job_file, config, kubeflow)  -> the recurring run
    run(config, kubeflow, score, output)  -> runner.py --kubeflow: compile, schedule; exit code

Against open-source KFP's API server (tests/support/fake_kfp_server.py transcribes it), in
single-user mode or in multi-user mode, as a full Kubeflow install runs it: there every call needs a
user identity (a bearer token here) and a namespace the user may use (its Kubeflow profile).
"""
import hashlib
import json
import os
import sys
from typing import Tuple

import urllib3

from pipeline.definition import config as config_lib
from pipeline.definition import config_kubeflow
from pipeline.runs import logs


def _name_filter(name: str) -> str:
    return json.dumps({'predicates': [
        {'operation': 'EQUALS', 'key': 'display_name', 'stringValue': name}]})


class SchedulingError(Exception):
    """The KFP API server refused a step of scheduling (its message), or cannot be used as set."""


# No answer at all: urllib3's connection errors, and kfp.Client's healthz giving up after retries.
_UNREACHABLE = (TimeoutError, urllib3.exceptions.HTTPError)


def connect(kubeflow: config_kubeflow.KubeflowConfig):
    """A kfp.Client for kubeflow.endpoint with the configured namespace and credentials, passed
    the way kfp.Client takes them: a token as `existing_token` (sent as "Authorization: Bearer"),
    a token file as `credentials` (ServiceAccountTokenVolumeCredentials re-reads it for every
    request, as projected tokens rotate; without a path, $KF_PIPELINES_SA_TOKEN_PATH or
    /var/run/secrets/kubeflow/pipelines/token). ValueError when the token cannot be read,
    SchedulingError when the server does not answer."""
    import kfp  # only scheduling needs the client (and an API server)
    from kfp import client as kfp_client
    from kfp.client import set_volume_credentials
    options = {}
    if kubeflow.token_env:
        token = os.environ.get(kubeflow.token_env, '').strip()
        if not token:
            raise ValueError(f'token_env: the environment variable {kubeflow.token_env} holds no '
                             'token')
        options['existing_token'] = token
    elif kubeflow.token_file or kubeflow.service_account_token:
        path = (kubeflow.token_file or os.getenv(kfp_client.KF_PIPELINES_SA_TOKEN_ENV)
                or kfp_client.KF_PIPELINES_SA_TOKEN_PATH)
        try:
            with open(path) as handle:
                token = handle.read().strip()
        except OSError as error:
            raise ValueError(f'cannot read the KFP token file {path}: {error.strerror}') from None
        if not token:
            raise ValueError(f'the KFP token file {path} is empty')
        options['credentials'] = set_volume_credentials.ServiceAccountTokenVolumeCredentials(path)
    if kubeflow.namespace:
        options['namespace'] = kubeflow.namespace
    try:  # without a namespace, kfp.Client asks the server whether it runs multi-user
        return kfp.Client(host=kubeflow.endpoint, **options)
    except _UNREACHABLE as error:
        raise SchedulingError(f'cannot reach the KFP API at {kubeflow.endpoint}: {error}') from None


def _pipeline_version(client, spec_file: str, name: str, namespace) -> Tuple[str, str]:
    """Uploads the pipeline, or a new version of it; an identical spec reuses its version."""
    with open(spec_file, 'rb') as handle:
        # KFP caps version names at 127 characters (PipelineVersion.Name), pipeline names at 128.
        version_name = f'{name[:114]}-{hashlib.sha256(handle.read()).hexdigest()[:12]}'
    # Not client.get_pipeline_id: it lists shared pipelines only, never a namespace's own.
    found = client.list_pipelines(filter=_name_filter(name), namespace=namespace).pipelines or []
    if not found:
        pipeline_id = client.upload_pipeline(spec_file, pipeline_name=name,
                                             namespace=namespace).pipeline_id
        # Uploading a pipeline creates its first version; the newest is that one.
        versions = client.list_pipeline_versions(pipeline_id, sort_by='created_at desc',
                                                 page_size=1).pipeline_versions
        return pipeline_id, versions[0].pipeline_version_id
    pipeline_id = found[0].pipeline_id
    existing = client.list_pipeline_versions(
        pipeline_id, filter=_name_filter(version_name)).pipeline_versions or []
    if existing:
        return pipeline_id, existing[0].pipeline_version_id
    version = client.upload_pipeline_version(spec_file, version_name, pipeline_id=pipeline_id)
    return pipeline_id, version.pipeline_version_id


def _refusal(error) -> str:
    """The server's own words from a kfp_server_api ApiException: the gateway's google.rpc.Status
    details, or the upload handler's error_message, else the raw body."""
    try:
        body = json.loads(error.body)
        return (body.get('details') or [{}])[0].get('message') or body.get(
            'error_message') or body.get('message') or error.body
    except (TypeError, ValueError, AttributeError):
        return str(error.body or error.reason).strip()


def schedule(client, job_file: str, config: config_lib.PipelineConfig,
             kubeflow: config_kubeflow.KubeflowConfig):
    """Uploads the compiled pipeline and leaves exactly one recurring run named after it.

    KFP's v2beta1 API cannot edit a recurring run, so "update" is: create the new one (pointing
    at the new pipeline version), then delete the older ones of the same name in the experiment.
    Creating first means a failure never leaves the pipeline unscheduled. Returns the new run.
    In multi-user mode (a full Kubeflow install) the pipeline and experiment belong to the
    namespace (a recurring run to its experiment's); kfp.Client defaults it to the pod's own.
    SchedulingError with the server's message when it refuses a step.
    """
    # TFX: imported by run() in its log block
    from pipeline.kubeflow.compiler import write_pipeline_spec
    import kfp_server_api
    namespace = kubeflow.namespace or client.get_user_namespace() or None
    step = 'asking whether it runs in multi-user mode'
    try:
        if client.get_kfp_healthz().multi_user and not namespace:
            raise SchedulingError(
                'the KFP API server runs in multi-user mode (a full Kubeflow install): set the '
                'profile namespace (--namespace, or namespace in [kubeflow]) and credentials; '
                'without a namespace the pipeline would be uploaded as a shared one')
        pipeline_root = config.pipeline_root
        # The spec, and with an s3:// or minio:// root its platform spec (the object store's
        # Secret for every task), in the one form the API server reads both from.
        spec_file = write_pipeline_spec(job_file, pipeline_root, kubeflow)
        step = f'uploading pipeline {config.name}'
        pipeline_id, version_id = _pipeline_version(client, spec_file, config.name, namespace)
        step = f'getting experiment {kubeflow.experiment}'
        experiment = client.create_experiment(kubeflow.experiment, namespace=namespace)
        step = 'listing the recurring runs'
        older = client.list_recurring_runs(experiment_id=experiment.experiment_id, page_size=100,
                                           filter=_name_filter(config.name)).recurring_runs or []
        step = f'creating the recurring run "{kubeflow.schedule}"'
        created = client.create_recurring_run(
            experiment_id=experiment.experiment_id, job_name=config.name,
            cron_expression=kubeflow.schedule, max_concurrency=1, no_catchup=True,
            pipeline_id=pipeline_id, version_id=version_id, pipeline_root=pipeline_root)
        step = 'deleting the replaced recurring run'
        for run in older:
            client.delete_recurring_run(run.recurring_run_id)
    except kfp_server_api.ApiException as error:
        raise SchedulingError(f'{step}: the KFP API server answered {error.status} '
                              f'{error.reason}: {_refusal(error)}') from None
    except _UNREACHABLE as error:
        raise SchedulingError(f'{step}: no answer from the KFP API: {error}') from None
    return created


def run(config, kubeflow, score=None, output=None) -> int:
    """runner.py --kubeflow: compile the pipeline (or, given a ScoreConfig, the scoring pipeline
    under a name of its own; `output` is --output, whether given), then schedule it when an
    endpoint is set. Prints what it did; 0, 1 (the API server refused or is unreachable) or 2
    (settings only the compile can check)."""
    # TFX's INFO lines and TensorFlow's start-up lines (on import and compile) go to a log
    # beside the spec, one per compile, so the pipeline modules are imported in here; the console
    # keeps what this says.
    spec = config_kubeflow.spec_file(kubeflow, bool(score), output)
    log_file = os.path.splitext(os.path.abspath(spec))[0] + '.log'
    os.makedirs(os.path.dirname(log_file), exist_ok=True)
    open(log_file, 'w').close()
    try:
        with logs.to_file(log_file, logs.is_verbose()):
            from pipeline.kubeflow import score as score_lib
            from pipeline.kubeflow.compiler import compile_pipeline, write_pipeline_spec
            # The credentials are read before the compile, so a missing token fails at once.
            client = kubeflow.endpoint and connect(kubeflow)
            if score:
                job_file, config = score_lib.compile_for(config, kubeflow, score, output)
            else:
                job_file = compile_pipeline(config, kubeflow)
            # What a user uploads in the KFP UI, beside the job file (schedule() uploads it).
            write_pipeline_spec(job_file, config.pipeline_root, kubeflow)
    except ValueError as error:  # e.g. --trainer-workers
        print(f'error: {error}', file=sys.stderr)
        return 2
    except SchedulingError as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    print(f'Compiled {job_file}; log: {log_file}')
    if not score:
        from pipeline.kubeflow.compiler import run_end_text
        print(run_end_text(config) or 'No retention or notification (--keep-runs 0, no --notify '
              'or --on-finish)')
    if kubeflow.endpoint:
        try:
            recurring = schedule(client, job_file, config, kubeflow)
        except SchedulingError as error:
            print(f'error: {error}', file=sys.stderr)
            return 1
        print(f'Scheduled "{kubeflow.schedule}": recurring run {recurring.recurring_run_id}')
    return 0
