"""Rules every ingestion source shares: rejection reasons, quarantine lines, split and shard keys.

No TFX and no Beam here. A source (graph/registry.py: image folders, CSV or Parquet tables) turns
one input record into an Example or raises `BadRecord` with a reason code from `REASONS`; the Beam
graph writes the rejection as one quarantine line and counts it under that code, so the counts
by reason add up to the rejected total, and `written + rejected == found`. What stops the run
as a whole (no input to read, nothing valid, too much rejected) is an `IngestionError`, here
beside `BadRecord` because readers, sources and the judge of the counts (graph/checks.py) all
raise it.
"""
import base64
import hashlib
import json
import math
from typing import Dict, Optional, Tuple

# Reason code -> what it means. Codes are stable: they are property names in ML Metadata
# (`num_rejected_<code>`) and the `reason` field of every quarantine line.
REASONS: Dict[str, str] = {
    'empty_file': 'a zero-byte file',
    'not_an_image': 'a file that is not an image at all',
    'corrupt_image': 'an image whose header is valid but whose data is damaged or truncated',
    'unsupported_format': 'an image in a format we do not read, or whose conversion to PNG '
                          'would lose information and is not allowed (ingest.convert_formats)',
    'too_large': 'an image over ingest.max_image_pixels (judged from its header, never '
                 'decoded), or a CSV record over ingest.max_csv_record_bytes',
    'unreadable': 'a file that cannot be read (no permission, dangling symlink, I/O error)',
    'outside_input_base': 'a symlink that resolves to a path outside the input base',
    'not_a_file': 'a folder, named pipe (FIFO), socket or device where a regular file was '
                  'expected; never opened',
    'vanished': 'a file listed, then deleted before it was read',
    'changed': 'a file that changed (size, time, or replaced) while it was read',
    'encoding': 'a CSV record that cannot be decoded with the file\'s encoding '
                '(ingest.encoding, flag --encoding), or a Parquet binary value that is not UTF-8',
    'malformed_row': 'a CSV record that is not a row: a line break inside an unquoted field',
    'wrong_column_count': 'a CSV row with more or fewer fields than the header',
    'non_numeric': 'a non-empty value that is not a number in a numeric column',
    'missing_label': 'a row whose label is empty (or null)',
    'corrupt_parquet': 'a *.parquet file that is not Parquet or is truncated, or a row group '
                       'of one that cannot be decoded',
    'nested_value': 'a Parquet value that is a list of several values, a map, or a list of '
                    'lists or structs, in a feature or label column',
}
# The setting that changes the decision, for reasons that have one (named in failure messages).
SETTINGS: Dict[str, str] = {
    'encoding': '--encoding (ingest.encoding)',
    'too_large': '--max-image-pixels / --max-csv-record-bytes (ingest.max_image_pixels / '
                 'ingest.max_csv_record_bytes)',
    'unsupported_format': '--convert-formats (ingest.convert_formats), for formats converted '
                          'with loss',
}
# An empty value in a numeric CSV column is not a rejection: it is imputed (see table_rows.py).

QUARANTINE_DIR = 'Quarantine'
QUARANTINE_FILE = 'quarantine.jsonl'

# Shard files aim at ~128 MB: big enough that a reader is not dominated by per-file overhead,
# small enough that work spreads over many readers (the TFRecord guide's 100-200 MB range).
TARGET_SHARD_BYTES = 128 * 1024 * 1024


class BadRecord(ValueError):
    """One input record that cannot become an Example; `reason` is a code from REASONS, and
    `column` the CSV column at fault when there is one (counted per column)."""

    def __init__(self, reason: str, detail: str, column: Optional[str] = None):
        if reason not in REASONS:
            raise KeyError(f'unknown rejection reason {reason!r}')
        super().__init__(detail)
        self.reason = reason
        self.column = column


class IngestionError(RuntimeError):
    """Ingestion produced nothing usable, or rejected more than allowed."""


def name_bytes(name: str) -> bytes:
    """The exact bytes of a listed name: Python lists undecodable bytes of local file names
    as surrogate escapes (PEP 383); this gives them back (os.fsencode, on a UTF-8 system)."""
    return name.encode('utf-8', 'surrogateescape')


def display_name(name: str) -> str:
    """Valid UTF-8 text for messages and JSON: undecodable bytes shown as \\xNN."""
    return name_bytes(name).decode('utf-8', 'backslashreplace')


def quarantine_line(source: str, error: BadRecord, raw: Optional[str] = None) -> str:
    """One JSON line: where the record came from, the reason code, the human detail, and the
    column at fault when there is one. A source name that is not valid UTF-8 is shown with
    its undecodable bytes as \\xNN, and its exact bytes are in `source_base64`."""
    entry = {'source': display_name(source), 'reason': error.reason, 'detail': str(error)}
    if entry['source'] != source:  # not valid UTF-8
        entry['source_base64'] = base64.b64encode(name_bytes(source)).decode('ascii')
    if error.column is not None:
        entry['column'] = error.column
    if raw is not None:
        entry['raw'] = raw  # a CSV row as it was, so it can be fixed and re-ingested
    return json.dumps(entry, sort_keys=True)


def _hash64(key: str, part: int) -> int:
    # surrogateescape: a file name that is not UTF-8 hashes as its bytes (valid names as before)
    digest = hashlib.sha256(key.encode('utf-8', 'surrogateescape')).digest()
    return int.from_bytes(digest[8 * part: 8 * part + 8], 'big')


# Split buckets: a train share is kept in hundredths of a percent (train_share).
SPLIT_BUCKETS = 10_000
# train_percent 0 (from the data) trains on this share, or on more when the rest would hold
# more than max_eval_records (params.py): train_share.
DEFAULT_TRAIN_PERCENT = 80


def split_bucket(key: str) -> int:
    """The key's split bucket of SPLIT_BUCKETS: a record is train below the train share's.

    The bucket's hundreds are the hash modulo 100, the bucket of every split written before
    shares finer than a percent existed; its units are the next two digits. So for a whole
    percent p, `bucket < 100 p` is exactly `hash % 100 < p`: every record of a whole-percent
    split stays in its split, and a finer share lies between its whole neighbours. (The
    trainer's held-out slice ranks its buckets the same way, training/data.py `_bucket`, over
    TensorFlow's hash of the record.)"""
    fine = _hash64(key, 0) % SPLIT_BUCKETS
    return (fine % 100) * 100 + fine // 100


def split_of(key: str, train_percent: float) -> str:
    """'train' or 'eval' from a stable hash of the split key; train_percent to 0.01.

    sha256 (not Python's salted hash()) makes the split identical across processes, machines
    and worker counts, and adding records never moves an existing one to the other split.
    """
    below = int(round(train_percent * SPLIT_BUCKETS / 100))
    return 'train' if split_bucket(key) < below else 'eval'


def train_share(records: int, max_eval_records: int) -> Tuple[float, str]:
    """train_percent = 0, from the data: (the train share in percent, to 0.01; why).

    20% of the records go to eval, unless that is more than max_eval_records: then the eval
    share is the one that holds about that many (rounded up to 0.01%), and the rest is trained
    on. `records` is counted or estimated before Beam starts (a source's estimated_records)."""
    eval_percent = math.ceil(max_eval_records * 100 * 100 / max(1, records)) / 100
    if eval_percent >= 100 - DEFAULT_TRAIN_PERCENT:
        return float(DEFAULT_TRAIN_PERCENT), (
            f'{DEFAULT_TRAIN_PERCENT}% train: 20% of about {records:,} records is at most '
            f'{max_eval_records:,} to evaluate on (max_eval_records)')
    train = round(100 - eval_percent, 2)
    return train, (f'{train:g}% train, not {DEFAULT_TRAIN_PERCENT}%: {eval_percent:g}% of about '
                   f'{records:,} records is about {round(records * eval_percent / 100):,} to '
                   f'evaluate on (max_eval_records {max_eval_records:,}), and the rest are '
                   'trained on')


def shard_of(key: str, num_shards: int) -> int:
    """The shard of a record: other bits of the same hash, so shards are independent of splits."""
    return _hash64(key, 1) % num_shards


def auto_shards(total_bytes: int, fraction: float) -> int:
    """Shards for a split holding `fraction` of `total_bytes`, so each is at most ~128 MB."""
    return max(1, math.ceil(total_bytes * fraction / TARGET_SHARD_BYTES))
