"""Custom TFX components of the pipeline: one sub-package per stage.

A process started by one that uses an object store (Beam's workers, which import our DoFns from
here) configures S3 the same way before any stage's code runs: core/storage.py.
"""
from core import storage as _storage

_storage.enable_from_env()
