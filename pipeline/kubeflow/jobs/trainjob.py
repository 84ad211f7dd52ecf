"""Training as a Kubeflow Trainer v2 TrainJob (trainer.kubeflow.org/v1alpha1, on JobSet); no TFX
imports.

    metrics = trainjob.run(job, serving_dir, log_dir, checkpoint_dir, TFJobSpec(workers=2, ...),
                           name='train-1a2b3c')

The same sequence as a TFJob (tfjob.py, whose workers this one extends): the task writes
the job file on the pipeline root, creates a TrainJob of spec.workers nodes running the workers'
entry point (`python -m launch.worker JOB SERVING LOG CHECKPOINT`) in the pipeline's image,
waits for its Complete or Failed condition, shows a failed pod's log, and deletes it in the
foreground. The TrainJob references the project's ClusterTrainingRuntime (spec.runtime,
deploy/tensorflow-runtime.yaml), which fixes what a TrainJob cannot: restartPolicy Never,
backoffLimit 0, no Istio sidecar, the downward-API env the worker builds TF_CONFIG from
(launch/worker.py). The objects are built with the typed models of `kubeflow-trainer-api`.

What the TrainJob sets, and where Trainer v2.3 puts it (kubeflow/trainer at v2.3.0):
- numNodes -> the Job's parallelism and completions (plainml.go EnforceMLPolicy, jobset.go
  SyncParallelCount);
- image, command, env of the `node` container (jobset/builder.go Trainer; PlainML upserts the
  env: TRAINJOB_NUM_NODES, the object store's variables and Secret references);
- resourcesPerNode -> the `node` container's resources (core/trainingruntime.go newRuntimeInfo);
- spec.service_account -> a runtimePatch of the pod's serviceAccountName
  (core/trainingruntime.go mergeRuntimePatches; a patch may not set the node's env,
  jobset.go Validate).
"""
from typing import Any, Dict, List

from launch import sequence, worker
from pipeline.kubeflow.jobs import k8s, tfjob
from pipeline.kubeflow.jobs.tfjob import TFJobSpec
from training.result import TrainResult

API_VERSION = f'{k8s.TRAINJOB.group}/{k8s.TRAINJOB.version}'
RUNTIME_KIND = 'ClusterTrainingRuntime'
RUNTIME_PLURAL = 'clustertrainingruntimes'
REPLICATED_JOB = 'node'      # the runtime's trainer step (and container) name
PATCH_MANAGER = 'image-pipeline.io/trainer'  # a runtimePatch's owner: a domain-prefixed path


def manifest(name: str, spec: TFJobSpec, args: List[str]) -> Dict[str, Any]:
    """The TrainJob as the API takes it (camelCase, no nulls), built with the typed models."""
    from kubeflow_trainer_api import models
    amounts = {'cpu': f'{spec.cpu:g}', 'memory': f'{spec.memory_gb:g}G'}
    if spec.gpus:
        amounts[spec.gpu_resource] = str(spec.gpus)
    quantities = {k: models.IoK8sApimachineryPkgApiResourceQuantity(v) for k, v in amounts.items()}
    env = [models.IoK8sApiCoreV1EnvVar(name=worker.NUM_NODES_ENV, value=str(spec.workers))]
    env += [models.IoK8sApiCoreV1EnvVar(name=n, value=v) for n, v in spec.env]
    env += [models.IoK8sApiCoreV1EnvVar(name=n, value_from=models.IoK8sApiCoreV1EnvVarSource(
        secret_key_ref=models.IoK8sApiCoreV1SecretKeySelector(name=secret, key=key)))
        for n, secret, key in spec.secret_env]
    patches = None
    if spec.service_account:
        pod = models.TrainerV1alpha1PodTemplatePatch(
            spec=models.TrainerV1alpha1PodSpecPatch(service_account_name=spec.service_account))
        patches = [models.TrainerV1alpha1RuntimePatch(
            manager=PATCH_MANAGER,
            training_runtime_spec=models.TrainerV1alpha1TrainingRuntimeSpecPatch(
                template=models.TrainerV1alpha1JobSetTemplatePatch(
                    spec=models.TrainerV1alpha1JobSetSpecPatch(replicated_jobs=[
                        models.TrainerV1alpha1ReplicatedJobPatch(
                            name=REPLICATED_JOB, template=models.TrainerV1alpha1JobTemplatePatch(
                                spec=models.TrainerV1alpha1JobSpecPatch(template=pod)))]))))]
    body = models.TrainerV1alpha1TrainJob(
        api_version=API_VERSION, kind=k8s.TRAINJOB.kind,
        metadata=models.IoK8sApimachineryPkgApisMetaV1ObjectMeta(
            name=name, labels={'app': 'image-pipeline-trainer'}),
        spec=models.TrainerV1alpha1TrainJobSpec(
            runtime_ref=models.TrainerV1alpha1RuntimeRef(
                name=spec.runtime, api_group=k8s.TRAINJOB.group, kind=RUNTIME_KIND),
            trainer=models.TrainerV1alpha1Trainer(
                image=spec.image, command=['python', '-m', worker.MODULE, *args],
                env=env, num_nodes=spec.workers,
                resources_per_node=models.IoK8sApiCoreV1ResourceRequirements(
                    requests=dict(quantities), limits=dict(quantities))),
            runtime_patches=patches))
    return body.to_dict()


def runtime_exists(objects, name: str) -> bool:
    """Whether the ClusterTrainingRuntime `name` exists (404: not applied on this cluster)."""
    from kubernetes.client.exceptions import ApiException
    try:
        objects.get_cluster_custom_object(k8s.TRAINJOB.group, k8s.TRAINJOB.version,
                                          RUNTIME_PLURAL, name)
        return True
    except ApiException as error:
        if error.status != 404:
            raise
        return False


class TrainJobWorkers(tfjob.TFJobWorkers):
    """spec.workers nodes of a TrainJob named `name`, in the namespace of the clients."""
    folder = 'trainjob'
    api = k8s.TRAINJOB
    ends = ('Complete', 'Failed')   # trainjob_types.go TrainJobComplete, TrainJobFailed

    def body(self, args: List[str]) -> Dict[str, Any]:
        return manifest(self._name, self._spec, args)


def run(job, serving_dir: str, log_dir: str, checkpoint_dir: str, spec: TFJobSpec,
        name: str, poll_seconds: float = 2.0) -> TrainResult:
    """Trains with a TrainJob of spec.workers nodes; returns the chief's result."""
    return sequence.run(job, serving_dir, log_dir, checkpoint_dir,
                        TrainJobWorkers(spec, name, poll_seconds))
