"""Unit tests of the rules every source shares: reasons, quarantine lines, split/shard keys."""
import json

import pytest

from components.ingest.formats import image_formats, images, rules


def test_bad_record_needs_a_known_reason():
    error = rules.BadRecord('empty_file', 'empty file (0 bytes)')
    assert error.reason == 'empty_file' and str(error) == 'empty file (0 bytes)'
    with pytest.raises(KeyError, match='unknown rejection reason'):
        rules.BadRecord('typo', 'x')
    assert isinstance(image_formats.BadImage('not_an_image', 'x'), rules.BadRecord)


def test_quarantine_line_has_source_reason_detail_and_raw_row():
    line = rules.quarantine_line('t.csv', rules.BadRecord('missing_label', 'empty'), 'a,b,')
    assert json.loads(line) == {'source': 't.csv', 'reason': 'missing_label', 'detail': 'empty',
                                'raw': 'a,b,'}


def test_split_matches_the_image_rule_and_shards_spread_evenly():
    keys = [f'cls/{i}.png' for i in range(4000)]
    assert [rules.split_of(k, 80) for k in keys] == [images.split_of(k, 80) for k in keys]
    shards = [rules.shard_of(k, 4) for k in keys]
    assert all(900 < shards.count(s) < 1100 for s in range(4))
    # Shard bits are independent of split bits: every shard holds both splits.
    train_shards = {rules.shard_of(k, 4) for k in keys if rules.split_of(k, 80) == 'train'}
    eval_shards = {rules.shard_of(k, 4) for k in keys if rules.split_of(k, 80) == 'eval'}
    assert train_shards == eval_shards == {0, 1, 2, 3}


@pytest.mark.parametrize('total_mb, fraction, shards', [
    (0, 0.8, 1), (50, 0.8, 1), (160, 0.8, 1), (161, 0.8, 2), (1000, 0.8, 7), (1000, 0.2, 2)])
def test_automatic_shards_stay_at_most_128_mb(total_mb, fraction, shards):
    assert rules.auto_shards(total_mb * 1024 * 1024, fraction) == shards


def test_a_whole_percent_splits_as_the_100_bucket_rule_did_and_a_finer_share_lies_between():
    # The rule before hundredths of a percent: `hash % 100 < train_percent`.
    keys = [f'cls/{i}.png' for i in range(20_000)]
    for percent in (1, 50, 80, 99):
        assert [rules.split_of(k, percent) for k in keys] == [
            'train' if rules._hash64(k, 0) % 100 < percent else 'eval' for k in keys]
    train = {p: {k for k in keys if rules.split_of(k, p) == 'train'} for p in (91, 91.66, 92)}
    assert train[91] < train[91.66] < train[92]
    # A plain 10,000-bucket hash would not nest: about 91.66% of the keys, within 3 sd.
    assert abs(len(train[91.66]) / len(keys) - 0.9166) < 0.006


@pytest.mark.parametrize('records, share, says', [
    (0, 80.0, '80% train: 20% of about 0 records is at most 5,000'),
    (1_797, 80.0, '80% train: 20% of about 1,797 records is at most 5,000'),
    (25_000, 80.0, '80% train'),
    (30_000, 83.33, '83.33% train, not 80%: 16.67% of about 30,000 records is about 5,001 to '
                    'evaluate on (max_eval_records 5,000), and the rest are trained on'),
    (60_000, 91.66, '91.66% train, not 80%: 8.34% of about 60,000 records is about 5,004'),
    (10 ** 9, 99.99, '0.01% of about 1,000,000,000 records is about 100,000'),  # the finest
])
def test_the_train_share_from_the_data_leaves_about_max_eval_records_to_evaluate_on(
        records, share, says):
    found, reason = rules.train_share(records, 5_000)
    assert found == share and says in reason
