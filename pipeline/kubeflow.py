"""Kubeflow Pipelines: compile create_pipeline() to a KFP v2 spec, and schedule it.

    compile_pipeline(config, kubeflow)  -> the PipelineJob JSON file (TFX's KubeflowV2DagRunner)
    write_pipeline_spec(job_file, root)  -> the bare PipelineSpec the KFP API server takes
(pipeline/kubeflow_schedule.py uploads it and keeps one recurring run.)

The pipeline is the same one `runner.py --local` runs; only the environment differs:
- paths inside this checkout (embedded data, curated schema, setup.py) become the same files in
  the image, under KubeflowConfig.image_workdir;
- the trainer's task gets its resources through TFX's own `with_platform_config`, which the
  compiler copies into the task's container `resources` (both the numeric fields Vertex AI reads
  and the string fields open-source KFP prefers); with `trainer_workers` > 1 those resources go
  to each pod of a TFJob the task creates instead (launch/tfjob.py), and the task
  itself, which only waits, gets 1 core and 4 GB, and ingestion leaves a train shard per pod;
- every task runs our entry point, `python -m pipeline.kfp_entrypoint`, with the arguments TFX
  compiles: it prepares the ExecutorInput open-source KFP's driver hands over, then runs TFX's
  own run_executor (see that module); the ExampleGen's pre-cache-check hook stays TFX's driver,
  which only Vertex AI runs;
- PipelineSpec schema 2.1.0, the only one open-source KFP's API server accepts: parameters are
  `runtimeValue.constant` with a `parameterType`, and every task carries its declared inputs
  (`--json_serialized_inputs_spec_args`), from which the entry point types its input artifacts;
- one documented post-processing step: the ingestion task is compiled uncached unless
  `cache_ingestion` is set (open-source KFP ignores TFX's pre-cache-check hook, see README).

The pipeline root must be gs:// (config.check_kubeflow_root, from runner.py --kubeflow); this module
compiles any root, so the tests can run the compiled spec on local folders.
"""
import dataclasses
import json
import os
from typing import Any, Dict

from kfp.pipeline_spec import pipeline_spec_pb2
from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner

from components.ingest.component import ImageExampleGen
from launch import tfjob
from components.trainer.component import ImageTrainer
from pipeline import beam_mode
from pipeline import config as config_lib
from pipeline import pipeline as pipeline_lib

# The trainer's task when a TFJob trains: TFX, TensorFlow and polling, no GPU.
_WATCHER_CPU, _WATCHER_MEMORY_GB = 1.0, 4.0
# Every task's container command (the image's interpreter); pipeline/kfp_entrypoint.py.
ENTRYPOINT = ['python', '-m', 'pipeline.kfp_entrypoint']
_ResourceSpec = pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec.ResourceSpec


def to_image_path(path: str, image_workdir: str) -> str:
    """A path inside this checkout, as seen in the image; any other path is left as it is."""
    relative = os.path.relpath(os.path.abspath(path), config_lib.REPO_ROOT)
    if config_lib.is_uri(path) or relative.startswith('..'):
        return path
    return os.path.join(image_workdir, relative)


def for_image(config: config_lib.PipelineConfig, workdir: str) -> config_lib.PipelineConfig:
    """The config with checkout paths rewritten to the image's copy of the checkout."""
    def rewrite_arg(arg: str) -> str:
        flag, sep, value = arg.partition('=')
        return flag + sep + to_image_path(value, workdir) if flag == '--setup_file' else arg
    return dataclasses.replace(
        config, check_paths=False,
        schema_path=config.schema_path and to_image_path(config.schema_path, workdir),
        beam_args=tuple(rewrite_arg(a) for a in beam_mode.resolve(
            config.beam_args, config.ingest.data_dir, (config_lib.SETUP_FILE_ARG,))[0]),
        ingest=dataclasses.replace(config.ingest,
                                   data_dir=to_image_path(config.ingest.data_dir, workdir)),
        train=dataclasses.replace(config.train, model_weights=config.train.model_weights
                                  and to_image_path(config.train.model_weights, workdir)))


def trainer_resources(kubeflow: config_lib.KubeflowConfig) -> _ResourceSpec:
    if kubeflow.trainer_workers > 1:  # the workers get the resources; the task only waits
        cpu, memory = _WATCHER_CPU, _WATCHER_MEMORY_GB
    else:
        cpu, memory = kubeflow.trainer_cpu, kubeflow.trainer_memory_gb
    spec = _ResourceSpec(cpu_limit=cpu, memory_limit=memory, cpu_request=cpu,
                         memory_request=memory, resource_cpu_limit=f'{cpu:g}',
                         resource_memory_limit=f'{memory:g}G', resource_cpu_request=f'{cpu:g}',
                         resource_memory_request=f'{memory:g}G')
    if kubeflow.trainer_gpus and kubeflow.trainer_workers == 1:
        spec.accelerator.type = spec.accelerator.resource_type = kubeflow.gpu_type
        spec.accelerator.count = kubeflow.trainer_gpus
        spec.accelerator.resource_count = str(kubeflow.trainer_gpus)
    return spec


def build_job(config: config_lib.PipelineConfig,
              kubeflow: config_lib.KubeflowConfig) -> Dict[str, Any]:
    """Compiles the pipeline; returns the PipelineJob as a JSON-ready dict."""
    pipeline = pipeline_lib.create_pipeline(for_image(config, kubeflow.image_workdir))
    workers = kubeflow.trainer_workers
    for component in pipeline.components:
        if isinstance(component, ImageExampleGen) and workers > 1:
            # Room for every pod of the TFJob to read train shards of its own (FILE sharding),
            # as create_components leaves for TrainConfig.workers.
            props = component.exec_properties
            props['num_shards'] = props['num_shards'] and max(props['num_shards'], workers)
            props['min_train_shards'] = max(props.get('min_train_shards') or 1, workers)
        if isinstance(component, ImageTrainer):
            component.with_platform_config(trainer_resources(kubeflow))
            if kubeflow.trainer_workers > 1:  # each worker pod gets the trainer's resources
                component.with_tfjob(tfjob.TFJobSpec(
                    workers=kubeflow.trainer_workers, image=kubeflow.image,
                    cpu=kubeflow.trainer_cpu, memory_gb=kubeflow.trainer_memory_gb,
                    gpus=kubeflow.trainer_gpus, gpu_resource=kubeflow.gpu_type,
                    service_account=kubeflow.trainer_service_account))
    runner = kubeflow_v2_dag_runner.KubeflowV2DagRunner(
        kubeflow_v2_dag_runner.KubeflowV2DagRunnerConfig(
            display_name=config.name, default_image=kubeflow.image, default_commands=ENTRYPOINT,
            # Open-source KFP's API server accepts schema 2.1.0 only (README, Kubeflow
            # compatibility); 2.1 also compiles parameters as runtimeValue.constant.
            use_pipeline_spec_2_1=True))
    job = runner.run(pipeline, write_out=False)
    if not kubeflow.cache_ingestion:
        for component in pipeline.components:
            if isinstance(component, ImageExampleGen):
                task = job['pipelineSpec']['root']['dag']['tasks'][component.id]
                task['cachingOptions'] = {}  # enableCache false (proto3 JSON omits defaults)
    return job


def compile_pipeline(config: config_lib.PipelineConfig,
                     kubeflow: config_lib.KubeflowConfig) -> str:
    """Writes the PipelineJob JSON to kubeflow.output_file; returns its path."""
    job = build_job(config, kubeflow)
    folder = os.path.dirname(os.path.abspath(kubeflow.output_file))
    os.makedirs(folder, exist_ok=True)
    with open(kubeflow.output_file, 'w') as handle:
        json.dump(job, handle, indent=2, sort_keys=True)
    return kubeflow.output_file


def write_pipeline_spec(job_file: str, pipeline_root: str) -> str:
    """The bare PipelineSpec beside the job file: what the KFP API server accepts on upload
    (it rejects a PipelineJob wrapper), with the pipeline root as its default."""
    with open(job_file) as handle:
        spec = json.load(handle)['pipelineSpec']
    spec['defaultPipelineRoot'] = pipeline_root
    path = os.path.splitext(job_file)[0] + '.spec.json'
    with open(path, 'w') as handle:
        json.dump(spec, handle, indent=2, sort_keys=True)
    return path
