"""CSV files as an ingestion source: a header row, then one record per row.

No TFX imports. The reading itself is formats/csv_records.py (quote-aware records in byte
ranges that workers share, encodings, hostile input) and formats/table_rows.py (the header, type
inference from a sample); this module puts them behind the Source interface.
"""
from typing import List

import apache_beam as beam

from components.ingest.formats import csv_records, files, table_rows
from components.ingest.graph import source, table_source

# tf.Example framing, float encoding and feature names make a CSV row a few times its text.
_EXAMPLE_GROWTH = 3


class CsvSource(table_source.TableSource):
    name = 'csv'
    pattern = unlabelled_pattern = '*.csv'
    expected = 'one or more *.csv files'

    def columns(self, path: str, encoding: str) -> List[str]:
        return table_rows.read_header(path, encoding)  # IngestionError when it cannot be read

    def sample_rows(self, path: str, encoding: str) -> List[List[str]]:
        return table_rows.sample_rows(path, encoding=encoding)

    def estimated_output_bytes(self, options) -> int:
        return sum(source.total_bytes(f)[1] for f in options.files) * \
            _EXAMPLE_GROWTH

    def estimated_records(self, options) -> int:
        return sum(csv_records.estimated_records(path) for path in options.files)

    def read_records(self, pipeline, options, name: str) -> beam.PCollection:
        """Big files are cut into ranges on record boundaries (formats/csv_records.py), spread over
        workers and streamed."""
        paths = [files.to_beam(path) for path in options.files]
        return (pipeline | f'{name}Files' >> beam.Create(paths)
                | f'{name}Ranges' >> beam.FlatMap(csv_records.plan_ranges, options.encoding)
                | f'{name}Spread' >> beam.Reshuffle()
                | f'{name}Records' >> beam.FlatMap(csv_records.read_range,
                                                   options.max_csv_record_bytes))
