"""Unit tests of the baseline choice: the newest model blessed before the candidate."""
from tfx.types import standard_artifacts

from components.evaluate import baseline


def _model(artifact_id):
    model = standard_artifacts.Model()
    model.id = artifact_id
    return model


def _blessing(model_id, blessed):
    blessing = standard_artifacts.ModelBlessing()
    blessing.set_int_custom_property('current_model_id', model_id)
    blessing.set_int_custom_property('blessed', int(blessed))
    return blessing


def _resolve(candidate, models, blessings):
    return baseline.LatestBlessedBeforeCandidateStrategy().resolve_artifacts(
        None, {'candidate': [_model(candidate)], 'model': [_model(i) for i in models],
               'model_blessing': blessings})


def test_first_run_has_no_baseline():
    result = _resolve(5, [5], [])
    assert result['model'] == [] and result['model_blessing'] == []
    assert [m.id for m in result['candidate']] == [5]


def test_a_cached_candidate_is_not_its_own_baseline():
    # Rerun with nothing changed: candidate 5 is the latest blessed model itself.
    result = _resolve(5, [5], [_blessing(5, True)])
    assert result['model'] == []


def test_new_candidate_is_compared_with_the_newest_earlier_blessed_model():
    blessings = [_blessing(2, True), _blessing(5, True), _blessing(7, False)]
    result = _resolve(9, [2, 5, 7, 9], blessings)
    assert [m.id for m in result['model']] == [5]
    assert result['model_blessing'][0].get_int_custom_property('current_model_id') == 5


def test_unblessed_models_are_skipped():
    result = _resolve(9, [2, 7], [_blessing(2, True), _blessing(7, False)])
    assert [m.id for m in result['model']] == [2]


def test_no_candidate_resolves_nothing():
    result = baseline.LatestBlessedBeforeCandidateStrategy().resolve_artifacts(
        None, {'candidate': [], 'model': [_model(1)], 'model_blessing': [_blessing(1, True)]})
    assert all(v == [] for v in result.values())
