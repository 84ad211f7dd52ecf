"""The pipeline's definition and everything that runs it, in packages that import downwards only.

definition/ (the typed config and the factories) is the bottom; runs/ (reading a run back, its
summary, notification, retention, rollback) and report/ build on it; local/ and kubeflow/, the
two orchestrators, on all of them. docs/pipeline.md draws the packages and their imports;
tests/test_import_rules.py enforces them.
"""
