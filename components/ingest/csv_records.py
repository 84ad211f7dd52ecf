"""CSV files as tools write them, read as records in byte ranges that Beam workers share.

No TFX imports. A record is one CSV row: usually one line, but a quoted field may hold line
breaks (RFC 4180; Excel writes multi-line cells so), so records are found by a quote-aware
scan: a line break ends a record only when the quotes before it are balanced (an escaped
quote `""` counts twice, so parity is enough). The same rule cuts big files into ranges of
about SPLIT_BYTES that start on record boundaries, so one file is still read by many workers:
planning a range costs one extra sequential read of the file (counting quote bytes, at disk
speed), and only for files over SPLIT_BYTES. Scanning bytes is exact for every encoding in
which `"` and line breaks are single ASCII bytes that no other character contains (UTF-8,
Latin-1, cp1252, Shift-JIS, GB18030, ...); a UTF-16/32 file is read as one range.

Encodings: a UTF-8 byte-order mark is skipped, a UTF-16 (or UTF-32) one decides the file's
encoding; other files are read as `ingest.encoding` (default UTF-8). A record that does not
decode is rejected (`encoding`, naming the setting) instead of failing the file or the run.
A record longer than `ingest.max_csv_record_bytes` is rejected (`too_large`) without being
held in memory: an unbalanced quote would otherwise make the rest of the file one record.
"""
import codecs
import io
from typing import Iterator, List, Optional, Tuple


from components.ingest import files, records

DEFAULT_ENCODING = 'utf-8'
DEFAULT_MAX_RECORD_BYTES = 1024 * 1024   # 1 MiB: far above any real row
SPLIT_BYTES = 64 * 1024 * 1024           # files over this are read in ranges of about it
SETTING = '--encoding (ingest.encoding)'
_READ = 64 * 1024                        # bytes per readline() call: bounds a line in memory
_BLOCK = 1024 * 1024                     # bytes per read of the range-planning scan
_BOMS = ((codecs.BOM_UTF32_LE, 'utf-32-le'), (codecs.BOM_UTF32_BE, 'utf-32-be'),
         (codecs.BOM_UTF8, 'utf-8'), (codecs.BOM_UTF16_LE, 'utf-16-le'),
         (codecs.BOM_UTF16_BE, 'utf-16-be'))
# (path, encoding, start, end, header_at_start): records starting in [start, end) are read;
# the path as a Beam element (files.to_beam: bytes when the name is not UTF-8).
Range = Tuple[str, str, int, int, bool]
# (path, text or None, (reason, detail) or None): one record, or why it cannot be one.
Record = Tuple[str, Optional[str], Optional[Tuple[str, str]]]


def known_encoding(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
        return True
    except LookupError:
        return False


def byte_scannable(encoding: str) -> bool:
    """Whether quotes and line breaks can be found in the raw bytes (see the module doc)."""
    name = codecs.lookup(encoding).name
    return (not name.startswith(('utf-16', 'utf-32', 'iso2022', 'utf-7', 'hz'))
            and 'a,"\r\n'.encode(name) == b'a,"\r\n')


def _open(path: str):
    if '://' in path:
        return files.gfile().GFile(path, 'rb')
    files.check_regular(path)  # a FIFO named x.csv is rejected, never opened (it would block)
    return open(path, 'rb')


def is_regular(path: str) -> bool:
    """False for a local entry that is not a regular file (read_range rejects it)."""
    try:
        return '://' in path or files.check_regular(path) is not None
    except records.BadRecord:
        return False


def file_encoding(path: str, configured: str) -> Tuple[str, int]:
    """(encoding, bytes of byte-order mark) of a file: its BOM decides, else the setting."""
    with _open(path) as handle:
        head = handle.read(4)
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name, len(bom)
    return codecs.lookup(configured).name, 0


def _too_large(size: int, limit: int) -> Tuple[str, str]:
    return ('too_large', f'a record of {size:,} bytes is over ingest.max_csv_record_bytes '
            f'{limit:,} (--max-csv-record-bytes); an unbalanced quote makes the rest of the '
            'file one record')


def _byte_records(handle, end: int, limit: int) -> Iterator[Tuple[Optional[bytes], int]]:
    """(record bytes, or None when over `limit`; its size) from the handle's position to `end`.
    A record over the limit is skipped through, never held."""
    bounded = isinstance(handle, io.BufferedIOBase)  # a GFile's readline takes no size
    position = handle.tell()
    while position < end:
        parts: Optional[List[bytes]] = []
        size = quotes = 0
        while True:
            line = handle.readline(_READ) if bounded else handle.readline()
            if not line:
                break
            size += len(line)
            quotes += line.count(b'"')
            if parts is not None:
                parts.append(line)
                if size > limit:
                    parts = None
            if line.endswith(b'\n') and quotes % 2 == 0:
                break
        if not size:
            return
        position += size
        yield (None if parts is None else b''.join(parts)), size


def _decoded(path: str, data: Optional[bytes], size: int, encoding: str, limit: int) -> Record:
    if data is None:
        return path, None, _too_large(size, limit)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        shown = data.decode(encoding, 'backslashreplace').rstrip('\r\n')
        return path, shown, ('encoding', f'cannot be decoded as {encoding}: byte '
                             f'0x{data[error.start]:02x} at {error.start}: {error.reason}; '
                             f'name the file\'s encoding with {SETTING}, e.g. --encoding cp1252')
    return path, text.rstrip('\r\n'), None


def plan_ranges(path: str, configured: str, split_bytes: int = SPLIT_BYTES) -> List[Range]:
    """The ranges of one file, each starting on a record boundary (quote-aware scan)."""
    path = files.from_beam(path)
    try:
        encoding, bom = file_encoding(path, configured)
        size = files.gfile().stat(path).length if '://' in path else \
            files.check_regular(path).st_size
    except (records.BadRecord, OSError):
        return [(files.to_beam(path), configured, 0, 0, True)]  # read_range rejects it
    if size - bom <= split_bytes or not byte_scannable(encoding):
        return [(files.to_beam(path), encoding, bom, size, True)]
    cuts, quotes, offset, target = [bom], 0, 0, bom + split_bytes
    with _open(path) as handle:
        for block in iter(lambda: handle.read(_BLOCK), b''):
            done = 0  # quotes of block[:done] are counted
            while target < offset + len(block):  # the first line break outside quotes
                newline = block.find(b'\n', max(target - offset, done))
                if newline < 0:
                    break
                quotes += block.count(b'"', done, newline)
                done = newline + 1
                if quotes % 2 == 0:
                    cuts.append(offset + done)
                    target = offset + done + split_bytes
            quotes += block.count(b'"', done)
            offset += len(block)
    cuts = [cut for cut in cuts if cut < size] + [size]
    return [(files.to_beam(path), encoding, a, b, a == bom) for a, b in zip(cuts, cuts[1:])]


def read_range(planned: Range, limit: int = DEFAULT_MAX_RECORD_BYTES) -> Iterator[Record]:
    """The records starting in one range (the header skipped in the range that holds it).
    Paths stay as Beam elements (files.to_beam) in what it yields."""
    path, encoding, start, end, header = planned
    path, element = files.from_beam(path), path
    for record in _records(path, encoding, start, end, header, limit):
        yield (element,) + record[1:]


def _records(path: str, encoding: str, start: int, end: int, header: bool,
             limit: int) -> Iterator[Record]:
    try:
        handle = _open(path)
    except records.BadRecord as error:  # not a regular file (its type), or vanished
        yield path, None, (error.reason, str(error))
        return
    except OSError as error:  # no permission, I/O error: one rejection names it
        yield path, None, ('unreadable', f'cannot read: {error.strerror or error}')
        return
    with handle:
        handle.seek(start)
        if byte_scannable(encoding):
            found = _byte_records(handle, end, limit)
            if header:
                next(found, None)
            for data, size in found:
                yield _decoded(path, data, size, encoding, limit)
        else:
            yield from _text_records(path, handle, encoding, header, limit)


def _text_records(path: str, handle, encoding: str, header: bool, limit: int) -> Iterator[Record]:
    """The records of a file whose encoding is not byte-scannable (UTF-16/32): one range."""
    lines, quotes, skip = [], 0, header
    try:
        for line in io.TextIOWrapper(handle, encoding=encoding, newline=''):
            lines.append(line)
            quotes += line.count('"')
            if quotes % 2:
                continue
            record, lines, quotes = ''.join(lines), [], 0
            if skip:
                skip = False
                continue
            size = len(record.encode(encoding))
            yield (path, None, _too_large(size, limit)) if size > limit else (
                path, record.rstrip('\r\n'), None)
    except UnicodeDecodeError as error:
        yield path, None, ('encoding', f'cannot be decoded as {encoding} ({error.reason}); '
                           f'the rest of the file is not read; check {SETTING}')
        return
    if lines:
        yield path, ''.join(lines), None


def file_records(path: str, configured: str) -> Iterator[Record]:
    """Every record of a file, the header first (for the header and type sampling)."""
    encoding, bom = file_encoding(path, configured)
    yield from read_range((path, encoding, bom, 1 << 62, False))
