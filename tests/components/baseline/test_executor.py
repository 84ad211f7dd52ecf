"""Executor tests of ServedModelBaseline: a copy of the served model, or an empty baseline."""
import os

from tfx.types import standard_artifacts

from components.baseline import executor


def _run(serving_dir, out_dir):
    baseline = standard_artifacts.Model()
    baseline.uri = str(out_dir)
    candidate = standard_artifacts.Model()
    candidate.uri = '/unused'
    executor.Executor().Do({'candidate': [candidate]}, {'baseline': [baseline]},
                           {'serving_dir': str(serving_dir)})
    return baseline


def test_first_run_gives_an_empty_baseline(tmp_path):
    baseline = _run(tmp_path / 'serving', tmp_path / 'out')
    assert baseline.get_int_custom_property('served_version') == -1
    assert not executor.has_model(baseline)
    assert not os.path.exists(tmp_path / 'out' / 'Format-Serving')


def test_newest_served_version_is_copied_where_the_evaluator_looks(tmp_path):
    for version, content in (('100', b'old'), ('200', b'new')):
        os.makedirs(tmp_path / 'serving' / version / 'variables')
        (tmp_path / 'serving' / version / 'saved_model.pb').write_bytes(content)
        (tmp_path / 'serving' / version / 'variables' / 'v.index').write_bytes(content)
    baseline = _run(tmp_path / 'serving', tmp_path / 'out')
    assert executor.has_model(baseline)
    assert baseline.get_int_custom_property('served_version') == 200
    copy = tmp_path / 'out' / 'Format-Serving'
    assert (copy / 'saved_model.pb').read_bytes() == b'new'
    assert (copy / 'variables' / 'v.index').read_bytes() == b'new'
