"""Executor tests of ImageTrainer over a window of spans, and its skip of unchanged input (the
served model handed on untrained)."""
import json
import os

import tensorflow as tf

from components.trainer import executor
import trainer_inputs as inputs

# What these tests train proves nothing about the architecture (which spans train, what is
# recorded, when a training is skipped): the helpers' one-Dense model instead of the default
# ResNet, whose building, tracing and export were about half of this file's time.
SMALL_MODEL = 'helpers.unlearnable_model'


def _do(tmp_path, examples, run, **overrides):
    return inputs.do(tmp_path, examples, run, **{'model_builder': SMALL_MODEL, **overrides})


def test_unchanged_input_settings_and_code_hand_the_served_model_on_untrained(tmp_path):
    from core import versions
    examples = inputs.examples(tmp_path)
    examples.set_string_custom_property('input_fingerprint', 'split:images,num_files:75,x')
    first, _ = _do(tmp_path, examples, '1')
    trained = os.path.join(first.uri, 'Format-Serving')
    record = json.load(open(os.path.join(trained, 'assets.extra', 'training_record.json')))
    assert record['trained_from']['input_fingerprint'] == 'split:images,num_files:75,x'
    assert record['metrics']['steps_run'] == 3
    served = versions.push(trained, str(tmp_path / 'serving'), keep=5)

    again, again_run = _do(tmp_path, examples, '2')
    assert again.get_float_custom_property('training_skipped') == 1.0
    assert again.get_string_custom_property('stop_reason').startswith(
        'no new data: serving version 1 unchanged')
    assert again.get_float_custom_property('eval_accuracy') == \
        first.get_float_custom_property('eval_accuracy')
    assert not os.path.exists(os.path.join(again_run.uri, 'metrics.json'))  # nothing trained
    handed_on = os.path.join(again.uri, 'Format-Serving')
    assert versions.model_digest(handed_on) == versions.model_digest(served.path)
    assert not versions.push(handed_on, str(tmp_path / 'serving'), keep=5).created

    examples.set_string_custom_property('input_fingerprint', 'split:images,num_files:76,y')
    changed, changed_run = _do(tmp_path, examples, '3')
    assert not changed.has_custom_property('training_skipped')
    assert os.path.exists(os.path.join(changed_run.uri, 'metrics.json'))
    other, _ = _do(tmp_path, examples, '4', learning_rate=1e-3)
    assert not other.has_custom_property('training_skipped')  # settings changed: trains


def test_do_trains_on_every_span_of_the_window_and_records_it(tmp_path, monkeypatch):
    from core import window
    from training import job as job_lib
    jobs = []
    train = job_lib.train_and_export
    monkeypatch.setattr(job_lib, 'train_and_export',
                        lambda job, **paths: jobs.append(job) or train(job, **paths))
    examples = inputs.window_examples(tmp_path, {1: 's1', 2: 's2'})
    # One epoch: the whole window's 120 train examples at 16 x 2 per update, 3 updates (the
    # newest span alone would make 1).
    model, _ = _do(tmp_path, examples, '1', train_steps=0, train_epochs=1.0,
              accumulation_steps=2)
    assert model.get_float_custom_property('steps_run') == 3
    (job,) = jobs
    files = tf.io.gfile.glob(job.train_pattern)
    assert sorted(os.path.relpath(f, str(tmp_path)).split(os.sep)[0] for f in files) == [
        's1', 's2']  # one train shard of each span
    assert len(tf.io.gfile.glob(job.eval_pattern)) == 2
    assert model.get_string_custom_property('spans') == '1,2'
    recorded = window.from_json(model.get_string_custom_property('window'))
    assert [e.span for e in recorded] == [1, 2]
    assert window.read_training_data(os.path.join(model.uri, 'Format-Serving')) == recorded


def test_the_window_keys_checkpoints_and_the_unchanged_skip(tmp_path):
    from core import window
    from core import versions
    examples = inputs.window_examples(tmp_path, {1: 's1', 2: 's2'})
    first, _ = _do(tmp_path, examples, '1')
    versions.push(os.path.join(first.uri, 'Format-Serving'), str(tmp_path / 'serving'), keep=5)
    # The same spans, the newest copied to another folder (an uncached rerun on KFP).
    rerun = inputs.window_examples(tmp_path, {1: 's1', 2: 's2b'})
    assert executor.checkpoint_dir([rerun], inputs.properties()) == \
        executor.checkpoint_dir([examples], inputs.properties())
    again, _ = _do(tmp_path, rerun, '2')
    assert again.get_float_custom_property('training_skipped') == 1.0
    assert again.get_string_custom_property('spans') == '1,2'
    # A new span moves the window: another checkpoint folder, and training.
    newer = inputs.window_examples(tmp_path, {2: 's2', 3: 's3'})
    assert executor.checkpoint_dir([newer], inputs.properties()) != \
        executor.checkpoint_dir([examples], inputs.properties())
    trained, _ = _do(tmp_path, newer, '3')
    assert not trained.has_custom_property('training_skipped')
    assert trained.get_string_custom_property('spans') == '2,3'
    # Another split of the same files is other data: it retrains too.
    newer.set_string_custom_property('ingest_parameters', '{"train_percent": 50}')
    assert executor.checkpoint_dir([newer], inputs.properties()) != \
        executor.checkpoint_dir([inputs.window_examples(tmp_path, {2: 's2', 3: 's3'})],
                                inputs.properties())
    assert window.fingerprint(window.read(newer)) == 'span 2: fp-2\nspan 3: fp-3'
