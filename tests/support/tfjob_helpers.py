"""Shared by the training-job tests on the real cluster (tests/cluster/): a job whose workers
fail at once, the trainer's artifacts and properties, and what two workers leave."""
from core import inputs as inputs_lib
from training import job as job_lib, loop


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


def artifacts(tmp_path, train_files=2):
    """The trainer's Examples (one train file per worker: FILE sharding) and its outputs, as
    tests/launch/test_tfjob.py makes them."""
    import json
    import os
    from tfx.types import artifact_utils, standard_artifacts
    from helpers import write_digit_examples
    examples = standard_artifacts.Examples()
    examples.uri = str(tmp_path / 'examples')
    examples.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    for index in range(train_files):
        write_digit_examples(os.path.join(examples.uri, 'Split-train', f'part-{index}.gz'),
                             ('0', '1'), 16, offset=16 * index)
    write_digit_examples(os.path.join(examples.uri, 'Split-eval', 'part-0.gz'), ('0', '1'), 8,
                         offset=40)
    examples.set_string_custom_property('class_names', json.dumps(['0', '1']))
    examples.set_int_custom_property('num_written_train', 32 * train_files)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model' / '5')
    model_run = standard_artifacts.ModelRun()
    model_run.uri = str(tmp_path / 'root' / 'ImageTrainer' / 'model_run' / '5')
    return {'examples': [examples]}, {'model': [model], 'model_run': [model_run]}


def properties(spec, **overrides):
    """The trainer's execution properties with the compiled workers spec (the `launcher`
    property: the 'kubernetes' launcher and its TFJobSpec)."""
    from launch import launchers
    from training.params import TrainParams
    props = TrainParams.bare(
        model_builder='models.resnet.build_model', image_size=(8, 8), channels=1,
        train_steps=6, global_batch_size=8, learning_rate=3e-3, seed=1,
        skip_unchanged=False).to_properties()
    props['launcher'] = launchers.Choice('kubernetes', spec.to_json()).to_json()
    props.update(overrides)
    return props


def assert_two_workers_trained(model, model_run) -> None:
    """What a two-worker job (TFJob or TrainJob) leaves: the chief's SavedModel as the Model,
    and the figures of a 2-replica, 6-step training on the Model and in metrics.json."""
    import json
    import os
    import tensorflow as tf
    serving = os.path.join(model.uri, 'Format-Serving')
    assert 'serving_default' in tf.saved_model.load(serving).signatures
    recorded = {key: model.get_float_custom_property(key)
                for key in ('num_workers', 'num_replicas', 'steps_run')}
    assert recorded == {'num_workers': 2.0, 'num_replicas': 2.0, 'steps_run': 6.0}
    with tf.io.gfile.GFile(os.path.join(model_run.uri, 'metrics.json')) as handle:
        assert json.load(handle)['num_workers'] == 2
