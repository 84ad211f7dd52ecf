"""The result folder: counts that reconcile, the summary line, an atomic publish."""
import json
import os

import pytest

from components.score import predictions, results
from components.score.served import ScoringError

ROWS = [{'source': 'a.png', 'class': 'cat', 'probability': 0.9, 'top_k': [['cat', 0.9]],
         'model_version': 3}]
COUNTS = {'num_found': 3, 'num_written_train': 1, 'num_rejected': 2,
          'num_rejected_corrupt_image': 1, 'num_rejected_empty_file': 1,
          'num_rejected_too_large': 0}


def test_summary_counts_by_reason_and_the_line_states_the_version():
    summary = results.summarize(3, '/s/3', '/in', COUNTS, scored=1)
    assert summary['quarantined_by_reason'] == {'corrupt_image': 1, 'empty_file': 1}
    assert summary['inputs'] == summary['scored'] + summary['quarantined'] == 3
    assert results.summary_line(summary) == (
        'Scored 1 of 3 inputs with model version 3 (/s/3); 2 quarantined '
        '(corrupt_image 1, empty_file 1)')


@pytest.mark.parametrize('scored, counts', [
    (2, COUNTS),                                           # a prediction too many
    (1, dict(COUNTS, num_rejected_empty_file=0)),          # reasons do not add up
])
def test_counts_that_do_not_reconcile_stop_before_anything_is_written(scored, counts):
    with pytest.raises(ScoringError, match='Counts do not reconcile'):
        results.summarize(3, '/s/3', '/in', counts, scored)


def test_publish_renames_a_whole_folder_and_never_overwrites(tmp_path):
    summary = results.summarize(3, '/s/3', '/in', COUNTS, scored=1)
    final = tmp_path / 'scores' / 'run-v3'
    paths = results.publish(str(final), ROWS, '{"reason": "corrupt_image"}\n', summary)
    assert sorted(os.listdir(final)) == ['predictions.csv', 'predictions.jsonl',
                                         'quarantine.jsonl', 'summary.json']
    assert json.load(open(paths['summary']))['files']['jsonl'] == 'predictions.jsonl'
    assert os.listdir(tmp_path / 'scores') == ['run-v3']
    with pytest.raises(ScoringError, match='never overwritten'):
        results.publish(str(final), ROWS, '', summary)


def test_a_failure_while_writing_leaves_nothing_visible(tmp_path, monkeypatch):
    def broken(folder, rows):
        os.makedirs(folder)
        open(os.path.join(folder, 'predictions.jsonl'), 'w').write('{"half": ')
        raise OSError('disk full')
    monkeypatch.setattr(predictions, 'write', broken)
    summary = results.summarize(3, '/s/3', '/in', COUNTS, scored=1)
    with pytest.raises(OSError, match='disk full'):
        results.publish(str(tmp_path / 'scores' / 'run-v3'), ROWS, '', summary)
    assert os.listdir(tmp_path / 'scores') == []
