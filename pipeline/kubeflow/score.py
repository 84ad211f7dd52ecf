"""The batch-scoring pipeline compiled for Kubeflow Pipelines (runner.py --kubeflow --score).

The same four tasks as a local `--score` (pipeline/definition/scoring.py), compiled as the training
pipeline is (pipeline/kubeflow/compiler.py: our entry point in every task, PipelineSpec 2.1,
checkout paths rewritten to the image's copy). Differences from a local run, by design:
- the version is resolved when the ScoringModel task runs (the served one unless --version),
  so a compiled spec scores with whatever is served when it runs;
- ingestion stores the input as the `[ingest]` settings say (the model's input spec is not
  read at compile time): the served model must have been trained with the same settings;
- the result is the ScoreWriter task's `predictions` artifact (its folder under the pipeline
  root: predictions.jsonl, predictions.csv, quarantine.jsonl, summary.json), whose
  `num_scored`, `num_quarantined` and `model_version` properties the KFP UI shows;
- no task is cached (the compiled spec has caching off everywhere): a run always scores.
With --endpoint and --schedule it is uploaded and scheduled as `<name>-score` (nightly batch
predictions), beside the training pipeline's schedule, never replacing it.
"""
import dataclasses
import json
import os
from typing import Any, Dict, Optional, Tuple

from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner

from pipeline.definition import config as config_lib
from pipeline.definition import config_kubeflow
from pipeline.kubeflow import compiler
from pipeline.definition import scoring


def build_job(config: config_lib.PipelineConfig, kubeflow_config: config_kubeflow.KubeflowConfig,
              score: config_lib.ScoreConfig) -> Dict[str, Any]:
    """Compiles the scoring pipeline; returns the PipelineJob as a JSON-ready dict."""
    workdir = kubeflow_config.image_workdir
    # The scored input is what the Beam mode is chosen from (pipeline/definition/beam_mode.py).
    config = dataclasses.replace(config, ingest=dataclasses.replace(
        config.ingest, data_dir=score.input_dir))
    score = dataclasses.replace(score, output_dir='',
                                input_dir=compiler.to_image_path(score.input_dir, workdir))
    pipeline = scoring.create_pipeline(compiler.for_image(config, workdir), score)
    runner = kubeflow_v2_dag_runner.KubeflowV2DagRunner(
        kubeflow_v2_dag_runner.KubeflowV2DagRunnerConfig(
            display_name=config.name + scoring.SUFFIX, default_image=kubeflow_config.image,
            default_commands=compiler.ENTRYPOINT, use_pipeline_spec_2_1=True))
    job = runner.run(pipeline, write_out=False)
    # An s3:// or minio:// root: the object store's endpoint and region in every task, as in
    # the training pipeline (its Secret: kubeflow.write_pipeline_spec's platform spec).
    compiler.add_object_store_env(job, kubeflow_config, config.pipeline_root)
    return job


def compile_pipeline(config: config_lib.PipelineConfig,
                     kubeflow_config: config_kubeflow.KubeflowConfig,
                     score: config_lib.ScoreConfig) -> str:
    """Writes the scoring PipelineJob JSON to kubeflow_config.output_file; returns its path."""
    job = build_job(config, kubeflow_config, score)
    os.makedirs(os.path.dirname(os.path.abspath(kubeflow_config.output_file)), exist_ok=True)
    with open(kubeflow_config.output_file, 'w') as handle:
        json.dump(job, handle, indent=2, sort_keys=True)
    return kubeflow_config.output_file


def compile_for(config: config_lib.PipelineConfig, kubeflow_config: config_kubeflow.KubeflowConfig,
                score: config_lib.ScoreConfig, output: Optional[str]
                ) -> Tuple[str, config_lib.PipelineConfig]:
    """runner.py --kubeflow --score: (the compiled file, the config to schedule it with). The
    file defaults to config_kubeflow.SCORE_SPEC_FILE, not the training pipeline's; the config is
    named `<name>-score`, so scheduling it never replaces the training pipeline's recurring run."""
    kubeflow_config = dataclasses.replace(
        kubeflow_config, output_file=config_kubeflow.spec_file(kubeflow_config, True, output))
    return (compile_pipeline(config, kubeflow_config, score),
            dataclasses.replace(config, name=config.name + scoring.SUFFIX))
