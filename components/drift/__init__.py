"""Drift stage: the new span's data compared with the data the served model was trained on."""
