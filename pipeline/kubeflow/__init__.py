"""The Kubeflow Pipelines orchestrator: `runner.py --kubeflow` and what runs in each task.

compiler.py compiles the pipeline definition into a KFP v2 spec, score.py the scoring pipeline;
schedule.py uploads it and keeps one recurring run. In the cluster every task runs
entrypoint.py (`python -m pipeline.kubeflow.entrypoint`), which writes task_record.py's record
beside the task's outputs; the Pusher's task then ends the run (run_end.py), applying retention
from those records (retention.py). It imports pipeline.definition and pipeline.runs, never
pipeline.local.
"""
