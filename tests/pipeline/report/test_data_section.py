"""The report's Data section over the training window: its spans with their examples per split,
and the examples per class and split summed over every span (the model trained on all of them),
counted from the spans' records (tests/support/report_inputs.py writes them as ingestion does).
"""
import json
import os
import re
import shutil

from core import window
from pipeline.runs import summary as summary_lib
from pipeline.report import page, sections
from report_inputs import artifact, write_span_records, write_statistics

SPAN_1 = {'train': {'a': 3, 'b': 2}, 'eval': {'a': 1, 'b': 1}}
SPAN_2 = {'train': {'a': 4, 'b': 5, 'c': 1}, 'eval': {'a': 2, 'c': 1}}


def _summary(tmp_path, compress_older=True, **properties):
    """A run whose window is spans 1 and 2; StatisticsGen saw span 2 only, as in a real run."""
    older = write_span_records(tmp_path / 'span1', SPAN_1, compress=compress_older)
    newest = write_span_records(tmp_path / 'span2', SPAN_2)
    entries = [window.SpanEntry(span=s, uri=u, fingerprint='', num_train=sum(c['train'].values()),
                                num_eval=sum(c['eval'].values()))
               for s, u, c in ((1, older, SPAN_1), (2, newest, SPAN_2))]
    examples = artifact(newest, span=2, num_written_train=10, num_written_eval=3,
                        class_names=json.dumps(['a', 'b', 'c']),
                        **{window.PROPERTY: window.to_json(entries)}, **properties)
    stats = write_statistics(str(tmp_path / 'stats'), SPAN_2)
    return summary_lib.RunSummary(run_id='r2', states={'StatisticsGen': 'COMPLETE'},
                                  outputs={'Examples': [examples], 'ExampleStatistics': [stats]})


def _data(text):
    data = text.split('<h2 id="data">Data</h2>')[1].split('<h2')[0]
    return data, re.findall(r'<tr><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td></tr>', data)


def test_the_data_table_counts_each_class_and_split_over_the_whole_window(tmp_path):
    # Span 1 uncompressed: ingestion writes either, and both are read.
    summary = _summary(tmp_path, compress_older=False)
    text = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    data, rows = _data(text)
    assert 'Training window: spans 1-2.' in data and 'split:' not in data  # none recorded
    assert '<th>class</th><th>train (window)</th><th>eval (window)</th>' in data
    # Per span, then per class summed over both (StatisticsGen's span 2 alone: a 4/2, total 10/3).
    assert rows == [('span 1', '5', '2'), ('span 2 (newest)', '10', '3'), ('window', '15', '5'),
                    ('a', '7', '3'), ('b', '7', '1'), ('c', '1', '1'), ('total', '15', '5')]
    assert 'Image sizes of span 2, the newest (pixels, min..max):' in data
    assert os.path.exists(tmp_path / 'out' / 'reports' / 'r2' / 'data_classes.png')


def test_each_span_is_counted_once_then_read_from_the_kept_counts(tmp_path):
    summary = _summary(tmp_path)
    first = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    kept = tmp_path / 'out' / 'reports' / sections.WINDOW_COUNTS_FILE
    assert set(json.load(open(kept))) == {str(tmp_path / 'span1'), str(tmp_path / 'span2')}
    for split in ('train', 'eval'):  # an unchanged folder is not read again
        shutil.rmtree(tmp_path / 'span1' / f'Split-{split}')
        os.makedirs(tmp_path / 'span1' / f'Split-{split}')
    second = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    assert _data(second)[1] == _data(first)[1]


def test_a_window_that_can_no_longer_be_read_shows_the_newest_span_and_says_so(tmp_path):
    summary = _summary(tmp_path)
    shutil.rmtree(tmp_path / 'span1')  # e.g. deleted by retention, never counted before
    text = open(page.write_report(summary, str(tmp_path / 'out')), encoding='utf-8').read()
    data, rows = _data(text)
    assert "The window&#x27;s records can no longer be read (" in data
    assert 'the counts per class are those of span 2 only (StatisticsGen).' in data
    assert rows == [('a', '4', '2'), ('b', '5', '0'), ('c', '1', '1'), ('total', '10', '3')]


def test_the_newest_spans_split_is_said_with_its_reason(tmp_path):
    reason = '91.66% train, not 80%: 8.34% of about 60,000 records is about 5,004 to evaluate on'
    summary = _summary(tmp_path, split_reason=reason)
    data, _ = _data(open(page.write_report(summary, str(tmp_path / 'out')),
                         encoding='utf-8').read())
    assert f"The newest span's split: {reason}." in data.replace('&#x27;', "'")


def test_a_run_without_span_folders_says_its_split_too(tmp_path):
    uri = write_span_records(tmp_path / 'span0', SPAN_1)
    entries = [window.SpanEntry(span=0, uri=uri, fingerprint='', num_train=5, num_eval=2)]
    examples = artifact(uri, span=0, num_written_train=5, num_written_eval=2,
                        class_names=json.dumps(['a', 'b']),
                        split_reason='80% train (train_percent)',
                        **{window.PROPERTY: window.to_json(entries)})
    summary = summary_lib.RunSummary(
        run_id='r1', states={'StatisticsGen': 'COMPLETE'},
        outputs={'Examples': [examples],
                 'ExampleStatistics': [write_statistics(str(tmp_path / 'stats'), SPAN_1)]})
    data, _ = _data(open(page.write_report(summary, str(tmp_path / 'out')),
                         encoding='utf-8').read())
    assert 'Training window' not in data and '<p>Split: 80% train (train_percent).</p>' in data
