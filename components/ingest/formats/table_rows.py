"""CSV rows to Example values: the header, feature types (inferred or given), one row's checks.

No TFX and no Beam here. A CSV source is one or more files with the same header row; one column
is the label, `drop_columns` are ignored, every other column is a feature, numeric or
categorical. Types are given in the config or inferred from a sample of rows: a column is
numeric when at least 95% of its non-empty sampled values parse as finite numbers (so a few
typos in uncurated data do not turn a numeric column into a category, and a mostly empty column
is judged by the values it has).

Only structural faults reject a row: a wrong number of fields, an empty label, or a non-empty
value that is not a number in a numeric column (never coerced, so a typo cannot silently
become a zero). An empty numeric value is *missing*, not wrong: the feature is left out of the
Example (TFDV counts it as missing), and the trainer and serving graph impute the train split's
mean and show the model a missing-value indicator (core/inputs.py). An empty
categorical value is the category ''.
"""
import csv
import dataclasses
import itertools
import math
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from core import features
from components.ingest.formats import csv_records, rules
from components.ingest.formats.rules import IngestionError

NUMERIC, CATEGORICAL = 'numeric', 'categorical'
TYPES = (NUMERIC, CATEGORICAL)
SAMPLE_ROWS = 1000  # rows read to infer types; enough for a stable guess, cheap on any table
NUMERIC_SHARE = 0.95  # of non-empty sampled values that must be numbers for a numeric column


@dataclasses.dataclass(frozen=True)
class Table:
    """The shape of a CSV source: header order, the label column and each feature's type."""
    columns: Tuple[str, ...]
    label_column: str                    # '' = none: rows to score (runner.py --score)
    types: Tuple[Tuple[str, str], ...]   # (column, numeric|categorical), header order
    dropped: Tuple[str, ...] = ()        # columns read (and usable as split key) but not features

    def __post_init__(self):
        if self.label_column and self.label_column not in self.columns:
            raise ValueError(f'label column {self.label_column!r} is not in the header '
                             f'{list(self.columns)}; name the class column with '
                             '--label-column (or [ingest] label_column in a config file)')
        reserved = features.RESERVED_KEYS & {c for c, _ in self.types}
        if reserved:
            raise ValueError(f'CSV columns {sorted(reserved)} clash with the Example keys the '
                             'pipeline adds; rename them')


# A field is bounded by its record, which csv_records bounds (ingest.max_csv_record_bytes); the
# csv module's own limit (128 KiB) would stop the run on a long but valid field.
csv.field_size_limit(max(csv.field_size_limit(), 2 ** 31 - 1))


def parse_line(line: str) -> List[str]:
    """The fields of one CSV record (RFC 4180 quoting; quoted fields may hold line breaks:
    csv_records.py finds where records end). A record the csv module refuses (a line break
    inside an unquoted field) is a BadRecord."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error as error:
        raise rules.BadRecord('malformed_row', f'not a CSV row: {error}') from None


def read_header(path: str, encoding: str = csv_records.DEFAULT_ENCODING) -> List[str]:
    """The header row (a BOM skipped); IngestionError, naming --encoding, if it does not
    decode, and naming the file's type if it is not a regular file."""
    try:
        _, text, problem = next(csv_records.file_records(path, encoding), (path, '', None))
    except rules.BadRecord as error:
        raise IngestionError(f'{rules.display_name(path)} {error}') from None
    except OSError as error:
        raise IngestionError(f'cannot read {rules.display_name(path)}: '
                             f'{error.strerror or error}') from None
    if problem is not None:
        raise IngestionError(f'header row of {rules.display_name(path)}: {problem[1]}')
    try:
        return parse_line(text)
    except rules.BadRecord as error:
        raise IngestionError(f'header row of {rules.display_name(path)}: {error}') from None


def sample_rows(path: str, limit: int = SAMPLE_ROWS,
                encoding: str = csv_records.DEFAULT_ENCODING) -> List[List[str]]:
    """Up to `limit` rows after the header that decode (to infer types from)."""
    rows = itertools.islice(csv_records.file_records(path, encoding), 1, None)
    return list(itertools.islice((fields for fields in map(_fields_or_none, rows)
                                  if fields is not None), limit))


def _fields_or_none(record: csv_records.Record) -> Optional[List[str]]:
    """A sampled record's fields; None for one that will be rejected (it says nothing about
    types)."""
    if record[2] is not None:
        return None
    try:
        return parse_line(record[1])
    except rules.BadRecord:
        return None


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def infer_table(columns: List[str], label_column: str, rows: Iterable[List[str]],
                given: Optional[Mapping[str, str]] = None, drop: Iterable[str] = ()) -> Table:
    """Types for every feature column: given ones as given, the rest inferred from `rows`;
    `drop` columns are not features."""
    given, drop = dict(given or {}), tuple(drop)
    unknown = set(given) - set(columns)
    bad = {t for t in given.values() if t not in TYPES}
    if unknown or bad:
        raise ValueError(f'feature_types name unknown columns {sorted(unknown)} or types '
                         f'{sorted(bad)}; columns are {columns}, types {TYPES}')
    for column in drop:
        if column not in columns:
            raise ValueError(f'drop_columns names {column!r}, which is not a column; the '
                             f'header is {columns}')
        if column == label_column or column in given:
            raise ValueError(f'drop_columns names {column!r}, which is also the label column '
                             'or in feature_types')
    numbers = {c: 0 for c in columns}
    values = {c: 0 for c in columns}
    for row in rows:
        if len(row) != len(columns):
            continue  # a malformed row says nothing about types; it is rejected later
        for column, value in zip(columns, row):
            if value.strip():
                values[column] += 1
                numbers[column] += _is_number(value)

    def inferred(column: str) -> str:
        share = numbers[column] / values[column] if values[column] else 0.0
        return NUMERIC if share >= NUMERIC_SHARE else CATEGORICAL

    types = tuple((c, given[c] if c in given else inferred(c))
                  for c in columns if c != label_column and c not in drop)
    return Table(tuple(columns), label_column, types, drop)


def numeric_columns(table: Table) -> List[str]:
    return [c for c, kind in table.types if kind == NUMERIC]


def row_values(fields: List[str], table: Table) -> Tuple[Dict[str, object], Optional[str]]:
    """(feature values, label) of one row, or BadRecord with the reason. An empty numeric value
    is missing: its column is absent from the values. The label is None for a table without
    one (rows to score)."""
    if len(fields) != len(table.columns):
        raise rules.BadRecord('wrong_column_count', f'{len(fields)} fields, the header has '
                              f'{len(table.columns)}')
    row = dict(zip(table.columns, fields))
    label = row[table.label_column].strip() if table.label_column else None
    if label == '':
        raise rules.BadRecord('missing_label', f'empty label column {table.label_column!r}',
                              column=table.label_column)
    values: Dict[str, object] = {}
    for column, kind in table.types:
        text = row[column].strip()
        if kind == CATEGORICAL:
            values[column] = text
        elif not text:
            continue  # missing: imputed by the trainer and the serving graph
        elif not _is_number(text):
            raise rules.BadRecord(
                'non_numeric', f'{text!r} in numeric column {column!r} is not a number',
                column=column)
        else:
            values[column] = float(text)
    return values, label


def describe_missing(missing: Mapping[str, int], moments: Mapping[str, Mapping[str, float]]) -> str:
    """Per column with empty values: how many (all splits), the train mean imputed, and
    whether the model gets an indicator, e.g. "'tips' 57 (train mean 1.25, indicator)"."""
    return ', '.join(
        f"{column!r} {count} (train mean {moments[column]['mean']:.4g}"
        + (', indicator)' if moments[column].get('missing') else ', no indicator: none in train)')
        for column, count in missing.items())
