"""Unit tests of the console lines: a timed line per stage with its key figure, training
progress as a few lines off a terminal, and the one line Ctrl-C prints."""
import io
import logging
import re

import pytest
import tensorflow as tf
from ml_metadata.proto import metadata_store_pb2

from training import progress as progress_lib
from pipeline.local import console as console_lib
from pipeline.runs import summary as summary_lib


def _examples(written_train, written_eval, rejected):
    artifact = metadata_store_pb2.Artifact()
    for key, value in (('num_written_train', written_train), ('num_written_eval', written_eval),
                       ('num_rejected', rejected)):
        artifact.custom_properties[key].int_value = value
    return artifact


def test_a_stage_line_is_timed_and_ends_with_the_stages_key_figure(caplog):
    stream = io.StringIO()
    summary = summary_lib.RunSummary('r', {'ImageExampleGen': 'CACHED', 'StatisticsGen':
                                           'COMPLETE'}, {'Examples': [_examples(1400, 397, 3)]})
    stages = console_lib.StageLines(console_lib.Console(stream), lambda: summary)
    logger = logging.getLogger('test_console.absl')
    logger.addHandler(stages)
    logger.setLevel(logging.INFO)
    with caplog.at_level(logging.INFO):
        for node in ('ImageExampleGen', 'StatisticsGen'):
            logger.info('Component %s is running.', node)
            assert stages.current == node
            logger.info('Component %s is finished.', node)
    logger.removeHandler(stages)
    lines = stream.getvalue().splitlines()
    assert re.fullmatch(r'ImageExampleGen {5}cached {4} *\d+\.\d s  1,797 examples, 3 rejected',
                        lines[0]), lines
    assert re.fullmatch(r'StatisticsGen {7}complete {2} *\d+\.\d s', lines[1]), lines
    assert stages.current is None
    assert [r.getMessage() for r in caplog.records if r.name == 'pipeline.local.console'] == lines


def _progress_lines(start, total, last, stop_early=False, replan=None):
    """The console lines of a training from step `start` to `last` of `total`, off a terminal;
    replan (step, total): the length re-planned at that step."""
    stream = io.StringIO()
    unsubscribe = progress_lib.subscribe(console_lib.TrainingProgress(console_lib.Console(stream)))
    try:
        progress = progress_lib.Reporter()  # what loop.run_training publishes through
        progress.update(step=start, total=total, start_step=start, running=True)
        for step in range(start + 1, last + 1):
            progress.update(step=step)
            if replan and step == replan[0]:
                progress.update(total=replan[1])  # what the loop does when it re-plans
        if stop_early:
            progress.update(total=last)  # what loop.run_training does when it stops early
        progress.update(running=False)
    finally:
        unsubscribe()
    return stream.getvalue().splitlines()


def test_training_off_a_terminal_is_a_line_at_each_quarter_and_a_resume_says_so():
    lines = _progress_lines(100, 400, 400)
    assert lines[0] == '  training: resuming at step 100 of 400'
    assert [line.split(',')[0] for line in lines[1:]] == [
        '  training: step 200/400', '  training: step 300/400']
    assert all(re.search(r', ETA \d+ s$', line) for line in lines[1:])


def test_training_stopped_early_says_so_and_ends_its_progress():
    lines = _progress_lines(0, 400, 280, stop_early=True)
    assert [line.split(',')[0] for line in lines[:-1]] == [
        '  training: step 100/400', '  training: step 200/400']  # no 300/400 line
    assert lines[-1] == '  training: stopped early at step 280 of 400'


@pytest.mark.parametrize('new_total', [300, 500])
def test_a_re_planned_length_is_a_line_and_the_quarters_follow_it(new_total):
    lines = _progress_lines(0, 400, new_total, replan=(120, new_total))
    assert lines[1] == (f'  training: length re-planned at step 120: {new_total} steps '
                        'instead of 400')
    assert [line.split(',')[0] for line in lines] == [
        '  training: step 100/400', lines[1]] + [
        f'  training: step {m}/{new_total}' for m in (new_total * k // 4 for k in (1, 2, 3))
        if m > 120]   # the quarters of the new length still ahead
    assert not any('stopped early' in line for line in lines)


def test_ctrl_c_names_the_step_in_training_and_the_stage_otherwise(tmp_path):
    stages = console_lib.StageLines(console_lib.Console(io.StringIO()), lambda: None)
    listener = console_lib.TrainingProgress(console_lib.Console(io.StringIO()))
    assert stages.interrupted_message(listener.last) == 'interrupted before any stage ran'
    stages.emit(logging.LogRecord('absl', logging.INFO, '', 0, 'Component %s is running.',
                                  ('ImageTrainer',), None))
    assert stages.interrupted_message(listener.last) == (
        'interrupted in ImageTrainer; finished stages are cached; run the same command to resume')
    checkpoints = str(tmp_path / 'checkpoints')
    listener(progress_lib.Progress(step=37, total=400, checkpoint_dir=checkpoints, running=True))
    assert stages.interrupted_message(listener.last) == (
        'interrupted at step 37, before the first checkpoint; run the same command to train again')
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=tf.Variable(100)),
                                         checkpoints, max_to_keep=2)
    manager.save(checkpoint_number=100)  # what the loop's manager writes
    listener(progress_lib.Progress(step=137, total=400, checkpoint_dir=checkpoints, running=True))
    assert stages.interrupted_message(listener.last) == (
        'interrupted at step 137; checkpoints kept; run the same command to resume '
        '(from step 100)')
