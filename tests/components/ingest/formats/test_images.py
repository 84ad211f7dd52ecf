"""Unit tests of the ingestion rules: decoding and validation, class listing, split hashing."""
import io
import os

import numpy as np
import pytest
from PIL import Image

from components.ingest.formats import image_formats, images


def _encode(fmt: str, size=(5, 7), mode='RGB') -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((size[1], size[0], 3), 128, np.uint8)).convert(mode).save(buffer, fmt)
    return buffer.getvalue()


@pytest.mark.parametrize('fmt', ['PNG', 'JPEG', 'BMP', 'GIF'])
def test_inspect_decodes_accepted_formats(fmt):
    info = images.inspect_image(_encode(fmt))
    assert (info.format, info.width, info.height) == (fmt, 5, 7)


def test_inspect_reads_the_embedded_digit(png_bytes):
    info = images.inspect_image(png_bytes)
    assert (info.format, info.height, info.width, info.mode) == ('PNG', 8, 8, 'L')


@pytest.mark.parametrize('data, reason', [
    (b'', 'empty file'),
    (b'hello, not an image', 'not a recognised image format'),
])
def test_inspect_rejects_non_images(data, reason):
    with pytest.raises(image_formats.BadImage, match=reason):
        images.inspect_image(data)


def test_inspect_rejects_truncated_png(png_bytes):
    with pytest.raises(image_formats.BadImage, match='corrupt or truncated'):
        images.inspect_image(png_bytes[: len(png_bytes) // 2])


def test_inspect_accepts_tiff_for_conversion_and_rejects_formats_we_do_not_read():
    # TIFF is read only to be converted to PNG (tests/components/ingest/test_hostile_images.py);
    # XBM is not read at all.
    assert images.inspect_image(_encode('TIFF')).converted
    with pytest.raises(image_formats.BadImage, match='unsupported image format XBM'):
        images.inspect_image(_encode('XBM', mode='1'))


def test_split_is_deterministic_and_close_to_the_ratio():
    paths = [f'class{i % 7}/img_{i}.png' for i in range(5000)]
    first = [images.split_of(p, 80) for p in paths]
    assert first == [images.split_of(p, 80) for p in paths]
    train_fraction = first.count('train') / len(first)
    assert 0.77 < train_fraction < 0.83
    assert [images.split_of(p, 1) for p in paths[:200]].count('train') < 10
    assert [images.split_of(p, 99) for p in paths[:200]].count('eval') < 10


def test_split_values_are_pinned():
    # Pins the hash itself: changing it would silently move files between splits in every
    # existing data set, so evaluation would leak into training on the next retrain.
    paths = ['0/0000.png', '0/0010.png', '3/0003.png', '9/1796.png', 'cat/x.png', 'dog/y.jpg']
    assert [images.split_of(p, 50) for p in paths] == [
        'eval', 'train', 'train', 'train', 'train', 'eval']


def test_split_does_not_depend_on_path_separator_style():
    assert images.split_of('cat/x.png', 50) == images.split_of(os.path.join('cat', 'x.png'), 50)


def test_list_classes_sorted_and_skips_hidden_and_files(tmp_path):
    for name in ['b', 'a', '.hidden', 'c']:
        (tmp_path / name).mkdir()
    (tmp_path / 'README.txt').write_text('not a class')
    assert images.list_classes(str(tmp_path)) == ['a', 'b', 'c']
    assert images.class_index(['a', 'b', 'c']) == {'a': 0, 'b': 1, 'c': 2}


def test_list_classes_errors_name_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match='does not exist'):
        images.list_classes(str(tmp_path / 'missing'))
    with pytest.raises(ValueError, match='No class folders under ' + str(tmp_path)):
        images.list_classes(str(tmp_path))


def _photo(mode: str, fmt: str = 'PNG') -> bytes:
    from sklearn.datasets import load_sample_images  # a real photo, shipped offline
    image = Image.fromarray(load_sample_images().images[1][100:124, 200:230]).convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, fmt)
    return buffer.getvalue()


@pytest.mark.parametrize('mode, fmt, read_as, color', [
    ('L', 'PNG', 'L', False), ('LA', 'PNG', 'LA', False), ('1', 'PNG', '1', False),
    ('I', 'PNG', 'I;16', False), ('L', 'JPEG', 'L', False), ('RGB', 'JPEG', 'RGB', True),
    ('RGBA', 'PNG', 'RGBA', True), ('CMYK', 'JPEG', 'CMYK', True),
])
def test_colour_is_judged_by_the_mode(mode, fmt, read_as, color):
    info = images.inspect_image(_photo(mode, fmt))
    assert (info.mode, info.color) == (read_as, color)


def test_a_palette_image_is_colour_only_when_it_uses_a_colour():
    grey = images.inspect_image(_photo('L', 'GIF'))      # a grey picture as a GIF palette
    colour = images.inspect_image(_photo('RGB', 'GIF'))
    assert (grey.mode, grey.color) == ('P', False)
    assert (colour.mode, colour.color) == ('P', True)


def test_prepare_keeps_each_images_own_channels_unless_told():
    grey, colour = _photo('L', 'GIF'), _photo('RGBA', 'PNG')
    for data, channels, mode in ((grey, 1, 'L'), (colour, 3, 'RGB')):
        stored = images.prepare(data, images.inspect_image(data), (8, 10), 'raw', 0)
        assert (stored.channels, stored.mode, stored.height, stored.width) == (
            channels, mode, 8, 10)
        assert len(stored.payload) == 8 * 10 * channels
    forced = images.prepare(colour, images.inspect_image(colour), None, 'raw', 1)
    assert (forced.channels, forced.mode, forced.color) == (1, 'L', False)
    kept = images.prepare(colour, images.inspect_image(colour), None, 'encoded', 1)
    assert (kept.payload, kept.mode, kept.color) == (colour, 'RGBA', True)  # the file as is
