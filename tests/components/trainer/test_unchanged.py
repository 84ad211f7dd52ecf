"""What a model was trained from, and when the served model already is this run's model."""
import json

from components.trainer import unchanged
from training.result import TrainResult


def _record(fingerprint='fp', **properties):
    return unchanged.training_record(fingerprint, dict(
        {'model_builder': 'models.resnet.build_model', 'learning_rate': 0.003}, **properties))


def test_the_record_changes_with_input_settings_and_code_but_not_locations():
    base = _record()
    assert _record('other') != base
    assert _record(learning_rate=0.001) != base
    assert _record(model_builder='models.mlp.build_model')['builder_sha256'] != \
        base['builder_sha256']
    assert _record(serving_dir='/elsewhere', skip_unchanged=0, pipeline_root='/moved') == base
    assert len(base['builder_sha256']) == 64  # the builder's source file was read


def test_only_the_served_version_with_the_same_record_matches(tmp_path):
    serving = tmp_path / 'serving'
    unchanged.write_record(str(serving / '1'), _record('old'), TrainResult(eval_accuracy=0.9))
    unchanged.write_record(str(serving / '2'), _record(), TrainResult(eval_accuracy=0.95))
    assert unchanged.served_match(_record(), str(serving), 2) == (2, str(serving / '2'))
    assert unchanged.served_match(_record(), str(serving), 1) is None
    assert unchanged.served_match(_record(), str(serving), None) is None
    assert unchanged.read_record(str(serving / '2'))['metrics'] == {'eval_accuracy': 0.95}


def test_an_input_without_a_fingerprint_always_retrains(tmp_path):
    unchanged.write_record(str(tmp_path / '1'), _record(''), TrainResult())
    assert unchanged.served_match(_record(''), str(tmp_path), 1) is None


def test_every_training_parameter_is_in_the_digest():
    from training.params import TrainParams
    properties = dict(TrainParams().to_properties(), model_builder='models.resnet.build_model')
    base = unchanged.training_record('fp', properties)
    others = {int: lambda v: v + 1, float: lambda v: v + 0.5, str: lambda v: v + 'x'}
    for name, kind in TrainParams.property_types().items():
        if name == 'skip_unchanged':  # whether to compare, not how the model was trained
            continue
        changed = dict(properties, **{name: others[kind](properties[name])})
        assert unchanged.training_record('fp', changed) != base, name


def test_a_handed_on_model_keeps_its_figures_runs_no_step_and_says_why(tmp_path):
    # The served model's record as an older version wrote it: `replicas`, no flip.
    unchanged.write_record(str(tmp_path / '3'), _record(), TrainResult(
        eval_accuracy=0.95, steps_run=400, epochs_run=20.0, stop_reason='ran the maximum'))
    record = unchanged.read_record(str(tmp_path / '3'))
    record['metrics']['replicas'] = 2
    (tmp_path / '3' / unchanged.RECORD_PATH).write_text(json.dumps(record))
    result = unchanged.handed_on(str(tmp_path / '3'), 3)
    assert result == TrainResult(
        eval_accuracy=0.95, steps_run=0, num_replicas=2, training_skipped=True,
        stop_reason='no new data: serving version 3 unchanged (same input fingerprint, '
                    'training parameters and model code; not trained)')
