"""Shared by the TFJob tests (tests/launch/test_tfjob*.py): the fake cluster with a
kubeconfig naming it, a job whose workers fail at once, and the request log's shape."""
from components.common import inputs as inputs_lib
from training import job as job_lib, loop
import fake_k8s_server


def start(tmp_path, monkeypatch, **options):
    """The fake API server, and a kubeconfig naming it (what the task reads outside a pod)."""
    server, state = fake_k8s_server.start(str(tmp_path), **options)
    monkeypatch.setenv('KUBECONFIG', fake_k8s_server.write_kubeconfig(
        str(tmp_path / 'kubeconfig'), server, 'ml-team'))
    return server, state


def cluster(tmp_path, monkeypatch):
    """The body of the tests' `cluster` fixture: pods get 2 s of grace."""
    server, state = start(tmp_path, monkeypatch, grace_seconds=2)
    yield state
    server.shutdown()
    state.shutdown()
    assert state.errors == []


def calls(state):
    """(method, last path segment) of every request: a job name, 'tfjobs', 'pods', 'log'."""
    return [(r['method'], r['path'].rsplit('/', 1)[-1]) for r in state.requests]


def failing_job(tmp_path):
    """A job whose workers fail at once (no train files): cheap to start and end."""
    return job_lib.TrainJob(
        train_pattern=str(tmp_path / 'missing' / '*'), eval_pattern=str(tmp_path / 'e' / '*'),
        class_names=('0', '1'), image_shape=(8, 8, 1),
        options=loop.LoopOptions.of(train_steps=5, global_batch_size=8, learning_rate=1e-3,
                                    model_builder='models.resnet.build_model'),
        input_spec=inputs_lib.InputSpec())


def paths(tmp_path):
    return dict(serving_dir=str(tmp_path / 'serving'), log_dir=str(tmp_path / 'logs'),
                checkpoint_dir=str(tmp_path / 'ckpt'))
