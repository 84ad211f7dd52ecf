"""The pipeline definition: the typed config and the factories that turn it into TFX pipelines.

The bottom of pipeline/: it imports only core/, components/, training/ and models/, and every
other package here builds on it. config.py (with config_kubeflow.py and config_retraining.py) is
the one PipelineConfig; config_file.py reads it from TOML and presets.py from runner.py's flags;
cli_docs.py writes docs/cli.md from the same settings classes. factory.py builds the training
pipeline's components (`create_pipeline`), scoring.py the scoring pipeline's; beam_mode.py
decides how Beam runs for an input. Nothing here runs a pipeline.
"""
