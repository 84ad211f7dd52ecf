"""Choosing the tf.distribute strategy, and who is the chief (no TFX imports).

- TF_CONFIG describing a cluster of several tasks: MultiWorkerMirroredStrategy (one process per
  machine; TF_CONFIG is how Kubeflow's TFJob, Vertex AI and plain scripts describe the cluster).
- Otherwise: MirroredStrategy over the given devices, or over every visible GPU (else the CPU).
"""
import json
import os
from typing import Optional, Sequence, Tuple

import tensorflow as tf
from tensorflow.python.distribute import multi_worker_util


def cluster_spec() -> Optional[dict]:
    """The cluster from TF_CONFIG when it names more than one task, else None."""
    config = json.loads(os.environ.get('TF_CONFIG', '') or '{}')
    cluster = config.get('cluster') or {}
    tasks = sum(len(addresses) for addresses in cluster.values())
    return config if tasks > 1 else None


def num_workers() -> int:
    """Training processes in the cluster (chief and workers); 1 without TF_CONFIG."""
    cluster = (cluster_spec() or {}).get('cluster', {})
    return max(1, len(cluster.get('chief', [])) + len(cluster.get('worker', [])))


def make_strategy(devices: Sequence[str] = ()) -> tf.distribute.Strategy:
    if cluster_spec():
        # Must run before the process has executed collective ops; the strategy reads TF_CONFIG.
        return tf.distribute.MultiWorkerMirroredStrategy()
    return tf.distribute.MirroredStrategy(devices=list(devices) or None)


def chief_and_task(strategy: tf.distribute.Strategy) -> Tuple[bool, str]:
    """(is this process the chief?, a task name for per-worker scratch folders)."""
    resolver = getattr(strategy, 'cluster_resolver', None)
    if resolver is None or not resolver.task_type:
        return True, 'local'
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    has_chief = 'chief' in resolver.cluster_spec().as_dict()
    is_chief = task_type == 'chief' or (task_type == 'worker' and task_id == 0 and not has_chief)
    return is_chief, f'{task_type}_{task_id}'


def input_pipeline(strategy: tf.distribute.Strategy) -> int:
    """This process's input pipeline id: the index tf.distribute gives its share of the input
    (InputContext.input_pipeline_id), 0 without a cluster. The same function as the strategy's
    own (collective_all_reduce_strategy.py _initialize_multi_worker: id_in_cluster): the chief
    is 0, then the workers in order; FILE sharding (data.py) reads files by it."""
    resolver = getattr(strategy, 'cluster_resolver', None)
    if resolver is None or not resolver.task_type:
        return 0
    return multi_worker_util.id_in_cluster(resolver.cluster_spec(), resolver.task_type,
                                           resolver.task_id or 0)
