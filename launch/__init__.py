"""How a training job runs: local worker processes (local.py) or a Kubernetes TFJob (tfjob.py).

No TFX and no pipeline stage imports (tests/test_import_rules.py).
"""
