"""Training on the pods of a Kubernetes job: the launchers registry's 'kubernetes'
(launch/launchers.py), which the Kubeflow compile names with --trainer-workers (no TFX imports).
Its result says which API trained (`training_api`).

    api = launcher.discover(spec)         # k8s.TRAINJOB or k8s.TFJOB, or RuntimeError
    result = launcher.run(api, job, serving_dir, log_dir, checkpoint_dir, spec, name)

Which Kubeflow training API the cluster serves decides the job's kind, at run time: Kubeflow
Trainer v2's TrainJob first: the cluster serves trainer.kubeflow.org/v1alpha1
trainjobs (API discovery) and has the ClusterTrainingRuntime the compile named (spec.runtime,
deploy/tensorflow-runtime.yaml). Else the Training Operator v1's TFJob (kubeflow.org/v1
tfjobs, deprecated). A cluster that serves Trainer v2 without the runtime falls back to TFJob
when it serves that, and is refused with how to apply the runtime when it does not.
"""

import dataclasses

from absl import logging

from launch import launchers
from pipeline.kubeflow.jobs import k8s, tfjob, trainjob
from training import length
from training.result import TrainResult


def discover(spec: tfjob.TFJobSpec) -> k8s.Api:
    objects, _, namespace = k8s.clients()
    trainer = k8s.served(objects, k8s.TRAINJOB)
    runtime = trainer and trainjob.runtime_exists(objects, spec.runtime)
    if runtime:
        logging.info('Training API: TrainJob (Kubeflow Trainer v2, %s) with the %s %s, in %s',
                     trainjob.API_VERSION, trainjob.RUNTIME_KIND, spec.runtime, namespace)
        return k8s.TRAINJOB
    if k8s.served(objects, k8s.TFJOB):
        logging.info('Training API: TFJob (Kubeflow Training Operator v1, %s/%s, deprecated)%s, '
                     'in %s', k8s.GROUP, k8s.VERSION,
                     f'; the cluster serves TrainJob but has no {trainjob.RUNTIME_KIND} '
                     f'{spec.runtime}' if trainer else '', namespace)
        return k8s.TFJOB
    if trainer:
        raise RuntimeError(
            f'the cluster serves Kubeflow Trainer v2 (TrainJob, {trainjob.API_VERSION}) but has '
            f'no {trainjob.RUNTIME_KIND} {spec.runtime!r}, and no Training Operator v1 (TFJob): '
            'apply the runtime once, `kubectl apply -f deploy/tensorflow-runtime.yaml` '
            '(docs/kubeflow.md, "Training on several pods")')
    raise RuntimeError(
        f'--trainer-workers {spec.workers}: the cluster serves neither Kubeflow Trainer v2 '
        f'(TrainJob, {trainjob.API_VERSION}) nor the Training Operator v1 (TFJob, '
        f'{k8s.GROUP}/{k8s.VERSION}); install Trainer v2 and apply '
        'deploy/tensorflow-runtime.yaml (docs/kubeflow.md, "Training on several pods")')


def run(api: k8s.Api, job, serving_dir: str, log_dir: str, checkpoint_dir: str,
        spec: tfjob.TFJobSpec, name: str, poll_seconds: float = 2.0) -> TrainResult:
    """Trains through the discovered api; returns the chief's result."""
    module = trainjob if api == k8s.TRAINJOB else tfjob
    return module.run(job, serving_dir, log_dir, checkpoint_dir, spec=spec, name=name,
                      poll_seconds=poll_seconds)


class KubernetesLauncher(launchers.Launcher):
    """spec: a TFJobSpec as JSON; its workers are pods of a TrainJob, or of a TFJob where the
    cluster serves only that. The result says which (`training_api`)."""

    def check(self, spec: str, params) -> None:
        workers = tfjob.TFJobSpec.from_json(spec).workers
        if workers < 2 or not length.splits(params.global_batch_size, workers):
            raise ValueError(f'trainer workers must be >= 2 and split global_batch_size '
                             f'({params.global_batch_size}) evenly, got {workers}')
        if params.workers > 1:
            raise ValueError('give --workers (processes in one pod) or --trainer-workers (a '
                             'TFJob of pods), not both')

    def readers(self, spec: str, params) -> int:
        return tfjob.TFJobSpec.from_json(spec).workers

    def train(self, job, spec: str, name: str, serving_dir: str, log_dir: str,
              checkpoint_dir: str) -> TrainResult:
        workers = tfjob.TFJobSpec.from_json(spec)
        api = discover(workers)  # TrainJob (Trainer v2) first, else TFJob
        result = run(api, job, serving_dir, log_dir, checkpoint_dir, spec=workers, name=name)
        return dataclasses.replace(result, training_api=api.kind)
