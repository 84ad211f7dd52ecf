"""The pipeline: one typed config (config.py) and one factory (pipeline.py)."""
