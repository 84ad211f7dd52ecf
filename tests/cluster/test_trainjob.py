"""The trainer's TrainJob on the real cluster: Kubeflow Trainer v2 and JobSet reconcile it, the
kubelet runs two pods of the project's image, and they train together with TF_CONFIG built from
the JobSet's index (launch/worker.py), reading and writing the tests' SeaweedFS as pods read a
bucket. The path is the product's own: the trainer executor, discovery,
pipeline/kubeflow/jobs/trainjob.py."""
import json
import os
import time

import numpy as np
import pytest

from components.trainer import executor
from pipeline.kubeflow.jobs import k8s, tfjob
import real_cluster
import tfjob_helpers

pytestmark = pytest.mark.cluster
def _probabilities(model) -> np.ndarray:
    """The exported model's class probabilities for a few real digits: equal outputs, equal
    models."""
    import tensorflow as tf
    from helpers import DIGITS
    from training import export
    loaded = tf.saved_model.load(os.path.join(model.uri, 'Format-Serving'))
    images = []
    for label in ('0', '1'):
        folder = os.path.join(DIGITS, label)
        for name in sorted(os.listdir(folder))[:2]:
            with open(os.path.join(folder, name), 'rb') as handle:
                images.append(handle.read())
    predict = loaded.signatures[export.IMAGES_SIGNATURE]
    return predict(**{export.IMAGES_INPUT: tf.constant(images)})['probabilities'].numpy()


@pytest.mark.slow
def test_two_pods_train_together_and_equal_two_local_workers(namespace, pod_bucket, image,
                                                             pod_s3, tmp_path):
    inputs, outputs = pod_bucket.artifacts(tmp_path, 'cluster')
    started = time.monotonic()
    executor.Executor().Do(inputs, outputs, tfjob_helpers.properties(
        real_cluster.worker_spec(image, pod_s3), pipeline_root=pod_bucket.uri('root')))
    took = time.monotonic() - started
    [model], [model_run] = outputs['model'], outputs['model_run']
    assert model.get_string_custom_property('training_api') == 'TrainJob'
    tfjob_helpers.assert_two_workers_trained(model, model_run)
    # The TrainJob, its JobSet, Jobs and pods are gone: the task deletes what it made.
    assert real_cluster.get('trainjobs,jobsets,jobs,pods', '-n', namespace.name)['items'] == []
    log = pod_bucket.read(os.path.join(model_run.uri, 'trainjob', 'job.json'))
    assert json.loads(log)['options']['params']['train_steps'] == 6

    # The same job as two processes on this machine (launch/local.py), each with its TF_CONFIG:
    # the same sharding, order and steps, so the same model.
    local_inputs, local_outputs = pod_bucket.artifacts(tmp_path, 'local')
    executor.Executor().Do(local_inputs, local_outputs, tfjob_helpers.properties(
        real_cluster.worker_spec(image, pod_s3),
        pipeline_root=pod_bucket.uri('local-root'), tfjob='', num_workers=2))
    np.testing.assert_allclose(_probabilities(model), _probabilities(local_outputs['model'][0]),
                               rtol=1e-5, atol=1e-6)
    print(f'TrainJob of 2 pods trained and exported in {took:.1f} s')


@pytest.mark.slow
def test_a_failing_pod_fails_the_task_with_its_last_log_lines(namespace, pod_bucket, image,
                                                             pod_s3, tmp_path):
    inputs, outputs = pod_bucket.artifacts(tmp_path, 'empty', train_files=0)
    with pytest.raises(RuntimeError) as error:
        executor.Executor().Do(inputs, outputs, tfjob_helpers.properties(
            real_cluster.worker_spec(image, pod_s3), pipeline_root=pod_bucket.uri('root')))
    message = str(error.value)
    assert message.startswith(f'TrainJob {namespace.name}/'), message
    assert '(Failed), last lines:' in message, message
    assert 'No files matched pattern' in message, message   # the pod's own words
    assert real_cluster.get('trainjobs,pods', '-n', namespace.name)['items'] == []
    assert not pod_bucket.exists(os.path.join(outputs['model'][0].uri, 'Format-Serving'))


def test_discovery_on_the_real_api_server(namespace, image):
    """TrainJob first when Trainer v2 and the runtime are there; TFJob when the runtime is not
    (the cluster serves both APIs)."""
    from pipeline.kubeflow.jobs import launcher
    spec = tfjob.TFJobSpec(workers=2, image=image)
    assert launcher.discover(spec) == k8s.TRAINJOB
    missing = tfjob.TFJobSpec(workers=2, image=image, runtime='no-such-runtime')
    assert launcher.discover(missing) == k8s.TFJOB
