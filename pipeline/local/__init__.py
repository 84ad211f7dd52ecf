"""The local orchestrator: `runner.py --local` and `runner.py --score` on this machine.

run.py runs the training pipeline with TFX's LocalDagRunner under the output folder's lock, with
its log, summary, report, retention and notification; score.py does the same for the scoring
pipeline; console.py is the line per stage people watch. It imports pipeline.definition,
pipeline.runs and pipeline.report, never pipeline.kubeflow.
"""
