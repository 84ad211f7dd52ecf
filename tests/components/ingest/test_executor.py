"""Executor tests: ImageExampleGen's Do on a handful of real images, with TFX artifacts."""
import json
import os

from PIL import Image
import pytest
from tfx.types import artifact_utils

import tensorflow as tf

from core import features, inputs
from components.ingest.formats import rules
import photo_folders
from ingest_helpers import ingest_do as _do


def test_do_writes_a_standard_examples_artifact(small_images, tmp_path):
    examples = _do(small_images, str(tmp_path / 'examples'))
    assert artifact_utils.decode_split_names(examples.split_names) == ['train', 'eval']
    assert examples.get_string_custom_property('payload_format') == 'FORMAT_TF_EXAMPLE'
    assert examples.get_string_custom_property('file_format') == 'tfrecords_gzip'
    assert json.loads(examples.get_string_custom_property('class_names')) == ['0', '1', '2']
    train = examples.get_int_custom_property('num_written_train')
    evaluation = examples.get_int_custom_property('num_written_eval')
    assert train + evaluation == examples.get_int_custom_property('num_found') == 15
    assert examples.get_int_custom_property('num_rejected') == 0
    for split in ('train', 'eval'):
        assert len(os.listdir(os.path.join(examples.uri, f'Split-{split}'))) == 2


def test_corrupt_image_fails_with_a_message_naming_the_file(small_images, tmp_path):
    bad = os.path.join(small_images, '1', 'broken.png')
    with open(os.path.join(small_images, '1', sorted(os.listdir(
            os.path.join(small_images, '1')))[0]), 'rb') as handle:
        data = handle.read()
    with open(bad, 'wb') as handle:
        handle.write(data[:40])  # a truncated PNG
    with pytest.raises(rules.IngestionError) as raised:
        _do(small_images, str(tmp_path / 'examples'))
    message = str(raised.value)
    assert 'Rejected 1 of 16 records' in message and 'corrupt_image 1' in message
    assert bad in message and 'corrupt or truncated' in message


def test_unreadable_file_is_named_in_the_error(small_images, tmp_path):
    # A dangling symlink cannot be read, by root too (unlike a chmod 000 file).
    os.symlink(str(tmp_path / 'gone.png'), os.path.join(small_images, '2', 'not_a_file.png'))
    with pytest.raises(rules.IngestionError) as raised:
        _do(small_images, str(tmp_path / 'examples'))
    assert 'not_a_file.png' in str(raised.value)


def test_rejections_within_the_threshold_are_logged_not_fatal(small_images, tmp_path, caplog):
    with open(os.path.join(small_images, '0', 'empty.png'), 'wb'):
        pass
    properties = {}
    with caplog.at_level('INFO', logger='absl'):
        examples = _do(small_images, str(tmp_path / 'examples'), max_rejected_fraction=0.5,
                       properties=properties)
    assert examples.get_int_custom_property('num_rejected') == 1
    assert examples.get_int_custom_property('num_rejected_empty_file') == 1
    assert examples.get_int_custom_property('num_found') == 16
    # The executor adds the counts to its execution properties; TFX publishes those on the
    # execution in ML Metadata (and the e2e tests read them back there).
    assert properties['num_found'] == 16 and properties['num_rejected_empty_file'] == 1
    assert properties['num_written_train'] + properties['num_written_eval'] == 15
    assert 'rejected 1 (empty_file 1)' in caplog.text
    quarantine = examples.get_string_custom_property('quarantine_uri')
    with open(quarantine) as handle:
        assert json.loads(handle.read())['reason'] == 'empty_file'


def test_nothing_valid_is_a_clear_error(small_images, tmp_path):
    for folder in os.listdir(small_images):
        for name in os.listdir(os.path.join(small_images, folder)):
            with open(os.path.join(small_images, folder, name), 'wb') as handle:
                handle.write(b'garbage')
    with pytest.raises(rules.IngestionError, match='Nothing valid under .*not_an_image 15'):
        _do(small_images, str(tmp_path / 'examples'), max_rejected_fraction=0.99)


def test_automatic_shards_uncompressed_raw_resized_images(small_images, tmp_path):
    examples = _do(small_images, str(tmp_path / 'examples'), num_shards=0, compress=0,
                   image_size='[4, 6]', image_storage='raw', channels=3)
    for split in ('train', 'eval'):  # a few KB of images: one shard per split, no .gz
        assert os.listdir(os.path.join(examples.uri, f'Split-{split}')) == [
            'data_tfrecord-00000-of-00001']
    spec = inputs.InputSpec.from_json(examples.get_string_custom_property('input_spec'))
    assert (spec.storage, spec.channels) == ('raw', 3)
    path = os.path.join(examples.uri, 'Split-train', 'data_tfrecord-00000-of-00001')
    example = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(path))).numpy())
    feature = example.features.feature
    assert len(feature[features.IMAGE_RAW_KEY].bytes_list.value[0]) == 4 * 6 * 3
    assert (feature[features.HEIGHT_KEY].int64_list.value[0],
            feature[features.WIDTH_KEY].int64_list.value[0]) == (4, 6)


def test_missing_or_empty_input_base_is_a_clear_error(tmp_path):
    with pytest.raises(rules.IngestionError, match='Input base does not exist'):
        _do(str(tmp_path / 'nowhere'), str(tmp_path / 'examples'))
    os.makedirs(tmp_path / 'empty')
    with pytest.raises(rules.IngestionError, match='No class folders under'):
        _do(str(tmp_path / 'empty'), str(tmp_path / 'examples'))
    os.makedirs(tmp_path / 'empty' / 'cat')
    with pytest.raises(rules.IngestionError, match='Input is empty: no records found'):
        _do(str(tmp_path / 'empty'), str(tmp_path / 'examples'))


def test_span_pattern_resolves_the_class_root(small_images, tmp_path):
    span_root = tmp_path / 'spans'
    os.makedirs(span_root)
    os.rename(small_images, span_root / 'span-3')
    examples = _do(str(span_root), str(tmp_path / 'examples'), pattern='span-3/*/*')
    assert examples.get_int_custom_property('num_found') == 15


def test_an_empty_span_folder_is_a_one_line_error_naming_it(tmp_path):
    empty = tmp_path / 'spans' / 'span-4'
    os.makedirs(empty / 'cat')  # a class folder, but no image in it
    with pytest.raises(rules.IngestionError) as raised:
        _do(str(tmp_path / 'spans'), str(tmp_path / 'examples'), pattern='span-4/*/*')
    assert str(raised.value) == (f'Span folder {empty} is empty: expected one sub-folder per '
                                 'class holding its images.')


def _train_examples(examples):
    """{source path: feature map} of the train split as written."""
    out = {}
    for record in tf.data.TFRecordDataset(
            tf.io.gfile.glob(os.path.join(examples.uri, 'Split-train', '*')),
            compression_type='GZIP'):
        feature = tf.train.Example.FromString(record.numpy()).features.feature
        out[feature[features.SOURCE_KEY].bytes_list.value[0].decode()] = feature
    return out


def _train_paths(examples):
    return list(_train_examples(examples))


def test_sizes_and_colour_modes_of_the_train_images_are_recorded(tmp_path):
    written = photo_folders.make_folders(str(tmp_path / 'photos'), per_class=10)
    # A grey picture saved as a palette GIF is not colour; a colour one is.
    grey_gif = Image.open(tmp_path / 'photos' / 'sky' / '001.jpg').convert('P')
    grey_gif.save(tmp_path / 'photos' / 'sky' / 'grey.gif')
    examples = _do(str(tmp_path / 'photos'), str(tmp_path / 'examples'), num_shards=1)
    train = _train_paths(examples)
    assert len(train) == examples.get_int_custom_property('num_written_train')
    assert 'sky/grey.gif' in train  # (the path hashes to train: pinned by the split test)
    written['sky/grey.gif'] = {'size': grey_gif.size[::-1], 'mode': 'P', 'format': 'GIF'}
    sizes, colour = photo_folders.counts(written, train)
    recorded = json.loads(examples.get_string_custom_property('image_sizes'))
    assert recorded == {f'{h}x{w}': n for (h, w), n in sizes.items()}
    assert list(recorded.values()) == sorted(recorded.values(), reverse=True)
    assert examples.get_int_custom_property('color_images') == colour > 0
    modes = json.loads(examples.get_string_custom_property('color_modes'))
    assert modes == {mode: sum(written[p]['mode'] == mode for p in train)
                     for mode in ('L', 'RGB', 'P') if any(written[p]['mode'] == mode
                                                          for p in train)}
    assert examples.get_int_custom_property('resized_at_ingestion') == 0


def test_resized_raw_images_record_what_was_stored(tmp_path):
    written = photo_folders.make_folders(str(tmp_path / 'photos'), per_class=10)
    examples = _do(str(tmp_path / 'photos'), str(tmp_path / 'examples'), num_shards=1,
                   image_size='[28, 28]', image_storage='raw', channels=0)
    train = _train_paths(examples)
    _, colour = photo_folders.counts(written, train)
    assert json.loads(examples.get_string_custom_property('image_sizes')) == {
        '28x28': len(train)}
    assert examples.get_int_custom_property('resized_at_ingestion') == sum(
        written[p]['size'] != (28, 28) for p in train)
    assert examples.get_int_custom_property('color_images') == colour
    assert json.loads(examples.get_string_custom_property('color_modes')) == {
        'L': len(train) - colour, 'RGB': colour}
    # Each image kept its own channels: the spec says so, and so does every Example.
    assert inputs.InputSpec.from_json(examples.get_string_custom_property('input_spec')) == (
        inputs.InputSpec(storage='raw', channels=0))
    for path, feature in _train_examples(examples).items():
        channels = 3 if written[path]['mode'] == 'RGB' else 1
        assert feature[features.CHANNELS_KEY].int64_list.value == [channels]
        assert len(feature[features.IMAGE_RAW_KEY].bytes_list.value[0]) == 28 * 28 * channels
    # Forced grey at ingestion: no colour stored, and the conversion is counted.
    grey = _do(str(tmp_path / 'photos'), str(tmp_path / 'grey'), num_shards=1,
               image_size='[28, 28]', image_storage='raw', channels=1)
    assert grey.get_int_custom_property('color_images') == 0
    assert grey.get_int_custom_property('grayscaled_at_ingestion') == colour


def test_the_drivers_work_resolves_the_latest_span_and_fingerprints_it(small_images, tmp_path):
    """Open-source KFP runs no driver: the entry point does its work (component.py
    resolve_input, which ingest_do runs as every orchestrator does), and the executor records
    it on the Examples."""
    spans = tmp_path / 'spans'
    os.makedirs(spans / 'span-1' / 'a')
    Image.new('L', (8, 8), 200).save(spans / 'span-1' / 'a' / 'old.png')
    os.rename(small_images, spans / 'span-2')
    properties = {}
    examples = _do(str(spans), str(tmp_path / 'examples'), pattern='span-{SPAN}/*/*',
                   properties=properties)
    assert examples.get_int_custom_property('span') == 2
    assert examples.get_int_custom_property('num_found') == 15  # span-2's, not span-1's
    fingerprint = examples.get_string_custom_property('input_fingerprint')
    assert fingerprint.startswith('split:images,num_files:15,total_bytes:')
    assert 'span-2' in json.loads(properties['input_config'])['splits'][0]['pattern']


def test_a_driver_resolved_input_is_left_as_the_driver_made_it(small_images, tmp_path):
    examples = _do(small_images, str(tmp_path / 'examples'), input_fingerprint='given',
                   span=0, version=None)
    # Not resolved again: the driver's values, recorded on the Examples by Do as well (Vertex
    # AI's hook hands them over as parameters, span and version as JSON numbers).
    assert examples.get_string_custom_property('input_fingerprint') == 'given'
    assert examples.get_int_custom_property('span') == 0
    assert not examples.has_custom_property('version')
    examples = _do(small_images, str(tmp_path / 'hook'), input_fingerprint='hook', span=3.0,
                   version=1.0)
    assert examples.get_string_custom_property('input_fingerprint') == 'hook'
    assert (examples.get_int_custom_property('span'),
            examples.get_int_custom_property('version')) == (3, 1)
