"""Fixtures of the tests on the real cluster (tests/support/real_cluster.py): its kubeconfig
for the product's Kubernetes client, a namespace per test, the tests' SeaweedFS reachable
from pods, and the project's image in the node's containerd."""
import os

import pytest

import real_cluster


@pytest.fixture(scope='session')
def kube():
    return real_cluster.kubeconfig()


@pytest.fixture(scope='session')
def image(kube):
    return real_cluster.image()


@pytest.fixture(scope='session')
def pod_s3(seaweedfs):
    """SeaweedFS's S3 port relayed to the API gateway's address, for pods and this process."""
    relay = real_cluster.PodReachable(int(seaweedfs.endpoint.rsplit(':', 1)[1]))
    yield relay
    relay.stop()


@pytest.fixture
def namespace(kube, monkeypatch, tmp_path):
    """A namespace of the test's own, and a kubeconfig whose context names it: what the
    product's client reads outside a pod (pipeline/kubeflow/jobs/k8s.py clients)."""
    space = real_cluster.Namespace()
    with open(kube) as handle:
        text = handle.read().replace('namespace: default', f'namespace: {space.name}')
    path = tmp_path / 'kubeconfig'
    path.write_text(text)
    monkeypatch.setenv('KUBECONFIG', str(path))
    yield space
    space.delete()


class PodBucket:
    """A bucket of the test's own, named by the endpoint pods reach (pod_s3): this process is
    configured for that endpoint too, as a task's pod would be."""

    def __init__(self, server, endpoint: str):
        import seaweedfs as seaweedfs_lib
        self.server, self.endpoint = server, endpoint
        self.access, self.secret = seaweedfs_lib.ACCESS_KEY, seaweedfs_lib.SECRET_KEY
        self.name = server.new_bucket()

    def uri(self, key: str) -> str:
        return f's3://{self.name}/{key}'

    def read(self, uri: str) -> str:
        import tensorflow as tf
        with tf.io.gfile.GFile(uri) as handle:
            return handle.read()

    def exists(self, uri: str) -> bool:
        import tensorflow as tf
        return tf.io.gfile.exists(uri)

    def artifacts(self, tmp_path, tag: str, train_files: int = 2):
        """tfjob_helpers.artifacts made locally, the examples uploaded here, every artifact's
        uri in this bucket under tag/."""
        import tfjob_helpers
        local = tmp_path / tag
        inputs, outputs = tfjob_helpers.artifacts(local, train_files=max(train_files, 1))
        [examples] = inputs['examples']
        if not train_files:
            for name in os.listdir(os.path.join(examples.uri, 'Split-train')):
                os.remove(os.path.join(examples.uri, 'Split-train', name))
        self.server.upload_folder(examples.uri, self.name, f'{tag}/examples')
        examples.uri = self.uri(f'{tag}/examples')
        for name in ('model', 'model_run'):
            [artifact] = outputs[name]
            artifact.uri = self.uri(f'{tag}/root/ImageTrainer/{name}/5')
        return inputs, outputs


@pytest.fixture
def pod_bucket(seaweedfs, pod_s3, namespace, monkeypatch):
    """A bucket, this process configured for it, and its keys in the namespace's Secret."""
    from core import storage
    env = dict(seaweedfs.env(), AWS_ENDPOINT_URL=f'http://{pod_s3.endpoint}')
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key, value in storage.tensorflow_variables(os.environ).items():
        monkeypatch.setenv(key, value)
    storage.enable()
    bucket = PodBucket(seaweedfs, pod_s3.endpoint)
    namespace.secret(real_cluster.STORE_SECRET, {'access': bucket.access, 'secret': bucket.secret})
    return bucket
