"""Definitions shared by several stages, so that no stage imports another.

Most modules import no TFX (the training library may use those); served_baseline.py reads a
TFX artifact and is for the stages only (tests/test_import_rules.py checks both).
"""
