"""Parquet files read as records: columns and types from the files' schema, rows read one row
group at a time. ParquetSource (graph/parquet_source.py) puts them behind the Source interface.

No TFX imports. What is read (docs/data.md, "Parquet files"):
- The `*.parquet` files directly in the folder (or its `span-<N>/` folder), all with the same
  columns. A struct column is flattened into one column per field, `parent.child`, as pyarrow's
  Table.flatten names them.
- Types come from the schema, never from the values: integers, floats and decimals are numeric;
  strings (dictionary-encoded or not), booleans (`true`/`false`) and binary (read as UTF-8) are
  categorical; timestamps and dates are numeric, seconds since the Unix epoch (a timestamp with
  a time zone is stored in UTC, and so read; one without is read as if it were UTC), and times
  of day and durations numeric seconds. `feature_types` wins over the schema.
- A null, or a float NaN, is an empty value, exactly as an empty CSV field: imputed in a numeric
  column, the category '' in a categorical one, and a rejected row (`missing_label`) as label.
- A list of one value is that value, and an empty list an empty value. A longer list, and any
  non-empty map or list of lists or structs, cannot be one feature value: the row is rejected
  (`nested_value`, naming the column), unless the column is dropped (`drop_columns`).
- A file that is not Parquet, or is truncated (its footer is at the end), is one rejected record
  (`corrupt_parquet`, with pyarrow's reason); so is a row group that cannot be decoded (the
  rows read from it before the damage are kept; the next row groups are read).

Memory: a file is planned into units of whole row groups (about UNIT_BYTES of data)
that Beam spreads over workers; a unit is read with `iter_batches`, one row group and
BATCH_ROWS rows at a time, so a worker holds at most one row group's columns, never a file.

Each row becomes csv_records.Record: the CSV line of its values' texts, or the reason it cannot
be one. Everything after reading (the label pass, the conversion with its checks, the split key,
the quarantine's `raw` field) is then the CSV source's, so both sources judge a row alike.
"""
import contextlib
import json
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from components.ingest.formats import csv_records, files, rules, table_rows
from core import storage

BATCH_ROWS = 4096                 # rows turned into Python objects at a time
UNIT_BYTES = 64 * 1024 * 1024     # row-group bytes (uncompressed) per unit of work
# Parquet stores values uncompressed at about their binary size; an Example spells each
# feature's name and framing beside it: about what it does to a CSV row's text (the Source's
# estimate of the Examples' bytes, for the automatic shard count).
EXAMPLE_GROWTH = 3
_PER_SECOND = {'s': 1, 'ms': 10 ** 3, 'us': 10 ** 6, 'ns': 10 ** 9}
_SECONDS_PER_DAY = 86400
# (path as a Beam element, first row group, stop): the row groups [first, stop) of one file;
# stop -1 for a file whose footer could not be read (read_unit names why).
Unit = Tuple[object, int, int]
# One column of a batch: the text of every row (an Arrow string array, no nulls), and
# {row: (reason, detail)} for rows whose value cannot be one feature value.
Cells = Tuple[pa.Array, Dict[int, Tuple[str, str]]]


@contextlib.contextmanager
def opened(path: str) -> Iterator[pq.ParquetFile]:
    """The file's reader, or BadRecord: not a regular file, empty, not Parquet or truncated.
    OSErrors (no permission, I/O) propagate: callers name them `unreadable`."""
    if '://' in path:
        handle = storage.open_read(path)  # on a bucket: the object's bytes, never an error's
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(0)
    else:
        # Checked before pyarrow opens it: a FIFO named x.parquet would block the open.
        size = files.check_regular(path).st_size
        handle = open(path, 'rb')  # pylint: disable=consider-using-with
    with handle:
        if size == 0:
            raise rules.BadRecord('empty_file', 'empty file (0 bytes)')
        try:
            reader = pq.ParquetFile(handle)
        except storage.StoreUnanswered:   # pyarrow re-raises its reader's error as it was
            raise
        except (pa.ArrowException, OSError) as error:
            raise rules.BadRecord('corrupt_parquet', 'not a Parquet file, or truncated '
                                  f'({size:,} bytes): {error}') from None
        yield reader


def _flat_fields(fields: Sequence[pa.Field], prefix: str = '') -> Iterator[Tuple[str, pa.DataType]]:
    for field in fields:
        if pa.types.is_struct(field.type):
            yield from _flat_fields([field.type.field(i) for i in range(field.type.num_fields)],
                                    f'{prefix}{field.name}.')
        else:
            yield prefix + field.name, field.type


def _scalar_type(kind: pa.DataType) -> pa.DataType:
    """The type of the values a column's cells hold: a dictionary's values, a list's items."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if _is_list(kind):
        kind = kind.value_type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
    return kind


def _is_list(kind: pa.DataType) -> bool:
    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)
            or pa.types.is_fixed_size_list(kind))


def _is_temporal(kind: pa.DataType) -> bool:
    return (pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_time(kind)
            or pa.types.is_duration(kind))


def feature_type(kind: pa.DataType) -> Optional[str]:
    """numeric | categorical for a column of this type; None: no values to judge (nulls)."""
    kind = _scalar_type(kind)
    if (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)
            or _is_temporal(kind)):
        return table_rows.NUMERIC
    if pa.types.is_null(kind):
        return None
    return table_rows.CATEGORICAL  # text, booleans, binary; nested values are rejected


def flat_columns(reader: pq.ParquetFile) -> List[Tuple[str, pa.DataType]]:
    """(name, type) of every column, struct columns flattened."""
    return list(_flat_fields(list(reader.schema_arrow)))


def _seconds(array: pa.Array) -> pa.Array:
    """Timestamps and dates as seconds since the Unix epoch, times and durations as seconds."""
    kind = array.type
    raw = array.view(pa.int32() if kind.bit_width == 32 else pa.int64()).cast(pa.float64())
    if pa.types.is_date32(kind):
        return pc.multiply(raw, float(_SECONDS_PER_DAY))
    return pc.divide(raw, float(_PER_SECOND['ms' if pa.types.is_date64(kind) else kind.unit]))


def _plain(kind: pa.DataType) -> bool:
    """Whether a column's values are numbers, booleans or instants, whose text Arrow writes
    (shortest round-trip for floats, as Python's repr) and which never need CSV quoting."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)
            or _is_temporal(kind) or pa.types.is_null(kind))


def _scalar_cells(array: pa.Array) -> Optional[Cells]:
    """The cells of a column of single values; None for any other column. Numbers, booleans,
    instants and text are converted by Arrow, a column at a time."""
    kind = array.type
    if pa.types.is_dictionary(kind):
        return _scalar_cells(array.dictionary_decode())
    if pa.types.is_null(kind):
        return pa.array([''] * len(array), pa.string()), {}
    if _is_temporal(kind):
        array = _seconds(array)
    elif pa.types.is_float16(kind):
        array = array.cast(pa.float32())
    if pa.types.is_floating(array.type):  # NaN: missing, as pandas and Spark mean it
        array = pc.if_else(pc.is_nan(array), pa.scalar(None, array.type), array)
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type) or \
            pa.types.is_boolean(array.type) or pa.types.is_large_string(array.type):
        array = pc.cast(array, pa.string())  # 'true' / 'false' for booleans
    if pa.types.is_string(array.type):
        return pc.fill_null(array, ''), {}
    if not (pa.types.is_decimal(kind) or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind)):
        return None
    texts, problems = [], {}
    for row, value in enumerate(array.to_pylist()):
        if value is None:
            texts.append('')
        elif isinstance(value, bytes):
            try:
                texts.append(value.decode('utf-8'))
            except UnicodeDecodeError as error:
                texts.append(value.decode('utf-8', 'backslashreplace'))
                problems[row] = ('encoding', f'binary value is not UTF-8 text: byte '
                                 f'0x{value[error.start]:02x} at {error.start}')
        else:
            texts.append(str(value))  # Decimal
    return pa.array(texts, pa.string()), problems


def _nested(array: pa.Array, lengths: List[Optional[int]], what: str) -> Cells:
    """Cells of a column whose non-empty values cannot be one feature value: their JSON text
    (kept for dropped columns), and a problem per such row."""
    texts, problems = [], {}
    for row, (value, length) in enumerate(zip(array.to_pylist(), lengths)):
        if not length:
            texts.append('')
            continue
        texts.append(json.dumps(value, default=str, ensure_ascii=False))
        problems[row] = ('nested_value', f'holds {what} of {length} value(s); a feature '
                         'takes one value (drop the column with drop_columns)')
    return pa.array(texts, pa.string()), problems


def _cells(array: pa.Array) -> Cells:
    """The text of every cell of one column (struct columns are flattened before)."""
    scalar = _scalar_cells(array)
    if scalar is not None:
        return scalar
    kind = array.type
    if pa.types.is_map(kind) or not _is_list(kind):
        lengths = [None if v is None else len(v) if pa.types.is_map(kind) else 1
                   for v in array.to_pylist()]
        return _nested(array, lengths, 'a map' if pa.types.is_map(kind) else f'a {kind}')
    lengths = pc.list_value_length(array).to_pylist()
    items = _scalar_cells(array.flatten())  # the items of every non-null list, in order
    if items is None:  # lists of lists, of structs, ...
        return _nested(array, lengths, f'a list ({kind})')
    item_texts, item_problems = items[0].to_pylist(), items[1]
    texts, problems = [], {}
    at = 0
    for row, length in enumerate(lengths):
        length = length or 0
        if length == 1:
            texts.append(item_texts[at])
            if at in item_problems:
                problems[row] = item_problems[at]
        elif length == 0:
            texts.append('')
        else:
            texts.append(json.dumps(array[row].as_py(), default=str, ensure_ascii=False))
            problems[row] = ('nested_value', f'holds a list of {length} values; a feature '
                             'takes one value (drop the column with drop_columns)')
        at += length
    return pa.array(texts, pa.string()), problems


def _quoted(texts: pa.Array) -> pa.Array:
    """Texts as CSV fields (RFC 4180): quoted when they hold a comma, a quote or a line
    break, a quote doubled inside."""
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(texts, '"', '""'), '"', '')
    return pc.if_else(pc.match_substring_regex(texts, '[,"\r\n]'), quoted, texts)


def batch_records(element, batch: pa.RecordBatch, names: Sequence[str],
                  checked: Sequence[str]) -> Iterator[csv_records.Record]:
    """The records of one batch: each row's CSV line in `names` order, with the first problem
    of a `checked` column (the features and the label) as its reason. The lines are joined by
    Arrow, so Python sees one string per row, not one per value."""
    table = pa.Table.from_batches([batch])
    while any(pa.types.is_struct(field.type) for field in table.schema):
        table = table.flatten()
    cells = {name: _cells(table.column(name).combine_chunks()) for name in names}
    fields = [cells[name][0] if _plain(table.schema.field(name).type) else
              _quoted(cells[name][0]) for name in names]
    if len(names) == 1:  # a lone blank field would read as a blank line, which is skipped
        blank = pc.equal(pc.utf8_trim_whitespace(fields[0]), '')
        lines = pc.if_else(blank, pc.binary_join_element_wise('"', fields[0], '"', ''),
                           fields[0]).to_pylist()
    else:
        lines = pc.binary_join_element_wise(*fields, ',').to_pylist()
    checked = [name for name in checked if cells[name][1]]
    for row, line in enumerate(lines):
        problem = next(((*cells[name][1][row], name) for name in checked
                        if row in cells[name][1]), None)
        yield element, line, problem


def plan_units(element, unit_bytes: int = UNIT_BYTES) -> List[Unit]:
    """One file's units of work: consecutive row groups of about unit_bytes (uncompressed)."""
    path = files.from_beam(element)
    try:
        with opened(path) as reader:
            sizes = [reader.metadata.row_group(g).total_byte_size
                     for g in range(reader.num_row_groups)]
    except storage.StoreUnanswered:   # an outage is the run's, not the file's
        raise
    except (rules.BadRecord, OSError):
        return [(element, 0, -1)]  # read_unit rejects it, with the reason
    units, first, size = [], 0, 0
    for group, group_bytes in enumerate(sizes):
        size += group_bytes
        if size >= unit_bytes or group == len(sizes) - 1:
            units.append((element, first, group + 1))
            first, size = group + 1, 0
    return units


def read_unit(unit: Unit, names: Sequence[str], checked: Sequence[str]) -> Iterator[
        csv_records.Record]:
    """The records of one unit; a file or row group that cannot be read is one rejection."""
    element, first, stop = unit
    path = files.from_beam(element)
    try:
        with opened(path) as reader:
            for group in range(first, stop):
                batches = reader.iter_batches(batch_size=BATCH_ROWS, row_groups=[group])
                while True:
                    try:  # decoding only: a fault of the file, not of the conversion
                        batch = next(batches)
                    except StopIteration:
                        break
                    except storage.StoreUnanswered:   # the store's fault, not the row group's
                        raise
                    except (pa.ArrowException, OSError) as error:
                        # Row groups are decoded independently: the next one may be whole.
                        rows = reader.metadata.row_group(group).num_rows
                        yield element, None, (
                            'corrupt_parquet', f'row group {group} of {reader.num_row_groups} '
                            f'cannot be decoded ({str(error).strip()}); its {rows:,} rows are '
                            'not read, or only in part')
                        break
                    yield from batch_records(element, batch, names, checked)
            if stop < 0:  # the footer was readable when planned, not now
                yield element, None, ('changed', 'changed between planning and reading')
    except rules.BadRecord as error:
        yield element, None, (error.reason, str(error))
    except storage.StoreUnanswered:   # an outage is the run's, not the file's
        raise
    except OSError as error:  # no permission, I/O error
        yield element, None, ('unreadable', f'cannot read: {error.strerror or error}')

