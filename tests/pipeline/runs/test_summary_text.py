"""The run summary in words (pipeline/runs/summary_text.py): input, table imputation, baseline
lines."""
import dataclasses
import json
import os

from ml_metadata.proto import metadata_store_pb2

from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text

from helpers import mlmd_artifact

_model = mlmd_artifact


def _summary(model):
    return summary_lib.RunSummary(run_id='r', states={'ImageTrainer': 'COMPLETE'},
                                  outputs={'Model': [model]})


def test_the_input_line_follows_the_accuracy_line():
    statement = 'trained at 28×28×3; 85% of images 28×28, 15% resized'
    lines = summary_text.format_summary(_summary(_model(
        train_accuracy=1.0, eval_accuracy=0.9, input_statement=statement))).splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith('  accuracy:'))
    assert lines[index + 1] == f'  input: {statement}'


def test_a_model_without_a_statement_has_no_input_line():
    text = summary_text.format_summary(_summary(_model(train_accuracy=1.0, eval_accuracy=0.9)))
    assert 'input:' not in text


def test_the_training_line_says_how_long_and_why_it_stopped():
    reason = ('early stopping: held-out accuracy did not improve for 3 epochs after epoch 11 '
              "(best 0.9312); restored epoch 11's weights")
    lines = summary_text.format_summary(_summary(_model(
        train_accuracy=1.0, eval_accuracy=0.9, stop_reason=reason, epochs_run=14.0,
        held_out_examples=4812.0, steps_run=280.0))).splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith('  accuracy:'))
    assert lines[index + 1] == (f'  training: 14 epochs, {reason} (held-out 4,812 examples '
                                'of train)')
    why = '5.11%, not 10%: 2,500 rank epochs as well, and the rest are trained on'
    cut = summary_text.format_summary(_summary(_model(
        stop_reason=reason, epochs_run=14.0, held_out_examples=2481.0,
        held_out_reason=why))).splitlines()
    assert f'  training: 14 epochs, {reason} (held-out 2,481 examples of train: {why})' in cut
    batched = summary_text.format_summary(_summary(_model(
        stop_reason=reason, epochs_run=14.0, global_batch_size=128.0))).splitlines()
    assert f'  training: 14 epochs at batch 128, {reason}' in batched
    fixed = summary_text.format_summary(_summary(_model(
        stop_reason='fixed length: 30 steps (train_steps / --steps)', steps_run=30.0)))
    assert '  training: fixed length: 30 steps (train_steps / --steps)' in fixed.splitlines()
    assert 'training:' not in summary_text.format_summary(_summary(_model(eval_accuracy=0.9)))


def _table_examples(missing):
    examples = _model(input_spec=json.dumps({
        'kind': 'tabular', 'storage': 'encoded', 'channels': 0, 'categorical': ['zone'],
        'numeric': [['fare', 9.5, 3.0], ['tips', 1.0, 0.5]], 'missing': list(missing)}),
        missing_values=json.dumps(missing))
    return examples


def test_a_table_run_says_its_columns_and_what_was_imputed():
    summary = _summary(_model(train_accuracy=1.0, eval_accuracy=0.9))
    summary.outputs['Examples'] = [_table_examples({'tips': 40, 'fare': 3})]
    lines = summary_text.format_summary(summary).splitlines()
    assert ('  input: table of 2 numeric and 1 categorical columns; empty numeric values imputed '
            'with the train mean, with a missing-value indicator: tips 40, fare 3') in lines
    summary.outputs['Examples'] = [_table_examples({})]
    assert ('  input: table of 2 numeric and 1 categorical columns'
            in summary_text.format_summary(summary).splitlines())


def _served(tmp_path, versions_present):
    serving = tmp_path / 'serving'
    for version in versions_present:
        (serving / str(version)).mkdir(parents=True)
        (serving / str(version) / 'saved_model.pb').write_bytes(b'x')
    return str(serving)


def _baseline_summary(serving_dir, state, served_version, pushed_version):
    baseline = metadata_store_pb2.Artifact()
    baseline.custom_properties['served_version'].int_value = served_version
    pushed = metadata_store_pb2.Artifact()
    pushed.custom_properties['pushed'].int_value = 1
    pushed.custom_properties['pushed_version'].string_value = str(pushed_version)
    return summary_lib.RunSummary(
        run_id='r', states={'ServedModelBaseline': state},
        outputs={'Model': [baseline], 'PushedModel': [pushed]},
        execution_properties={'ServedModelBaseline': {'serving_dir': serving_dir}})


def test_a_cached_rerun_names_the_model_served_now(tmp_path):
    serving = _served(tmp_path, [1])
    cached = _baseline_summary(serving, 'CACHED', -1, 1)
    assert summary_text.baseline_text(cached) == (
        "none (nothing served yet), chosen when this model was first evaluated; "
        "served now: version 1, this run's model")
    assert summary_text.served_now(cached) == (1, os.path.join(serving, '1'))


def test_a_fresh_run_names_only_the_baseline_it_was_compared_with(tmp_path):
    fresh = _baseline_summary(_served(tmp_path, [1, 2]), 'COMPLETE', 1, 2)
    assert summary_text.baseline_text(fresh) == 'served version 1'


def test_a_served_model_for_another_task_is_named_as_such(tmp_path):
    other = _baseline_summary(_served(tmp_path, [1]), 'COMPLETE', 1, 1)
    other.baseline_model().custom_properties['incompatible_reason'].string_value = 'classes'
    assert summary_text.baseline_text(other) == (
        'served version 1 (a model for another task: not compared, see below)')


def test_the_beam_line_says_how_beam_ran_and_only_when_known():
    reason = 'in-process (DirectRunner in_memory): 1,797 files, 0.2 MB < 64.0 MB'
    summary = _summary(_model(train_accuracy=1.0, eval_accuracy=0.9))
    lines = summary_text.format_summary(dataclasses.replace(summary, beam=reason)).splitlines()
    assert lines[2] == f'  beam: {reason}'  # right after the steps line
    assert 'beam:' not in summary_text.format_summary(summary)


def test_the_precision_line_says_the_policy_and_why_auto_chose_it():
    reason = ('auto on a bf16 CPU: 2.1M multiply-adds per example < 125M, below which '
              'bfloat16 is slower')
    lines = summary_text.format_summary(_summary(_model(
        train_accuracy=1.0, eval_accuracy=0.9, mixed_precision='float32',
        precision_reason=reason))).splitlines()
    assert f'  precision: float32 ({reason})' in lines
    asked = summary_text.format_summary(_summary(_model(
        mixed_precision='mixed_bfloat16', precision_reason='asked'))).splitlines()
    assert '  precision: mixed_bfloat16' in asked
    # A model that records no reason: no line rather than half of one.
    assert 'precision:' not in summary_text.format_summary(_summary(_model(
        mixed_precision='float32')))


def test_the_train_step_and_speed_lines_say_xla_the_trial_and_the_cost():
    lines = summary_text.format_summary(_summary(_model(
        train_accuracy=0.93, eval_accuracy=0.92, xla=0.0,
        xla_reason='auto: nothing beat float32 by 5% in a timed trial of the train step',
        step_trial='float32 1,520 img/s; float32 + XLA 790 img/s (0.52x)',
        step_trial_seconds=14.2,
        examples_per_second=1480.0, train_flops_per_second=93e9,
        peak_flops_per_second=300e9, peak_dtype='float32', input_wait_fraction=0.02,
        epoch_seconds='[40.2, 31.0, 33.4]'))).splitlines()
    assert ('  train step: XLA off (auto: nothing beat float32 by 5% in a timed trial of the '
            'train step); trial (14 s): float32 1,520 img/s; float32 + XLA 790 img/s (0.52x)'
            ) in lines
    assert ('  speed: 1,480 img/s, 93 GFLOP/s: 31% of the float32 matmul peak measured after '
            'training (300 GFLOP/s); epochs 31-33 s (the first 40 s, with tracing); input wait '
            '2%') in lines
    # Waiting on the input a quarter of the time or more is said to be input-bound; an XLA
    # that was asked for needs no reason.
    slow = summary_text.format_summary(_summary(_model(
        xla=1.0, xla_reason='asked', examples_per_second=300.0, input_wait_fraction=0.4,
        epoch_seconds='[12.0]'))).splitlines()
    assert '  train step: XLA on' in slow
    assert '  speed: 300 img/s; epoch 12 s; input wait 40%: input-bound' in slow
    quick = summary_text.format_summary(_summary(_model(
        examples_per_second=6500.0, epoch_seconds='[1.2, 0.4, 0.4, 0.5]')))
    assert 'speed: 6,500 img/s; epochs 0.4-0.5 s (the first 1.2 s, with tracing)' in quick
    # A model that records none of these: no lines.
    older = summary_text.format_summary(_summary(_model(train_accuracy=1.0)))
    assert 'train step:' not in older and 'speed:' not in older


def test_the_window_line_names_the_spans_and_the_examples_after_the_examples_line():
    from core import window
    entries = [window.SpanEntry(span=s, uri=f'/e/{s}', fingerprint='f', num_train=t, num_eval=e)
               for s, t, e in ((2, 797, 199), (3, 800, 200), (4, 794, 198))]
    examples = mlmd_artifact(window=window.to_json(entries), num_written_train=794,
                             num_written_eval=198, span=4,
                             window_note="span 1 left out: its classes ['a'] are not ...")
    summary = summary_lib.RunSummary(run_id='r', states={}, outputs={'Examples': [examples]})
    lines = summary_text.format_summary(summary).splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith('  examples:'))
    assert lines[index + 1] == ("  window: spans 2-4, 2,391 train / 597 eval examples (span 1 "
                                "left out: its classes ['a'] are not ...)")
    del examples.custom_properties['window']  # an artifact that records no window: no line
    assert 'window:' not in summary_text.format_summary(summary)
    examples.custom_properties['window'].string_value = window.to_json([entries[0].__class__(
        span=0, uri='/e', fingerprint='f', num_train=1, num_eval=1)])
    assert 'window:' not in summary_text.format_summary(summary)  # no span folders
