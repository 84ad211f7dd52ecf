"""Compiled PipelineJobs cut down for a test: `only_tasks(job, 'ImportSchemaGen')` runs one task of
the real compiled spec, as compiled, through a KFP driver (tests/support/kfp_launcher.py)."""
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
