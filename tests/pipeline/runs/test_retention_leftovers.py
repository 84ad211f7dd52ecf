"""pipeline/runs/retention.py beyond artifacts: the logs and report pages of older runs, the
checkpoint folders of abandoned trainings, and the Model a rollback's copy came from."""
import json
import os
import time

from pipeline.runs import retention
from pipeline.runs import run_files


def _touch(path, text='x', age_s=0.0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    if age_s:
        stamp = time.time() - age_s
        os.utime(path, (stamp, stamp))


def test_logs_and_pages_of_runs_beyond_the_newest_k_go(tmp_path):
    out = str(tmp_path)
    runs = [f'2026-12-0{day}T10:00:00.000000' for day in range(1, 6)]
    for run in runs:
        _touch(os.path.join(out, 'logs', f'{run}.log'))
        _touch(os.path.join(out, 'logs', f'{run}.summary.json'), '{}')
        name = run_files.run_file_name(run)
        _touch(os.path.join(out, run_files.REPORTS_DIR, f'{name}.html'))
        _touch(os.path.join(out, run_files.REPORTS_DIR, name, 'history_accuracy.png'))
    _touch(os.path.join(out, 'logs', 'score-2026-12-01T09:00:00.log'))
    _touch(os.path.join(out, 'report.html'))
    # Keep 2, and run 1 is kept too (unfinished, say): runs 2 and 3 lose their files.
    assert retention.collect_run_files(out, {runs[0]}, keep=2) == 2
    left = sorted(os.listdir(os.path.join(out, 'logs')))
    assert left == sorted([f'{r}.{ext}' for r in (runs[0], runs[3], runs[4])
                           for ext in ('log', 'summary.json')]
                          + ['score-2026-12-01T09:00:00.log'])
    pages = sorted(os.listdir(os.path.join(out, run_files.REPORTS_DIR)))
    assert pages == sorted(run_files.run_file_name(r) + suffix for r in (runs[0], runs[3], runs[4])
                           for suffix in ('', '.html'))
    assert os.path.exists(os.path.join(out, 'report.html'))
    assert retention.collect_run_files(out, {runs[0]}, keep=2) == 0   # nothing more


def test_checkpoints_no_kept_run_touched_go(tmp_path):
    root = str(tmp_path)
    old = os.path.join(root, '_checkpoints', 'ImageTrainer', 'aaa')
    resumable = os.path.join(root, '_checkpoints', 'ImageTrainer', 'bbb')
    _touch(os.path.join(old, 'ckpt-100.index'), 'x' * 100, age_s=3600)
    _touch(os.path.join(old, 'checkpoint'), 'x', age_s=3600)
    _touch(os.path.join(resumable, 'ckpt-50.index'), 'y' * 10)
    oldest_kept_ms = (time.time() - 60) * 1000   # the oldest kept run started a minute ago
    assert retention.collect_abandoned_checkpoints(root, oldest_kept_ms) == (1, 101)
    assert not os.path.exists(old) and os.path.exists(resumable)
    assert retention.collect_abandoned_checkpoints(root, None) == (0, 0)   # no run kept


def test_a_rollback_copy_keeps_the_model_it_came_from(tmp_path):
    serving, out = str(tmp_path / 'serving'), str(tmp_path)
    for version in (3, 5):
        _touch(os.path.join(serving, str(version), 'saved_model.pb'))
    with open(os.path.join(out, 'rollbacks.jsonl'), 'w') as handle:
        for record in ({'version': 4, 'copy_of': 1}, {'version': 5, 'copy_of': 4}):
            handle.write(json.dumps(record) + '\n')
    served, _ = retention.serving_versions(serving, out)
    assert served == [
        (os.path.join(serving, '3'), 'serving version 3 came from it'),
        (os.path.join(serving, '5'), 'serving version 5 came from it'),
        (os.path.join(serving, '4'), 'serving version 5 is a rollback copy of version 4'),
        (os.path.join(serving, '1'), 'serving version 5 is a rollback copy of version 1')]
