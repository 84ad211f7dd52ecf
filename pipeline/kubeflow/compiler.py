"""Kubeflow Pipelines: compile create_pipeline() to a KFP v2 spec.

    compile_pipeline(config, kubeflow)  -> the PipelineJob JSON file (TFX's KubeflowV2DagRunner)
    write_pipeline_spec(job_file, root, kubeflow)  -> what the KFP API server takes on upload
(pipeline/kubeflow/schedule.py uploads it and keeps one recurring run.)

The pipeline is the same one `runner.py --local` runs; only the environment differs:
- paths inside this checkout (embedded data, curated schema, setup.py) become the same files in
  the image, under KubeflowConfig.image_workdir;
- the trainer's task gets its resources through TFX's own `with_platform_config`, which the
  compiler copies into the task's container `resources` (both the numeric fields Vertex AI reads
  and the string fields open-source KFP prefers); with `trainer_workers` > 1 those resources go
  to each pod of the TrainJob (Trainer v2) or TFJob the task creates instead (the compiled
  `tfjob` property, a launch/tfjob.py TFJobSpec naming the Trainer v2 runtime too; which API
  is used is discovered at run time, launch/cluster.py), and the task
  itself, which only waits, gets 1 core and 4 GB, and ingestion leaves a train shard per pod;
- every task runs our entry point, `python -m pipeline.kubeflow.entrypoint`, with the arguments TFX
  compiles: it prepares the ExecutorInput open-source KFP's driver hands over, then runs TFX's
  own run_executor (see that module); the ExampleGen's pre-cache-check hook stays TFX's driver,
  which only Vertex AI runs;
- PipelineSpec schema 2.1.0, the only one open-source KFP's API server accepts: parameters are
  `runtimeValue.constant` with a `parameterType`, and every task carries its declared inputs
  (`--json_serialized_inputs_spec_args`), from which the entry point types its input artifacts;
- documented post-processing steps: the ingestion task is compiled uncached unless
  `cache_ingestion` is set (open-source KFP ignores TFX's pre-cache-check hook;
  docs/kubeflow.md); with an s3:// or minio:// root every task gets the object store
  (object_store_env, platform_spec below); and with --keep-runs, --notify or --on-finish the
  Pusher's task ends the run (pipeline/kubeflow/run_end.py: its settings in the Pusher's
  custom_config, the Pusher uncached so that it runs every time), and with --keep-runs K > 0
  every task is compiled uncached (`uncache`: KFP's cache would hand over what retention
  deleted).

The object store on Kubeflow. Every TFX task writes its artifacts itself, so every task
container needs the store's endpoint and credentials. The endpoint and region are plain
variables, compiled into each executor's container `env` of the PipelineSpec (the driver copies
them into the pod: backend/src/v2/driver/driver.go initPodSpecPatch, `container.GetEnv()`). The
credentials are a Kubernetes Secret, and KFP's only way to put one into a task's environment is
the Kubernetes platform spec: one KubernetesExecutorConfig per executor label with `secretAsEnv`
(kfp-kubernetes' kubernetes_executor_config.proto). Where KFP reads it:
- the API server takes it only as a second YAML document of the uploaded file, beside the
  PipelineSpec (backend/src/apiserver/template/v2_template.go NewV2SpecTemplate: each document
  that parses strictly as a PlatformSpec with a `kubernetes` platform; any other document is
  silently skipped, a second one refused). KFP's SDK writes it so, and refuses it in a JSON file
  (kfp/compiler/pipeline_spec_builder.py write_pipeline_spec_to_file). So write_pipeline_spec
  writes `<name>.spec.yaml`, the spec and its platform spec, when there is one;
- the PipelineJob (TFX's format, Vertex AI's) has no field for it (pipeline_spec.proto
  PipelineJob: name, display_name, pipeline_spec, labels, runtime_config): the job file keeps
  the container env only;
- at run creation the argo compiler hands each executor's config to its task's driver
  (backend/src/v2/compiler/visitor.go dfs, by executor label; argocompiler/spec_patch.go
  AddKubernetesSpec parses it strictly); the driver adds each key as an env var with
  `valueFrom.secretKeyRef` to the pod (backend/src/v2/driver/k8s.go extendPodSpecPatch), and
  the kubelet reads the Secret when it creates the container: a missing Secret or key keeps the
  pod from starting (CreateContainerConfigError), as `optional` is left unset.
Only the Secret's name and key names are compiled, never a value. A gs:// root gets none of this:
on GKE the pods reach GCS through Workload Identity (docs/kubeflow.md).

The pipeline root must be gs://, s3:// or minio:// (config_kubeflow.check_kubeflow_root, from
runner.py --kubeflow); this module compiles any root, so the tests can run the compiled spec on
local folders.
"""
import dataclasses
import json
import os
from typing import Any, Dict, List, Optional

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from tfx.orchestration.kubeflow.v2 import kubeflow_v2_dag_runner

from core import storage, store_watch
from components.ingest.component import ImageExampleGen
from components.ingest.graph.params import IngestParams
from launch import tfjob
from components.push.component import Pusher
from components.trainer.component import ImageTrainer
from pipeline.definition import beam_mode
from pipeline.definition import config as config_lib
from pipeline.definition import config_kubeflow
from pipeline.kubeflow import run_end as run_end_lib
from pipeline.definition import factory

# The trainer's task when a TFJob trains: TFX, TensorFlow and polling, no GPU.
_WATCHER_CPU, _WATCHER_MEMORY_GB = 1.0, 4.0
# Every task's container command (the image's interpreter); pipeline/kubeflow/entrypoint.py.
ENTRYPOINT = ['python', '-m', 'pipeline.kubeflow.entrypoint']
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


def trainer_resources(kubeflow: config_kubeflow.KubeflowConfig) -> _ResourceSpec:
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
              kubeflow: config_kubeflow.KubeflowConfig) -> Dict[str, Any]:
    """Compiles the pipeline; returns the PipelineJob as a JSON-ready dict."""
    keep_runs = config.retention.keep_runs
    if keep_runs and kubeflow.cache_ingestion:
        raise ValueError('cache_ingestion = true and --keep-runs K > 0 exclude each other on '
                         'Kubeflow: a pipeline with retention runs no task from KFP\'s cache, '
                         'which would hand over artifacts retention deleted (docs/kubeflow.md, '
                         '"Retention"); set --keep-runs 0 to cache')
    pipeline = factory.create_pipeline(for_image(config, kubeflow.image_workdir))
    run_end = run_end_lib.settings(config)
    workers = kubeflow.trainer_workers
    for component in pipeline.components:
        if isinstance(component, Pusher) and run_end is not None:
            custom = json.loads(component.exec_properties['custom_config'])
            custom[run_end_lib.RUN_END_KEY] = run_end
            component.exec_properties['custom_config'] = json.dumps(custom, sort_keys=True)
        if isinstance(component, ImageExampleGen) and workers > 1:
            # Room for every pod of the TFJob to read train shards of its own (FILE sharding),
            # as create_components leaves for TrainParams.workers.
            params = IngestParams.from_properties(component.exec_properties)
            component.exec_properties.update(dataclasses.replace(
                params, num_shards=params.num_shards and max(params.num_shards, workers),
                min_train_shards=max(params.min_train_shards, workers)).to_properties())
        if isinstance(component, ImageTrainer):
            component.with_platform_config(trainer_resources(kubeflow))
            if kubeflow.trainer_workers > 1:  # each worker pod gets the trainer's resources
                component.with_tfjob(tfjob.TFJobSpec(
                    workers=kubeflow.trainer_workers, image=kubeflow.image,
                    cpu=kubeflow.trainer_cpu, memory_gb=kubeflow.trainer_memory_gb,
                    gpus=kubeflow.trainer_gpus, gpu_resource=kubeflow.gpu_type,
                    service_account=kubeflow.trainer_service_account,
                    env=tuple((e['name'], e['value']) for e in object_store_env(
                        kubeflow, config.pipeline_root, config.store_timeout_minutes)),
                    secret_env=tuple(
                        (variable, kubeflow.s3_secret, key)
                        for key, variable in config_kubeflow.SECRET_KEYS
                        if kubeflow.s3_secret and config_kubeflow.uses_s3(config.pipeline_root))))
    runner = kubeflow_v2_dag_runner.KubeflowV2DagRunner(
        kubeflow_v2_dag_runner.KubeflowV2DagRunnerConfig(
            display_name=config.name, default_image=kubeflow.image, default_commands=ENTRYPOINT,
            # Open-source KFP's API server accepts schema 2.1.0 only (docs/kubeflow.md, Kubeflow
            # compatibility); 2.1 also compiles parameters as runtimeValue.constant.
            use_pipeline_spec_2_1=True))
    job = runner.run(pipeline, write_out=False)
    uncached = [c.id for c in pipeline.components if keep_runs
                or (isinstance(c, ImageExampleGen) and not kubeflow.cache_ingestion)
                or (isinstance(c, Pusher) and run_end is not None)]
    uncache(job, uncached)
    add_object_store_env(job, kubeflow, config.pipeline_root, config.store_timeout_minutes)
    return job


def uncache(job: Dict[str, Any], tasks: List[str]) -> None:
    """Compiles these tasks uncached: enableCache false, which proto3 JSON writes as {}. KFP's
    driver then neither looks the task up in its cache nor records it there
    (backend/src/v2/driver/cache.go getFingerPrintsAndID: no fingerprint unless the task's
    cachingOptions.enableCache; component/launcher_v2.go Execute: a cache entry only for a
    fingerprint)."""
    for name in tasks:
        job['pipelineSpec']['root']['dag']['tasks'][name]['cachingOptions'] = {}


def run_end_text(config: config_lib.PipelineConfig) -> Optional[str]:
    """What the compiled pipeline does at the end of each run, in one line, or None."""
    keep, notify = config.retention.keep_runs, config.notify
    if run_end_lib.settings(config) is None:
        return None
    parts = [f'retention keeps the newest {keep} runs (every task uncached)' if keep
             else 'retention off (--keep-runs 0)']
    parts += [f'notifies {notify.url}'] if notify.url else []
    parts += [f'runs "{notify.on_finish}"'] if notify.on_finish else []
    return 'At the end of each run (in the Pusher\'s task): ' + '; '.join(parts)


def compile_pipeline(config: config_lib.PipelineConfig,
                     kubeflow: config_kubeflow.KubeflowConfig) -> str:
    """Writes the PipelineJob JSON to kubeflow.output_file; returns its path."""
    data = config.ingest.data_dir
    if storage.is_object_store(data):
        # The compile lists the data for span-<N>/ folders (components/ingest/component.py
        # input_pattern): a bucket it cannot reach would compile the wrong pattern after minutes
        # of retries, so it is refused at once.
        problem = storage.unreachable([data])
        if problem:
            raise ValueError(f'--data {data}: the compile lists it for span-<N>/ folders, but '
                             f'{problem}')
        storage.enable()
    job = build_job(config, kubeflow)
    folder = os.path.dirname(os.path.abspath(kubeflow.output_file))
    os.makedirs(folder, exist_ok=True)
    with open(kubeflow.output_file, 'w') as handle:
        json.dump(job, handle, indent=2, sort_keys=True)
    return kubeflow.output_file


def object_store_env(kubeflow: config_kubeflow.KubeflowConfig, root: str,
                     store_timeout_minutes: float = store_watch.DEFAULT_BOUND_SECONDS / 60
                     ) -> List[Dict[str, str]]:
    """The plain variables every task container gets for the run root: for an s3:// or minio://
    root, the endpoint (unless AWS's own) and the region, and --store-timeout when it is not
    the default (the task's store watch reads it: pipeline/kubeflow/entrypoint.py); none for
    gs://."""
    if not config_kubeflow.uses_s3(root):
        return []
    env = [{'name': 'AWS_ENDPOINT_URL', 'value': kubeflow.s3_endpoint.rstrip('/')}]
    env = env[:bool(kubeflow.s3_endpoint)] + [{'name': 'AWS_REGION', 'value': kubeflow.s3_region}]
    seconds = store_timeout_minutes * 60
    if seconds != store_watch.DEFAULT_BOUND_SECONDS:
        env.append({'name': store_watch.BOUND_VARIABLE, 'value': f'{seconds:g}'})
    return env


def _container_executors(job: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Executor label -> its container spec (importers and resolvers run no container)."""
    executors = job['pipelineSpec']['deploymentSpec']['executors']
    return {label: executor['container'] for label, executor in sorted(executors.items())
            if 'container' in executor}


def add_object_store_env(job: Dict[str, Any], kubeflow: config_kubeflow.KubeflowConfig,
                         root: str, store_timeout_minutes: float = (
                             store_watch.DEFAULT_BOUND_SECONDS / 60)) -> None:
    """object_store_env on every executor's container (PipelineContainerSpec.env, which the
    driver copies into the pod: driver/driver.go initPodSpecPatch)."""
    env = object_store_env(kubeflow, root, store_timeout_minutes)
    for container in _container_executors(job).values():
        if env:
            container['env'] = container.get('env', []) + [dict(e) for e in env]


def platform_spec(job: Dict[str, Any], kubeflow: config_kubeflow.KubeflowConfig,
                  root: str) -> Optional[Dict[str, Any]]:
    """The Kubernetes PlatformSpec of the job: every container executor gets the object store's
    Secret as env (secretAsEnv: `accesskey` -> AWS_ACCESS_KEY_ID, `secretkey` ->
    AWS_SECRET_ACCESS_KEY) for an s3:// or minio:// root with a Secret; else None.

    Built with kfp-kubernetes' protos as its use_secret_as_env does (kfp/kubernetes/secret.py):
    the name as `secretNameParameter` (a runtimeValue constant, what driver/k8s.go
    extendPodSpecPatch resolves first) and as the deprecated `secretName` (what older drivers
    read). `optional` stays unset, so a missing Secret stops the pod instead of running the task
    without credentials."""
    if not (config_kubeflow.uses_s3(root) and kubeflow.s3_secret):
        return None
    from kfp.kubernetes import kubernetes_executor_config_pb2 as k8s_pb
    executors = {}
    for label in _container_executors(job):
        config = k8s_pb.KubernetesExecutorConfig()
        secret = config.secret_as_env.add(secret_name=kubeflow.s3_secret)
        secret.secret_name_parameter.runtime_value.constant.string_value = kubeflow.s3_secret
        for key, env_var in config_kubeflow.SECRET_KEYS:
            secret.key_to_env.add(secret_key=key, env_var=env_var)
        executors[label] = json_format.MessageToDict(config)
    platforms = {'platforms': {'kubernetes': {'deploymentSpec': {'executors': executors}}}}
    # Strict, as the API server parses it (v2_template.go IsPlatformSpecWithKubernetesConfig):
    # a field it does not know would make it skip the whole document without a word.
    json_format.ParseDict(platforms, pipeline_spec_pb2.PlatformSpec(), ignore_unknown_fields=False)
    return platforms


def write_pipeline_spec(job_file: str, pipeline_root: str,
                        kubeflow: config_kubeflow.KubeflowConfig) -> str:
    """The file the KFP API server takes on upload, beside the job file; returns its path.

    The bare PipelineSpec (the server rejects a PipelineJob wrapper), with the pipeline root as
    its default: `<name>.spec.json`. With a platform spec (an s3:// or minio:// root), the spec
    and then the platform spec as two YAML documents, `<name>.spec.yaml`, the one form the API
    server reads a platform spec from (v2_template.go NewV2SpecTemplate; kfp's compiler writes
    the same, write_pipeline_spec_to_file). The other form's file, from an earlier compile to
    another root, is removed, so the folder never offers a stale spec."""
    with open(job_file) as handle:
        job = json.load(handle)
    spec = job['pipelineSpec']
    spec['defaultPipelineRoot'] = pipeline_root
    platforms = platform_spec(job, kubeflow, pipeline_root)
    stem = os.path.splitext(job_file)[0] + '.spec'
    path, stale = (stem + '.yaml', stem + '.json') if platforms else (stem + '.json',
                                                                      stem + '.yaml')
    with open(path, 'w') as handle:
        if platforms:
            yaml.safe_dump_all([spec, platforms], handle, sort_keys=True)
        else:
            json.dump(spec, handle, indent=2, sort_keys=True)
    if os.path.exists(stale):
        os.remove(stale)
    return path
