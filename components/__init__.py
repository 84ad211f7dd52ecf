"""Custom TFX components of the pipeline: one sub-package per stage."""
