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
