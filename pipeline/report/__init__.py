"""The run report: readers of the run's artifacts, matplotlib pictures, and the HTML page.

It reads the run as pipeline.runs has it (summary, stages, notify_facts, rollback) and imports
pipeline.definition and pipeline.runs only; the local orchestrator writes it.
"""
