"""core/serving_labels.py: push modes, promotion and rejection, and models.config
as TF Serving parses it (model_server_config_pb2); with versions.py, retention keeps every
labelled version."""
import os

from google.protobuf import text_format
import pytest
from tensorflow_serving.config import model_server_config_pb2

from core import serving_labels as labels_lib
from core import versions
from core.serving_labels import Labels


def test_auto_makes_every_push_stable_and_candidate_makes_a_canary():
    assert labels_lib.after_push(None, 1, 'auto') == Labels(stable=1)
    assert labels_lib.after_push(Labels(stable=1, canary=2), 3, 'auto') == Labels(stable=3)
    assert labels_lib.after_push(None, 1, 'candidate') == Labels(stable=1)   # the first
    assert labels_lib.after_push(Labels(stable=1), 2, 'candidate') == Labels(stable=1, canary=2)
    # A newer candidate replaces the canary; the same model again moves nothing.
    assert labels_lib.after_push(Labels(1, 2), 3, 'candidate') == Labels(stable=1, canary=3)
    assert labels_lib.after_push(Labels(1, 2), 2, 'candidate') == Labels(stable=1, canary=2)
    with pytest.raises(ValueError, match='push mode must be one of'):
        labels_lib.after_push(None, 1, 'newest')


def test_promote_and_reject():
    assert labels_lib.promote(Labels(1, 2), 2) == Labels(stable=2)
    assert labels_lib.promote(Labels(1, 3), 2) == Labels(stable=2, canary=3)   # any kept one
    with pytest.raises(labels_lib.LabelError, match='already stable'):
        labels_lib.promote(Labels(1, 2), 1)
    assert labels_lib.reject(Labels(1, 2), 2) == Labels(stable=1)
    with pytest.raises(labels_lib.LabelError, match='version 1 is not the canary'):
        labels_lib.reject(Labels(1, 2), 1)


def test_models_config_is_what_tf_serving_parses(tmp_path):
    serving = str(tmp_path / 'serving')
    os.makedirs(serving)
    path = labels_lib.write(serving, 'flowers', Labels(stable=6, canary=7))
    with open(path) as handle:
        config = text_format.Parse(handle.read(), model_server_config_pb2.ModelServerConfig())
    model, = config.model_config_list.config
    assert (model.name, model.base_path, model.model_platform) == ('flowers', serving,
                                                                   'tensorflow')
    assert list(model.model_version_policy.specific.versions) == [6, 7]
    assert dict(model.version_labels) == {'stable': 6, 'canary': 7}
    assert labels_lib.read_config(serving) == ('flowers', Labels(6, 7))
    labels_lib.write(serving, 'flowers', Labels(stable=6))
    assert labels_lib.read(serving) == Labels(stable=6)
    assert os.listdir(serving) == ['models.config']   # no temporary file left
    assert labels_lib.read(str(tmp_path / 'none')) is None


def _model(path, tag):
    os.makedirs(path)
    with open(os.path.join(path, 'saved_model.pb'), 'w') as handle:
        handle.write(tag)
    return str(path)


def test_candidate_pushes_keep_stable_and_retention_keeps_both_labels(tmp_path):
    base = str(tmp_path / 'serving')
    first = versions.push(_model(tmp_path / 'a', 'a'), base, keep=1, mode='candidate')
    assert first.labels == Labels(stable=1) and versions.served_version(base) == 1
    for tag in 'bcd':
        result = versions.push(_model(tmp_path / tag, tag), base, keep=1, mode='candidate')
    # Stable stays 1 while canaries come and go; keep=1 never deletes a labelled version.
    assert result.labels == Labels(stable=1, canary=4)
    assert versions.list_versions(base) == [1, 4]
    assert versions.served_version(base) == 1   # the baseline is stable, not the newest
    auto = versions.push(_model(tmp_path / 'e', 'e'), base, keep=1, mode='auto')
    assert auto.labels == Labels(stable=5) and versions.list_versions(base) == [5]
