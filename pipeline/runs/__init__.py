"""What happens around a run, for both orchestrators: reading it back, saying how it ended,
cleaning up after it, and the output folder's commands.

summary.py reads a run back from ML Metadata, stages.py names each stage and its key figure,
summary_text.py puts the run into words, notify.py and notify_facts.py tell people how it
ended; retention.py and retention_plan.py delete what older runs left, rollback.py and
approval.py change what is served; runlock.py is the output folder's lock, logs.py where a run's
output goes, run_files.py what a run's own files are called. It imports pipeline.definition only;
the report and both orchestrators build on it.
"""
