"""The Kubeflow adapter: `runner.py --kubeflow` and what runs in each task, all that only
Kubeflow needs. Nothing outside this folder imports it except runner.py
(tests/test_import_rules.py); launch/launchers.py names its launcher by path.

compiler.py compiles the pipeline definition into a KFP v2 spec (create_components with
Kubeflow's Environment), score.py the scoring pipeline; schedule.py uploads it and keeps one
recurring run. In the cluster every task runs entrypoint.py (`python -m
pipeline.kubeflow.entrypoint`), which does the ingestion driver's work open-source KFP skips and
writes task_record.py's record beside the task's outputs; the Pusher's task then ends the run
(run_end.py), applying retention from those records (retention.py). jobs/ trains on Kubernetes
(--trainer-workers): a Trainer v2 TrainJob, else a TFJob. It imports pipeline.definition,
pipeline.runs and pipeline.report, never pipeline.local.
"""
