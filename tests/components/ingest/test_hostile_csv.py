"""CSV as Excel and pandas write it: BOMs, CRLF, quoted fields spanning lines,
Latin-1 and UTF-16, over-long records, a FIFO named *.csv.

Executor-level tests (ingest_do) on a penguin-like table the tests write, and unit tests of
the quote-aware range planning (formats/csv_records.py) that keeps big files splittable.
"""
import json
import os

import pytest
import tensorflow as tf

from components.ingest.formats import csv_records, rules, table_rows
from components.ingest.graph import checks
from ingest_helpers import ingest_do, no_hang

HEADER = 'species,island,bill_length_mm,notes'
ISLANDS = ('Biscoe', 'Dream', 'Torgersen')


def _rows(count=60, island=None, notes=lambda i: f'note {i}'):
    return [f'{("Adelie", "Gentoo")[i % 2]},{island or ISLANDS[i % 3]},{30 + i % 17}.5,'
            f'{notes(i)}' for i in range(count)]


def _write(tmp_path, text: str, encoding='utf-8', bom=b'', name='penguins.csv'):
    folder = tmp_path / 'table'
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(bom + text.encode(encoding))
    return str(folder)


def _ingest(folder, tmp_path, **extra):
    properties = {}
    examples = ingest_do(folder, str(tmp_path / 'out'), pattern='*.csv', source='csv',
                         label_column='species', feature_types='{}', properties=properties,
                         **extra)
    return examples, properties


def _values(examples_uri, column):
    found = []
    for path in tf.io.gfile.glob(os.path.join(examples_uri, 'Split-*', '*')):
        for record in tf.data.TFRecordDataset(path, compression_type='GZIP'):
            feature = tf.train.Example.FromString(record.numpy()).features.feature[column]
            found.append(feature.bytes_list.value[0].decode('utf-8'))
    return found


def test_excel_csv_utf8_with_bom_and_crlf(tmp_path):
    text = '\r\n'.join([HEADER] + _rows()) + '\r\n'
    examples, properties = _ingest(_write(tmp_path, text, bom=b'\xef\xbb\xbf'), tmp_path)
    assert (properties['num_found'], properties['num_rejected']) == (60, 0)
    assert json.loads(examples.get_string_custom_property('class_names')) == ['Adelie', 'Gentoo']
    assert sorted(set(_values(examples.uri, 'notes')))[:2] == ['note 0', 'note 1']  # no \r


def test_quoted_fields_spanning_lines_are_one_record(tmp_path):
    text = '\r\n'.join([HEADER] + _rows(notes=lambda i: f'"line one of {i}\r\nline ""two"""'
                                        if i % 9 == 0 else f'note {i}')) + '\r\n'
    examples, properties = _ingest(_write(tmp_path, text), tmp_path)
    assert (properties['num_found'], properties['num_rejected']) == (60, 0)
    assert 'line one of 9\r\nline "two"' in _values(examples.uri, 'notes')


def test_latin1_rows_are_rejected_naming_the_setting_then_read_with_it(tmp_path):
    text = '\n'.join([HEADER] + _rows(island='Biscöe')) + '\n'
    folder = _write(tmp_path, text, encoding='latin-1')
    with pytest.raises(rules.IngestionError) as raised:
        _ingest(folder, tmp_path)
    message = str(raised.value)
    assert 'encoding 60; setting: --encoding (ingest.encoding)' in message
    assert "byte 0xf6" in message
    examples, properties = _ingest(folder, tmp_path / 'again', encoding='latin-1')
    assert properties['num_rejected'] == 0
    assert set(_values(examples.uri, 'island')) == {'Biscöe'}


def test_one_undecodable_row_is_quarantined_as_encoding_within_the_fraction(tmp_path):
    rows = _rows(200)
    text = ('\n'.join([HEADER] + rows) + '\n').encode('utf-8') + 'Adelie,Biscöe,1.5,x\n'.encode(
        'latin-1')
    folder = tmp_path / 'table'
    folder.mkdir()
    (folder / 'penguins.csv').write_bytes(text)
    examples, properties = _ingest(str(folder), tmp_path)
    assert (properties['num_found'], properties['num_rejected_encoding']) == (201, 1)
    [entry] = checks.read_quarantine(examples.uri)
    assert entry['reason'] == 'encoding' and entry['raw'] == 'Adelie,Bisc\\xf6e,1.5,x'
    assert '--encoding' in entry['detail']


def test_utf16_with_bom_is_honoured(tmp_path):
    text = '\r\n'.join([HEADER] + _rows(island='Biscöe')) + '\r\n'
    examples, properties = _ingest(_write(tmp_path, text, encoding='utf-16-le',
                                          bom=b'\xff\xfe'), tmp_path)
    assert (properties['num_found'], properties['num_rejected']) == (60, 0)
    assert set(_values(examples.uri, 'island')) == {'Biscöe'}


def test_an_over_long_record_and_a_fifo_named_csv_are_quarantined(tmp_path):
    rows = _rows(300)
    rows[5] = 'Adelie,Dream,1.5,"' + 'x' * 5000 + '"'
    folder = _write(tmp_path, '\n'.join([HEADER] + rows) + '\n')
    os.mkfifo(os.path.join(folder, 'zz_pipe.csv'))
    with no_hang():  # a blocking open would hang: fail instead
        examples, properties = _ingest(folder, tmp_path, max_csv_record_bytes=1000)
    assert properties['num_rejected_too_large'] == 1
    assert properties['num_rejected_not_a_file'] == 1
    reasons = {entry['reason']: entry for entry in checks.read_quarantine(examples.uri)}
    assert 'named pipe (FIFO)' in reasons['not_a_file']['detail']
    assert '5,' in reasons['too_large']['detail'] and '--max-csv-record-bytes' in \
        reasons['too_large']['detail']


def test_an_undecodable_header_is_a_one_line_error_naming_the_setting(tmp_path):
    folder = _write(tmp_path, 'spécies,x\nA,1\n', encoding='latin-1')
    with pytest.raises(rules.IngestionError, match=r'header row of .*--encoding'):
        table_rows.read_header(os.path.join(folder, 'penguins.csv'))


@pytest.mark.parametrize('newline', ['\n', '\r\n'])
def test_ranges_start_on_record_boundaries_whatever_the_quotes(tmp_path, newline):
    # Multi-line quoted fields everywhere, so many cut points fall inside a quoted field.
    rows = [f'{i},"a ""quoted"" field{newline}over {i % 4} lines{newline}end",{i % 3}'
            for i in range(400)]
    path = tmp_path / 'big.csv'
    path.write_bytes(('id,notes,label' + newline + newline.join(rows) + newline).encode())
    whole = list(csv_records.read_range(csv_records.plan_ranges(str(path), 'utf-8')[0]))
    ranges = csv_records.plan_ranges(str(path), 'utf-8', split_bytes=1000)
    assert len(ranges) > 10
    assert [r[2] for r in ranges[1:]] == [r[3] for r in ranges[:-1]]  # contiguous
    split = [record for planned in ranges for record in csv_records.read_range(planned)]
    assert split == whole and len(whole) == 400
    assert [table_rows.parse_line(text)[0] for _, text, _ in split] == [str(i) for i in range(400)]


def test_file_encoding_follows_the_byte_order_mark(tmp_path):
    for bom, expected in ((b'\xef\xbb\xbf', ('utf-8', 3)), (b'\xff\xfe', ('utf-16-le', 2)),
                          (b'\xfe\xff', ('utf-16-be', 2)), (b'', ('iso8859-1', 0))):
        (tmp_path / 'f.csv').write_bytes(bom + b'a')
        assert csv_records.file_encoding(str(tmp_path / 'f.csv'), 'latin-1') == expected
    assert not csv_records.byte_scannable('utf-16') and csv_records.byte_scannable('cp1252')
    assert not csv_records.known_encoding('no-such-codec')


def test_a_csv_with_cr_only_line_endings_is_read_like_any_other(tmp_path):
    """Excel's "CSV (Macintosh)" and classic Mac OS end lines with CR alone, a quoted cell's
    line break too; such a file stopped the run with `new-line character seen in unquoted
    field`."""
    text = '\r'.join([HEADER] + _rows(notes=lambda i: f'"two\rlines {i}"' if i % 9 == 0
                                      else f'note {i}')) + '\r'
    examples, properties = _ingest(_write(tmp_path, text), tmp_path)
    assert (properties['num_found'], properties['num_rejected']) == (60, 0)
    assert json.loads(examples.get_string_custom_property('class_names')) == ['Adelie', 'Gentoo']
    notes = set(_values(examples.uri, 'notes'))
    assert {'two\rlines 0', 'note 1'} <= notes and len(notes) == 60


def test_cr_only_ranges_start_on_record_boundaries(tmp_path):
    rows = [f'{i},"a field\rover {i % 4} lines",{i % 3}' for i in range(400)]
    path = tmp_path / 'mac.csv'
    path.write_bytes(('id,notes,label\r' + '\r'.join(rows) + '\r').encode())
    assert table_rows.read_header(str(path)) == ['id', 'notes', 'label']
    whole = list(csv_records.read_range(csv_records.plan_ranges(str(path), 'utf-8')[0]))
    ranges = csv_records.plan_ranges(str(path), 'utf-8', split_bytes=1000)
    assert len(ranges) > 10
    split = [record for planned in ranges for record in csv_records.read_range(planned)]
    assert split == whole and len(whole) == 400
    assert [table_rows.parse_line(text)[:2] for _, text, _ in split[:2]] == [
        ['0', 'a field\rover 0 lines'], ['1', 'a field\rover 1 lines']]


def test_a_stray_cr_in_an_unquoted_field_is_quarantined_and_a_long_field_is_read(tmp_path):
    rows = _rows()
    rows[5] = 'Adelie,Dr\ream,31.5,note 5'   # a lone CR inside an LF file's unquoted field
    rows[6] = 'Gentoo,Dream,32.5,' + 'x' * 200_000   # over the csv module's 128 KiB field limit
    examples, properties = _ingest(_write(tmp_path, '\n'.join([HEADER] + rows) + '\n'),
                                   tmp_path, max_rejected_fraction=0.05)
    assert (properties['num_found'], properties['num_rejected'],
            properties['num_rejected_malformed_row']) == (60, 1, 1)
    ((entry),) = checks.read_quarantine(examples.uri)
    assert entry['reason'] == 'malformed_row' and entry['raw'] == rows[5]
    assert 'new-line character seen in unquoted field' in entry['detail']
    assert 'x' * 200_000 in _values(examples.uri, 'notes')


@pytest.mark.parametrize('newline', ['\n', '\r\n', '\r'])
def test_the_records_before_beam_are_counted_in_a_small_file_and_estimated_in_a_large_one(
        tmp_path, newline):
    header, row = 'size,kind', '1.5,a'
    path = os.path.join(_write(tmp_path, newline.join([header] + [row] * 99)),
                        'penguins.csv')  # no line break at the end
    assert csv_records.estimated_records(path) == 99
    # Sampled: 1,000 bytes of 6-byte lines ('1.5,a' and its break) out of 6,010.
    path = os.path.join(_write(tmp_path, ''.join(f'{line}\n' for line in [header] + [row] * 1000),
                               name='big.csv'), 'big.csv')
    assert abs(csv_records.estimated_records(path, sample_bytes=1_000) - 1000) <= 10
