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

Line breaks: LF and CRLF, and CR alone (classic Mac OS, Excel's "CSV (Macintosh)"): a file whose
first line break is a lone CR is split on CR (`line_break`). Python's readline splits on LF
only, so such a file would otherwise be one record that no CSV parser accepts.

Encodings: a UTF-8 byte-order mark is skipped, a UTF-16 (or UTF-32) one decides the file's
encoding; other files are read as `ingest.encoding` (default UTF-8). A record that does not
decode is rejected (`encoding`, naming the setting) instead of failing the file or the run.
A record longer than `ingest.max_csv_record_bytes` is rejected (`too_large`) without being
held in memory: an unbalanced quote would otherwise make the rest of the file one record.
"""
import codecs
import io
from typing import Iterator, List, Optional, Tuple


from components.ingest.formats import files, rules
from core import storage

DEFAULT_ENCODING = 'utf-8'
DEFAULT_MAX_RECORD_BYTES = 1024 * 1024   # 1 MiB: far above any real row
SPLIT_BYTES = 64 * 1024 * 1024           # files over this are read in ranges of about it
SETTING = '--encoding (ingest.encoding)'
_READ = 64 * 1024                        # bytes per readline() call: bounds a line in memory
_BLOCK = 1024 * 1024                     # bytes per read of the range-planning scan
_BOMS = ((codecs.BOM_UTF32_LE, 'utf-32-le'), (codecs.BOM_UTF32_BE, 'utf-32-be'),
         (codecs.BOM_UTF8, 'utf-8'), (codecs.BOM_UTF16_LE, 'utf-16-le'),
         (codecs.BOM_UTF16_BE, 'utf-16-be'))
_SNIFF = 64 * 1024                       # bytes read to find a file's line break
# (path, encoding, start, end, header_at_start, line break): records starting in [start, end)
# are read; the path as a Beam element (files.to_beam: bytes when the name is not UTF-8).
Range = Tuple[str, str, int, int, bool, bytes]
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
        return storage.open_read(path)  # on a bucket: the object's bytes, never an error's
    files.check_regular(path)  # a FIFO named x.csv is rejected, never opened (it would block)
    return open(path, 'rb')


def is_regular(path: str) -> bool:
    """False for a local entry that is not a regular file (read_range rejects it)."""
    try:
        return '://' in path or files.check_regular(path) is not None
    except rules.BadRecord:
        return False


def file_encoding(path: str, configured: str) -> Tuple[str, int]:
    """(encoding, bytes of byte-order mark) of a file: its BOM decides, else the setting."""
    with _open(path) as handle:
        head = handle.read(4)
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name, len(bom)
    return codecs.lookup(configured).name, 0


def line_break(path: str, start: int) -> bytes:
    """b'\\r' when the first line break after `start` is a lone CR (not followed by LF),
    else b'\\n' (LF and CRLF files alike: their lines end in LF)."""
    with _open(path) as handle:
        handle.seek(start)
        head = handle.read(_SNIFF + 1)
    cr, lf = head.find(b'\r', 0, _SNIFF), head.find(b'\n', 0, _SNIFF)
    if cr >= 0 and (lf < 0 or cr < lf) and head[cr + 1:cr + 2] != b'\n':
        return b'\r'
    return b'\n'


def estimated_records(path: str, sample_bytes: int = _SNIFF) -> int:
    """About how many records a CSV file holds: its size over the mean line of its first
    sample_bytes (exact for a file that small, but for quoted line breaks), less the header."""
    with _open(path) as handle:
        head = handle.read(sample_bytes + 1)
        handle.seek(0, io.SEEK_END)
        size = handle.tell()
    newline = b'\n' if b'\n' in head or b'\r' not in head else b'\r'  # LF and CRLF, or CR
    lines = head.count(newline) + (bool(head) and not head.endswith(newline))
    if len(head) <= sample_bytes:
        return max(0, lines - 1)
    return max(0, round(size * lines / len(head)) - 1)


class _CrLines:
    """readline() for a file whose lines end in a lone CR: the bytes up to and including the
    next CR, at most _READ of them (as readline(_READ) bounds a line in memory)."""

    def __init__(self, handle):
        self._handle, self._pending = handle, b''

    def readline(self) -> bytes:
        while True:
            cut = self._pending.find(b'\r', 0, _READ)
            if cut >= 0 or len(self._pending) >= _READ:
                size = cut + 1 if cut >= 0 else _READ
                line, self._pending = self._pending[:size], self._pending[size:]
                return line
            more = self._handle.read(_READ)
            if not more:
                line, self._pending = self._pending, b''
                return line
            self._pending += more


def _readline(handle, newline: bytes):
    if newline == b'\r':
        return _CrLines(handle).readline
    if isinstance(handle, io.BufferedIOBase):
        return lambda: handle.readline(_READ)
    return handle.readline  # a GFile's readline takes no size


def _too_large(size: int, limit: int) -> Tuple[str, str]:
    return ('too_large', f'a record of {size:,} bytes is over ingest.max_csv_record_bytes '
            f'{limit:,} (--max-csv-record-bytes); an unbalanced quote makes the rest of the '
            'file one record')


def _byte_records(handle, end: int, limit: int,
                  newline: bytes = b'\n') -> Iterator[Tuple[Optional[bytes], int]]:
    """(record bytes, or None when over `limit`; its size) from the handle's position to `end`.
    A record over the limit is skipped through, never held."""
    readline = _readline(handle, newline)
    position = handle.tell()
    while position < end:
        parts: Optional[List[bytes]] = []
        size = quotes = 0
        while True:
            line = readline()
            if not line:
                break
            size += len(line)
            quotes += line.count(b'"')
            if parts is not None:
                parts.append(line)
                if size > limit:
                    parts = None
            if line.endswith(newline) and quotes % 2 == 0:
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
        newline = line_break(path, bom) if byte_scannable(encoding) else b'\n'
    except storage.StoreUnanswered:   # an outage is the run's, not the file's
        raise
    except (rules.BadRecord, OSError):
        return [(files.to_beam(path), configured, 0, 0, True, b'\n')]  # read_range rejects it
    if size - bom <= split_bytes or not byte_scannable(encoding):
        return [(files.to_beam(path), encoding, bom, size, True, newline)]
    cuts, quotes, offset, target = [bom], 0, 0, bom + split_bytes
    with _open(path) as handle:
        for block in iter(lambda: handle.read(_BLOCK), b''):
            done = 0  # quotes of block[:done] are counted
            while target < offset + len(block):  # the first line break outside quotes
                found = block.find(newline, max(target - offset, done))
                if found < 0:
                    break
                quotes += block.count(b'"', done, found)
                done = found + 1
                if quotes % 2 == 0:
                    cuts.append(offset + done)
                    target = offset + done + split_bytes
            quotes += block.count(b'"', done)
            offset += len(block)
    cuts = [cut for cut in cuts if cut < size] + [size]
    return [(files.to_beam(path), encoding, a, b, a == bom, newline)
            for a, b in zip(cuts, cuts[1:])]


def read_range(planned: Range, limit: int = DEFAULT_MAX_RECORD_BYTES) -> Iterator[Record]:
    """The records starting in one range (the header skipped in the range that holds it).
    Paths stay as Beam elements (files.to_beam) in what it yields."""
    path, encoding, start, end, header, newline = planned
    path, element = files.from_beam(path), path
    for record in _records(path, encoding, start, end, header, limit, newline):
        yield (element,) + record[1:]


def _records(path: str, encoding: str, start: int, end: int, header: bool,
             limit: int, newline: bytes) -> Iterator[Record]:
    try:
        handle = _open(path)
    except rules.BadRecord as error:  # not a regular file (its type), or vanished
        yield path, None, (error.reason, str(error))
        return
    except storage.StoreUnanswered:   # an outage is the run's, not the file's
        raise
    except OSError as error:  # no permission, I/O error: one rejection names it
        yield path, None, ('unreadable', f'cannot read: {error.strerror or error}')
        return
    with handle:
        handle.seek(start)
        if byte_scannable(encoding):
            found = _byte_records(handle, end, limit, newline)
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
    newline = line_break(path, bom) if byte_scannable(encoding) else b'\n'
    yield from read_range((path, encoding, bom, 1 << 62, False, newline))
