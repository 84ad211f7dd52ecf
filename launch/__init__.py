"""How a training job runs: the launchers by name (launchers.py), training on this machine
(local.py: this process or worker processes), the sequence every multi-worker launcher follows
(sequence.py) and the entry point every worker runs (worker.py). Kubernetes' launcher is the
Kubeflow adapter's (pipeline/kubeflow/jobs/).

No TFX and no pipeline stage imports (tests/test_import_rules.py).
"""
