"""Compiled PipelineJobs cut down for a test: `only_tasks(job, 'ImportSchemaGen')` runs one task of
the real compiled spec, as compiled, through a KFP driver (tests/support/kfp_launcher.py); and
what every task of a run on an object store must have got (`assert_got_the_store`)."""
from google.protobuf import json_format


def only_tasks(job, *tasks):
    """The job with only these tasks of its DAG (each as compiled)."""
    spec = json_format.MessageToDict(job.pipeline_spec)
    spec['root']['dag']['tasks'] = {name: task for name, task in
                                    spec['root']['dag']['tasks'].items() if name in tasks}
    pruned = type(job)()
    pruned.CopyFrom(job)
    pruned.pipeline_spec.Clear()
    pruned.pipeline_spec.update(spec)
    return pruned


def assert_got_the_store(record, endpoint: str, secret_key: str) -> None:
    """The task's own process (its log, record.pod.log_file) got the compiled endpoint and the
    namespace Secret's keys (core/storage.py describe names them), and no key's value is in
    the log."""
    with open(record.pod.log_file) as log:
        text = log.read()
    assert f'S3 endpoint {endpoint}, region us-east-1, keys: AWS_ACCESS_KEY_ID, ' \
           'AWS_SECRET_ACCESS_KEY' in text, text[-2000:]
    assert secret_key not in text
