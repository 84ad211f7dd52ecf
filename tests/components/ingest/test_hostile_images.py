"""A landing folder as users have one: one bad file never stops or hangs the run.

Executor-level (tests/support/ingest_helpers.py ingest_do: the driver's work, which resolves and
fingerprints the input, then the executor). Real images sit next to a FIFO, a socket, a
dangling link, a decompression bomb (a 30000x30000 grayscale PNG header over a tiny zlib
stream), a file named with the bytes b'\\xff\\xfe.png', and WebP / TIFF images. A SIGALRM
guard (no_hang) fails a test that would hang (a blocking open of the FIFO) instead of hanging
the suite.
"""
import base64
import io
import json
import os
import socket

import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from core import features
from components.ingest.formats import files, image_formats, images, rules
from components.ingest.graph import checks
from components.ingest.spans import name_safe_input
from tfx.components.example_gen import driver
from tfx.proto import example_gen_pb2

from ingest_helpers import bomb_png, ingest_do, no_hang

BAD_NAME = os.fsdecode(b'\xff\xfe.png')  # as Python lists it: surrogate escapes


@pytest.fixture(autouse=True)
def guard():
    with no_hang():
        yield


def _encoded(mode: str, image_format: str, **save) -> bytes:
    channels = {'L': 1, 'RGB': 3, 'CMYK': 4}[mode]
    pixels = np.random.default_rng(0).integers(0, 255, (8, 8, channels), np.uint8)
    image = Image.fromarray(pixels.squeeze() if channels == 1 else pixels,
                            mode if mode != 'CMYK' else None)
    if mode == 'CMYK':
        image = Image.frombytes('CMYK', (8, 8), pixels.tobytes())
    buffer = io.BytesIO()
    image.save(buffer, image_format, **save)
    return buffer.getvalue()


def _landing_folder(small_images, tmp_path):
    """15 digits plus one hostile entry of each kind; returns {relative name: expected reason}."""
    folder0, folder1 = os.path.join(small_images, '0'), os.path.join(small_images, '1')
    os.mkfifo(os.path.join(folder0, 'pipe.png'))
    server = socket.socket(socket.AF_UNIX)
    server.bind(os.path.join(folder0, 'sock.png'))
    os.symlink(os.path.join(folder1, 'gone.png'), os.path.join(folder1, 'dangling.png'))
    with open(os.path.join(folder1, 'bomb.png'), 'wb') as handle:
        handle.write(bomb_png())
    png = open(os.path.join(folder0, sorted(os.listdir(folder0))[0]), 'rb').read()
    with open(os.path.join(os.fsencode(folder1), b'\xff\xfe.png'), 'wb') as handle:
        handle.write(png)
    with open(os.path.join(folder1, 'photo.webp'), 'wb') as handle:
        handle.write(_encoded('RGB', 'WEBP', lossless=True))
    with open(os.path.join(folder1, 'scan.tif'), 'wb') as handle:
        handle.write(_encoded('CMYK', 'TIFF'))
    return server, {'0/pipe.png': 'not_a_file', '0/sock.png': 'not_a_file',
                    '1/dangling.png': 'unreadable', '1/bomb.png': 'too_large',
                    '1/scan.tif': 'unsupported_format'}


def _sources(examples_uri):
    found = []
    for path in tf.io.gfile.glob(os.path.join(examples_uri, 'Split-*', '*')):
        for record in tf.data.TFRecordDataset(path, compression_type='GZIP'):
            example = tf.train.Example.FromString(record.numpy())
            found.append(example.features.feature[features.SOURCE_KEY].bytes_list.value[0])
    return found


def test_hostile_entries_are_quarantined_with_their_type_and_the_run_completes(
        small_images, tmp_path):
    server, expected = _landing_folder(small_images, tmp_path)
    properties = {}
    with server:
        examples = ingest_do(small_images, str(tmp_path / 'out'), max_rejected_fraction=0.3,
                             properties=properties)
    quarantine = {os.path.relpath(entry['source'], small_images): entry
                  for entry in checks.read_quarantine(examples.uri)}
    assert {name: entry['reason'] for name, entry in quarantine.items()} == expected
    assert 'named pipe (FIFO)' in quarantine['0/pipe.png']['detail']
    assert 'socket' in quarantine['0/sock.png']['detail']
    assert 'dangling symlink' in quarantine['1/dangling.png']['detail']
    assert 'image of 900,000,000 pixels is over' in quarantine['1/bomb.png']['detail']
    assert '--max-image-pixels' in quarantine['1/bomb.png']['detail']
    assert '--convert-formats (ingest.convert_formats) TIFF' in quarantine['1/scan.tif']['detail']
    # 15 digits + the non-UTF-8 name + the WebP (converted) written; 5 rejected.
    assert (properties['num_found'], properties['num_rejected']) == (22, 5)
    assert properties['num_rejected_not_a_file'] == 2
    assert examples.get_int_custom_property('num_converted') == 1
    sources = _sources(examples.uri)
    assert b'1/\xff\xfe.png' in sources and b'1/photo.webp' in sources  # the exact bytes
    assert os.fsdecode(b'1/\xff\xfe.png') == '1/' + BAD_NAME


def test_a_lossy_conversion_happens_when_the_format_is_allowed(small_images, tmp_path):
    server, _ = _landing_folder(small_images, tmp_path)
    with server:
        examples = ingest_do(small_images, str(tmp_path / 'out'), max_rejected_fraction=0.3,
                             convert_formats='["TIFF"]')
    reasons = {os.path.relpath(e['source'], small_images): e['reason']
               for e in checks.read_quarantine(examples.uri)}
    assert '1/scan.tif' not in reasons and len(reasons) == 4
    assert examples.get_int_custom_property('num_converted') == 2


def test_the_rejected_fraction_still_decides(small_images, tmp_path):
    with open(os.path.join(small_images, '1', 'bomb.png'), 'wb') as handle:
        handle.write(bomb_png())
    os.mkfifo(os.path.join(small_images, '0', 'pipe.png'))
    with pytest.raises(rules.IngestionError) as raised:
        ingest_do(small_images, str(tmp_path / 'out'), max_rejected_fraction=0.1)
    message = str(raised.value)
    assert 'Rejected 2 of 17 records' in message
    assert 'too_large 1' in message and 'not_a_file 1' in message


@pytest.mark.filterwarnings('ignore::PIL.Image.DecompressionBombWarning')  # ours decides
def test_a_lower_pixel_limit_rejects_from_the_header(png_bytes):
    width, height = Image.open(io.BytesIO(png_bytes)).size
    with pytest.raises(image_formats.BadImage, match=r'over ingest.max_image_pixels') as raised:
        images.inspect_image(png_bytes, max_pixels=width * height - 1)
    assert raised.value.reason == 'too_large'
    assert images.inspect_image(png_bytes, max_pixels=width * height).width == width


def test_pillow_bomb_error_is_a_rejection_not_a_crash():
    # Over twice the limit Pillow itself raises DecompressionBombError inside Image.open.
    with pytest.raises(image_formats.BadImage, match=r'900,000,000 pixels is over') as raised:
        images.inspect_image(bomb_png(), max_pixels=1000)
    assert raised.value.reason == 'too_large'
    assert Image.MAX_IMAGE_PIXELS == 1000


def test_conversion_to_png_keeps_lossless_pixels_and_names_the_setting_otherwise():
    grey_tiff = _encoded('L', 'TIFF')
    info = images.inspect_image(grey_tiff)
    assert info.converted and info.format == 'TIFF'
    stored = images.prepare(grey_tiff, info, None, 'encoded', 0)
    assert stored.payload.startswith(b'\x89PNG') and stored.mode == 'L'
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(stored.payload))),
                          np.asarray(Image.open(io.BytesIO(grey_tiff))))
    cmyk = _encoded('CMYK', 'TIFF')
    with pytest.raises(image_formats.BadImage, match='mode CMYK becomes 8-bit.*--convert-formats'):
        images.inspect_image(cmyk)
    allowed = images.inspect_image(cmyk, convert_formats=('TIFF',))
    assert images.prepare(cmyk, allowed, None, 'encoded', 0).mode == 'RGB'


def test_formats_we_never_decode_are_rejected_before_decoding():
    buffer = io.BytesIO()
    Image.new('1', (4, 4)).save(buffer, 'XBM')
    with pytest.raises(image_formats.BadImage, match='unsupported image format XBM') as raised:
        images.inspect_image(buffer.getvalue())
    assert raised.value.reason == 'unsupported_format'
    assert 'XBM' not in image_formats.STORED_FORMATS | image_formats.CONVERTED_FORMATS


def test_a_file_replaced_or_changed_while_read_is_quarantined(tmp_path, monkeypatch):
    path = str(tmp_path / 'a.png')
    with open(path, 'wb') as handle:
        handle.write(b'12345')
    real_fstat = os.fstat
    calls = []

    def growing(fd):  # the second fstat (after the read) sees a bigger file
        calls.append(fd)
        info = real_fstat(fd)
        if len(calls) == 2:
            with open(path, 'ab') as handle:
                handle.write(b'more')
            return real_fstat(fd)
        return info
    monkeypatch.setattr(files.os, 'fstat', growing)
    with pytest.raises(rules.BadRecord, match='changed while being read') as raised:
        files.read_regular(path)
    assert raised.value.reason == 'changed'
    monkeypatch.undo()
    os.remove(path)
    with pytest.raises(rules.BadRecord) as raised:
        files.read_regular(path)
    assert raised.value.reason == 'vanished'


def test_a_non_utf8_name_is_fingerprinted_and_quarantined_in_a_round_trip_form(tmp_path):
    folder = tmp_path / 'in' / 'cat'
    folder.mkdir(parents=True)
    (folder / 'ok.png').write_bytes(b'x')
    with open(os.path.join(os.fsencode(str(folder)), b'\xff\xfe.png'), 'wb') as handle:
        handle.write(b'not an image')
    with pytest.raises(UnicodeDecodeError):  # why name_safe_input exists
        tf.io.gfile.glob(str(tmp_path / 'in' / '*' / '*'))
    split = example_gen_pb2.Input.Split(name='images', pattern='*/*')
    processor = name_safe_input.Processor(str(tmp_path / 'in'), [split])
    assert processor.resolve_span_and_version() == (0, None)
    assert 'num_files:2,total_bytes:13' in processor.get_input_fingerprint(0, None)
    line = json.loads(rules.quarantine_line(
        'cat/' + BAD_NAME, rules.BadRecord('not_an_image', 'x')))
    assert line['source'] == 'cat/\\xff\\xfe.png'
    assert base64.b64decode(line['source_base64']) == b'cat/\xff\xfe.png'


def test_the_driver_resolves_spans_of_non_utf8_names(tmp_path):
    # The local orchestrator's driver fingerprinted with tf.io.gfile and stopped the run.
    from components.ingest import component
    folder = tmp_path / 'in' / 'span-2' / 'cat'
    folder.mkdir(parents=True)
    with open(os.path.join(os.fsencode(str(folder)), b'\xff\xfe.png'), 'wb') as handle:
        handle.write(b'12345')
    (tmp_path / 'in' / 'span-1' / 'cat').mkdir(parents=True)
    (tmp_path / 'in' / 'span-1' / 'cat' / 'old.png').write_bytes(b'1')
    def properties():
        return {'input_base': str(tmp_path / 'in'), 'source': 'images', 'input_config': json.dumps(
            {'splits': [{'name': 'images', 'pattern': 'span-{SPAN}/*/*'}]})}
    with pytest.raises(UnicodeDecodeError):  # the stock driver
        driver.FileBasedDriver(None).resolve_exec_properties(properties(), None, None)
    properties = component.SpanCheckingDriver(None).resolve_exec_properties(
        properties(), None, None)
    assert properties['span'] == 2
    assert 'num_files:1,total_bytes:5' in properties['input_fingerprint']
    assert 'span-2/*/*' in properties['input_config']
