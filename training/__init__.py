"""The training library: data, model training loop, export (TensorFlow and Keras only).

No TFX, Beam, Kubernetes or subprocess imports (tests/test_import_rules.py): the TFX adapter is
components/trainer/, and how a job runs (local worker processes, a TFJob) is launch/.
"""
