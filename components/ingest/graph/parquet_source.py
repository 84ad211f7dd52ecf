"""Parquet files as an ingestion source: the files' schema gives the columns and their types.

No TFX imports. The reading itself is formats/parquet.py (the schema, row groups planned into
units of work that Beam spreads over workers, each row as csv_records.Record); this module puts
it behind the Source interface, as csv_source.py does for CSV.
"""
from typing import Dict, Iterator, List

import apache_beam as beam

from components.ingest.formats import files, parquet, rules
from components.ingest.formats.rules import IngestionError
from components.ingest.graph import table_source
from core import storage


class ParquetSource(table_source.TableSource):
    name = 'parquet'
    pattern = unlabelled_pattern = '*.parquet'
    expected = 'one or more *.parquet files'

    def columns(self, path: str, encoding: str) -> List[str]:
        del encoding  # Parquet text is UTF-8
        try:
            with parquet.opened(path) as reader:
                names = [name for name, _ in parquet.flat_columns(reader)]
        except storage.StoreUnanswered:
            raise
        except OSError as error:
            raise rules.BadRecord('unreadable',
                                  f'cannot read: {error.strerror or error}') from None
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise IngestionError(f'{rules.display_name(path)}: columns {twice} appear more '
                                 'than once (struct fields are flattened as parent.child)')
        return names

    def schema_hint(self, path: str) -> Dict[str, str]:
        with parquet.opened(path) as reader:
            kinds = {name: parquet.feature_type(kind)
                     for name, kind in parquet.flat_columns(reader)}
        return {name: kind for name, kind in kinds.items() if kind is not None}

    def sample_rows(self, path: str, encoding: str) -> List[List[str]]:
        del path, encoding
        return []  # the schema types every column but all-null ones (inferred categorical)

    @staticmethod
    def _footers(options) -> Iterator:
        """Each readable file's footer metadata (no row read); a broken file is quarantined by
        the graph and writes nothing, so it is skipped here."""
        for path in options.files:
            try:
                with parquet.opened(path) as reader:
                    yield reader.metadata
            except (rules.BadRecord, OSError):
                continue

    def estimated_output_bytes(self, options) -> int:
        return sum(meta.row_group(g).total_byte_size for meta in self._footers(options)
                   for g in range(meta.num_row_groups)) * parquet.EXAMPLE_GROWTH

    def estimated_records(self, options) -> int:
        return sum(meta.num_rows for meta in self._footers(options))  # exact

    def read_records(self, pipeline, options, name: str) -> beam.PCollection:
        table = options.table
        checked = [column for column, _ in table.types] + (
            [table.label_column] if table.label_column else [])
        paths = [files.to_beam(path) for path in options.files]
        return (pipeline | f'{name}Files' >> beam.Create(paths)
                | f'{name}Units' >> beam.FlatMap(parquet.plan_units)
                | f'{name}Spread' >> beam.Reshuffle()
                | f'{name}Records' >> beam.FlatMap(parquet.read_unit, list(table.columns),
                                                   checked))
