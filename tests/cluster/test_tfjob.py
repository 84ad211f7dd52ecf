"""The deprecated path on the real cluster: a cluster without the project's Trainer runtime gets a
TFJob, which the real Training Operator turns into two pods with TF_CONFIG and a Service each;
they train together on the tests' SeaweedFS, and the chief exports."""
import pytest

from components.trainer import executor
import real_cluster
import tfjob_helpers

pytestmark = pytest.mark.cluster


@pytest.mark.slow
def test_two_tfjob_workers_train_together_and_the_chief_exports(namespace, pod_bucket, image,
                                                               pod_s3, tmp_path):
    inputs, outputs = pod_bucket.artifacts(tmp_path, 'tfjob')
    executor.Executor().Do(inputs, outputs, tfjob_helpers.properties(
        real_cluster.worker_spec(image, pod_s3, runtime='no-such-runtime'),
        pipeline_root=pod_bucket.uri('root')))
    [model], [model_run] = outputs['model'], outputs['model_run']
    assert model.get_string_custom_property('training_api') == 'TFJob'
    tfjob_helpers.assert_two_workers_trained(model, model_run)
    # Deleted in the foreground and waited for: nothing of it is left.
    assert real_cluster.get('tfjobs,pods,services', '-n', namespace.name)['items'] == []
