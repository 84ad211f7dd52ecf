"""Unit tests of input listing before Beam starts: span folders, and the empty-span error."""
import os
import shutil

import pytest

from components.ingest.formats.rules import IngestionError
from components.ingest.spans import listing

from helpers import DIGITS, copy_digits


def test_span_folders_lists_only_span_n_folders(tmp_path):
    copy_digits(str(tmp_path / 'span-2'), classes=('0',), per_class=1)
    os.makedirs(tmp_path / 'span-10')
    os.makedirs(tmp_path / 'span-x')
    (tmp_path / 'span-3').write_text('a file, not a span')
    assert listing.span_folders(str(tmp_path)) == {
        2: str(tmp_path / 'span-2'), 10: str(tmp_path / 'span-10')}
    assert listing.span_folders(str(tmp_path / 'nowhere')) == {}


@pytest.mark.parametrize('layout', ['no class folders', 'empty class folders',
                                    'hidden files only'])
def test_an_empty_latest_span_is_named_in_one_line(tmp_path, layout):
    copy_digits(str(tmp_path / 'span-1'), classes=('0', '1'), per_class=2)
    latest = tmp_path / 'span-2'
    os.makedirs(latest)
    if layout != 'no class folders':
        os.makedirs(latest / '0')
        os.makedirs(latest / '1')
    if layout == 'hidden files only':
        (latest / '0' / '.DS_Store').write_bytes(b'\0')
    with pytest.raises(IngestionError) as raised:
        listing.check_latest_span(str(tmp_path), 'images')
    message = str(raised.value)
    assert message == (f'Span folder {latest} is empty: expected one sub-folder per class '
                       'holding its images (the latest span-<N>/ folder is ingested).')
    assert '\n' not in message


def test_a_latest_span_with_images_passes_even_after_an_empty_one(tmp_path):
    os.makedirs(tmp_path / 'span-1')  # an old empty span is not ingested
    copy_digits(str(tmp_path / 'span-2'), classes=('0',), per_class=1)
    listing.check_latest_span(str(tmp_path), 'images')
    listing.check_latest_span(str(tmp_path / 'span-2'), 'images')  # no spans: nothing to check


def test_an_empty_csv_span_expects_csv_files(tmp_path):
    os.makedirs(tmp_path / 'span-1')
    (tmp_path / 'span-1' / 'notes.txt').write_text('not a table')
    with pytest.raises(IngestionError, match=r'span-1 is empty: expected one or more \*\.csv'):
        listing.check_latest_span(str(tmp_path), 'csv')
    shutil.copy(os.path.join(os.path.dirname(DIGITS), 'wine', 'wine.csv'), tmp_path / 'span-1')
    listing.check_latest_span(str(tmp_path), 'csv')


def test_estimated_output_bytes_sums_the_class_folders(tmp_path):
    from components.ingest.graph import beam_pipeline
    root = copy_digits(str(tmp_path / 'images'), classes=('0', '1'), per_class=3)
    size = sum(os.path.getsize(os.path.join(root, c, f))
               for c in ('0', '1') for f in os.listdir(os.path.join(root, c)))
    options = beam_pipeline.IngestOptions(root=root, classes=('0', '1'))
    assert listing.estimated_output_bytes(options) == size
    raw = beam_pipeline.IngestOptions(root=root, classes=('0', '1'), image_storage='raw',
                                      image_size=(4, 5), channels=1)
    assert listing.estimated_output_bytes(raw) == 6 * 4 * 5


def test_automatic_shards_leave_one_train_shard_per_training_worker(tmp_path):
    data = copy_digits(str(tmp_path / 'data'), classes=('0', '1'), per_class=5)
    props = {'source': 'images', 'train_percent': 80, 'num_shards': 0}
    small = listing.options_from_properties(data, data, props)
    assert small.num_shards == 1  # a few KB: one shard per split
    wide = listing.options_from_properties(data, data, dict(props, min_train_shards=4))
    assert (wide.num_shards, wide.eval_shards) == (4, small.eval_shards)
    fixed = listing.options_from_properties(data, data, dict(props, num_shards=3,
                                                                min_train_shards=4))
    assert fixed.num_shards == 3  # a configured count is used as it is


def test_the_train_share_from_the_data_is_chosen_per_span_and_said(tmp_path):
    data = copy_digits(str(tmp_path / 'data'), classes=('0', '1'), per_class=10)
    props = {'source': 'images', 'train_percent': 0, 'num_shards': 1}
    # 20 images: 20% is 4, at most 5 to evaluate on, so 80%.
    options = listing.options_from_properties(data, data, dict(props, max_eval_records=5))
    assert options.train_percent == 80 and options.split_reason.startswith('80% train: 20% ')
    # At most 2: 10% of the 20 listed files.
    options = listing.options_from_properties(data, data, dict(props, max_eval_records=2))
    assert options.train_percent == 90 and options.split_reason.startswith(
        '90% train, not 80%: 10% of about 20 records is about 2 to evaluate on')
    configured = listing.options_from_properties(data, data, dict(props, train_percent=70,
                                                                   max_eval_records=2))
    assert listing.options_from_properties(data, data, {'source': 'images'}).train_percent == 80
    assert (configured.train_percent, configured.split_reason) == (
        70, '70% train (train_percent)')
