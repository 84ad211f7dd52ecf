"""The judgement of an ingestion run's counts: the error text, a few differing examples, and the
quarantine kept outside the artifact folder when the run fails."""
import json
import os

import pytest

from components.ingest.formats import rules
from components.ingest.graph import checks, stats


def _counts(found, written_train, written_eval, **rejected):
    counts = stats.empty_counts()
    counts.update(found=found, written_train=written_train, written_eval=written_eval,
                  rejected=sum(rejected.values()))
    counts.update({f'rejected_{r}': n for r, n in rejected.items()})
    return counts


def _artifact(tmp_path, entries):
    """A quarantine in an Examples folder laid out as TFX lays it out locally."""
    output_dir = tmp_path / 'pipeline_root' / 'ImageExampleGen' / 'examples' / '7'
    (output_dir / rules.QUARANTINE_DIR).mkdir(parents=True)
    lines = [rules.quarantine_line(source, rules.BadRecord(reason, detail, column), raw='r')
             for source, reason, detail, column in entries]
    (output_dir / rules.QUARANTINE_DIR / rules.QUARANTINE_FILE).write_text(
        '\n'.join(lines) + '\n')
    return str(output_dir)


# Like the taxi table: the same fault over and over, and a few others.
ENTRIES = ([('t.csv', 'non_numeric', f"'x{i % 3}' in numeric column 'fare' is not a number",
             'fare') for i in range(40)]
           + [('t.csv', 'wrong_column_count', '9 fields, the header has 10', None)] * 5
           + [('t.csv', 'missing_label', "empty label column 'kind'", 'kind')] * 3
           + [('t.csv', 'non_numeric', "'?' in numeric column 'tips' is not a number", 'tips')])


def test_a_rejection_failure_counts_by_reason_and_column_shows_five_examples_and_keeps_the_file(
        tmp_path):
    output_dir = _artifact(tmp_path, ENTRIES)
    counts = _counts(100, 40, 11, non_numeric=41, wrong_column_count=5, missing_label=3)
    by_column = {('non_numeric', 'fare'): 40, ('non_numeric', 'tips'): 1,
                 ('missing_label', 'kind'): 3}
    root = str(tmp_path / 'pipeline_root')
    with pytest.raises(rules.IngestionError) as raised:
        checks.check_counts(counts, output_dir, 0.01, '/data', root, by_column=by_column)
    message = str(raised.value)
    kept = checks.kept_quarantine_path(root, output_dir)
    assert os.path.dirname(kept) == os.path.join(root, '_quarantine', 'ImageExampleGen')
    assert message.startswith('Rejected 49 of 100 records (49.0%), more than the allowed 1.0%')
    assert "  non_numeric 41 (by column: 'fare' 40, 'tips' 1)" in message
    assert '  wrong_column_count 5\n' in message
    assert "  missing_label 3 (by column: 'kind' 3)" in message
    examples = [line for line in message.splitlines() if line.startswith('  t.csv: ')]
    # One per (reason, column) first, then other bad values: no two lines alike.
    assert len(examples) == 5 and len(set(examples)) == 5
    assert sum("column 'tips'" in e for e in examples) == 1
    assert sum('wrong_column_count' in e for e in examples) == 1
    assert '5 of 49 rejected, for example:' in message
    assert message.endswith(f'Every rejected record, with its reason: {kept}')
    with open(kept) as handle:
        assert [json.loads(line)['reason'] for line in handle].count('non_numeric') == 41


def test_nothing_valid_also_keeps_the_quarantine(tmp_path):
    output_dir, root = _artifact(tmp_path, ENTRIES[:2]), str(tmp_path / 'pipeline_root')
    with pytest.raises(rules.IngestionError, match='Nothing valid under /data') as raised:
        checks.check_counts(_counts(2, 0, 0, non_numeric=2), output_dir, 0.5, '/data', root)
    assert checks.kept_quarantine_path(root, output_dir) in str(raised.value)
    assert os.path.exists(checks.kept_quarantine_path(root, output_dir))


def test_rejections_within_bounds_are_a_warning_and_nothing_is_copied(tmp_path, caplog):
    output_dir, root = _artifact(tmp_path, ENTRIES[:1]), str(tmp_path / 'pipeline_root')
    with caplog.at_level('WARNING'):
        checks.check_counts(_counts(100, 80, 19, non_numeric=1), output_dir, 0.05, '/data',
                            root, by_column={('non_numeric', 'fare'): 1})
    assert "non_numeric 1 (by column: 'fare' 1)" in caplog.text
    assert checks.quarantine_path(output_dir) in caplog.text
    assert not os.path.exists(os.path.join(root, '_quarantine'))


def test_counts_that_do_not_reconcile_fail():
    with pytest.raises(rules.IngestionError, match='do not reconcile'):
        checks.check_counts(_counts(10, 5, 3, non_numeric=1), '/nowhere', 0.5, '/data', '/root')


def test_samples_stop_early_and_never_repeat_a_detail(tmp_path):
    output_dir = _artifact(tmp_path, ENTRIES)
    samples = checks.sample_rejections(checks.quarantine_path(output_dir), limit=3)
    assert [s['detail'] for s in samples] == [
        "'x0' in numeric column 'fare' is not a number", '9 fields, the header has 10',
        "empty label column 'kind'"]
    assert checks.sample_rejections(str(tmp_path / 'none.jsonl')) == []
