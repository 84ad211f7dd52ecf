"""Executor tests of ServedModelBaseline: a reference to the served model (nothing copied), an
empty baseline, or an incompatible one that is recorded but not compared.

The served and candidate models are real SavedModels from the trainer's export
(tests/support/saved_models.py), so the comparison reads what the export writes.
"""
import os

from tfx.types import standard_artifacts

from components.baseline import executor
from core import model_signature, served_baseline

import saved_models


def _run(serving_dir, out_dir, candidate):
    baseline = standard_artifacts.Model()
    baseline.uri = str(out_dir)
    executor.Executor().Do({'candidate': [candidate]}, {'baseline': [baseline]},
                           {'serving_dir': str(serving_dir)})
    return baseline


def test_first_run_gives_an_empty_baseline(tmp_path):
    candidate = saved_models.exported_model(tmp_path / 'candidate', ['0', '1', '2'])
    baseline = _run(tmp_path / 'serving', tmp_path / 'out', candidate)
    assert baseline.get_int_custom_property('served_version') == -1
    assert not served_baseline.has_model(baseline) and not served_baseline.is_comparable(baseline)
    assert not os.path.exists(tmp_path / 'out' / 'Format-Serving')


def test_newest_served_version_is_referenced_not_copied(tmp_path):
    old = saved_models.exported_model(tmp_path / 'old', ['0', '1', '2'], (0.2, 0.5, 0.8))
    new = saved_models.exported_model(tmp_path / 'new', ['0', '1', '2'], (0.1, 0.5, 0.9))
    saved_models.serve(old, tmp_path / 'serving', 100)
    served = saved_models.serve(new, tmp_path / 'serving', 200)
    candidate = saved_models.exported_model(tmp_path / 'candidate', ['0', '1', '2'])
    (tmp_path / 'out').mkdir()  # TFX makes the output folder before the executor runs
    baseline = _run(tmp_path / 'serving', tmp_path / 'out', candidate)
    assert served_baseline.has_model(baseline) and served_baseline.is_comparable(baseline)
    assert baseline.get_int_custom_property('served_version') == 200
    assert baseline.get_string_custom_property('served_path') == served
    assert os.listdir(tmp_path / 'out') == []   # no copy: the artifact only names the folder
    assert served_baseline.model_path(baseline) == served
    reference = served_baseline.in_place(baseline)   # what the Evaluator hands TFMA
    assert (reference.uri, reference.id) == (served, baseline.id)
    assert baseline.uri == str(tmp_path / 'out')


def test_a_baseline_copied_by_an_older_version_is_read_from_its_copy(tmp_path):
    baseline = saved_models.exported_model(tmp_path / 'old-baseline', ['0', '1'])
    baseline.set_int_custom_property('served_version', 1)
    baseline.set_string_custom_property('served_path', str(tmp_path / 'serving' / '1'))
    assert served_baseline.model_path(baseline) == os.path.join(baseline.uri, 'Format-Serving')
    assert served_baseline.is_comparable(baseline)
    assert served_baseline.in_place(baseline).uri == baseline.uri


def test_a_reference_whose_folder_is_gone_is_not_compared_and_says_why(tmp_path):
    baseline = standard_artifacts.Model()
    baseline.uri = str(tmp_path / 'out')
    baseline.set_int_custom_property('served_version', 3)
    baseline.set_string_custom_property('served_path', str(tmp_path / 'serving' / '3'))
    assert not served_baseline.is_comparable(baseline)
    assert served_baseline.incompatible_reason(baseline) == (
        f'its folder {tmp_path / "serving" / "3"} no longer exists')


def test_served_model_for_other_classes_is_marked_incompatible_and_not_copied(tmp_path):
    digits = saved_models.exported_model(tmp_path / 'digits', [str(d) for d in range(10)])
    saved_models.serve(digits, tmp_path / 'serving', 1)
    candidate = saved_models.exported_model(tmp_path / 'candidate', ['cat', 'dog'])
    baseline = _run(tmp_path / 'serving', tmp_path / 'out', candidate)
    assert baseline.get_int_custom_property('served_version') == 1  # still what is served
    assert served_baseline.has_model(baseline) and not served_baseline.is_comparable(baseline)
    assert served_baseline.incompatible_reason(baseline) == (
        "served model predicts classes ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']; "
        "this model predicts ['cat', 'dog']")
    assert not os.path.exists(tmp_path / 'out' / 'Format-Serving')


def test_served_model_with_another_input_shape_is_incompatible(tmp_path):
    small = saved_models.exported_model(tmp_path / 'small', ['a', 'b'], image_shape=(8, 8, 1))
    saved_models.serve(small, tmp_path / 'serving', 3)
    candidate = saved_models.exported_model(tmp_path / 'candidate', ['a', 'b'],
                                            image_shape=(28, 28, 3))
    baseline = _run(tmp_path / 'serving', tmp_path / 'out', candidate)
    assert served_baseline.incompatible_reason(baseline) == (
        'served model takes 8×8×1 images; this model takes 28×28×3 images')


def test_served_model_exported_before_the_description_is_judged_on_its_class_count(tmp_path):
    digits = saved_models.exported_model(tmp_path / 'digits', [str(d) for d in range(10)])
    served = saved_models.serve(digits, tmp_path / 'serving', 1)
    os.remove(os.path.join(served, model_signature.SIGNATURE_FILE))  # an older export
    four = saved_models.exported_model(tmp_path / 'four', ['a', 'b', 'c', 'd'])
    baseline = _run(tmp_path / 'serving', tmp_path / 'out-four', four)
    assert served_baseline.incompatible_reason(baseline) == (
        "served model predicts 10 classes; this model predicts ['a', 'b', 'c', 'd']")
    ten = saved_models.exported_model(tmp_path / 'ten', [str(d) for d in range(10)])
    assert served_baseline.is_comparable(_run(tmp_path / 'serving', tmp_path / 'out-ten', ten))


def test_on_a_bucket_its_folder_holds_a_reference_so_a_rerun_reuses_it(s3, tmp_path):
    """A bucket has no empty folders, and TFX reuses a cached output only where its URI exists
    (artifact_utils.verify_artifacts): the reference file keeps the stage, and the Evaluator
    after it, cached on a rerun."""
    import json

    from tfx.types import artifact_utils
    candidate = saved_models.exported_model(tmp_path / 'candidate', ['0', '1', '2'])
    baseline = _run(s3.uri('serving'), s3.uri('root', 'ServedModelBaseline', 'baseline', '7'),
                    candidate)
    artifact_utils.verify_artifacts([baseline])   # raises when the URI does not exist
    assert list(s3.keys('root/')) == ['root/ServedModelBaseline/baseline/7/reference.json']
    body = s3.server.client().get_object(
        Bucket=s3.name, Key='root/ServedModelBaseline/baseline/7/reference.json')['Body'].read()
    assert json.loads(body) == {'served_version': -1, 'served_path': ''}
