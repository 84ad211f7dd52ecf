"""What every table source shares (CSV, Parquet): listing, types, the conversion graph, moments.

No TFX imports. A table source is files with the same columns; one row is one record. A
subclass says how to read a file's columns, sample rows and every record (as
csv_records.Record: the row as one CSV line, or the reason it cannot be one); everything after
that is shared: the label pass, the conversion (convert.RowToExample), the numeric moments and
the class names written to TABLE_FILE, and what is recorded on the Examples.
"""
import abc
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from absl import logging
import apache_beam as beam
import tensorflow as tf

from core import inputs
from core import properties as property_names
from components.ingest.formats import csv_records, rules, table_rows
from components.ingest.formats import files as files_
from components.ingest.formats.rules import IngestionError
from components.ingest.graph import convert, source, stats

TABLE_FILE = 'table.json'   # class names and numeric moments, read by finalize


def _valid_label(element: csv_records.Record, table: table_rows.Table):
    if element[2] is None and element[1].strip():
        try:
            yield table_rows.row_values(table_rows.parse_line(element[1]), table)[1]
        except rules.BadRecord:
            pass  # counted and quarantined by the conversion pass


class TableSource(source.Source):
    tabular = True

    @abc.abstractmethod
    def columns(self, path: str, encoding: str) -> List[str]:
        """The column names of one file. Raises IngestionError when the run cannot go on, or
        rules.BadRecord for a file the graph quarantines (it is then left out of listing)."""

    @abc.abstractmethod
    def sample_rows(self, path: str, encoding: str) -> List[List[str]]:
        """Rows of one file, as field texts, to infer the types not declared (schema_hint)."""

    @abc.abstractmethod
    def read_records(self, pipeline, options, name: str) -> beam.PCollection:
        """Every record of options.files (headers aside) as csv_records.Record; `name`
        prefixes the transforms' labels (the graph reads the records twice)."""

    def check(self, options) -> Tuple[Tuple[bool, str], ...]:
        return ((options.table is not None and bool(options.files),
                 f'a {self.name} source needs a table and files'),)

    def list_input(self, root: str, label_column: str, feature_types: Dict[str, str],
                   drop_columns: Tuple[str, ...], encoding: str,
                   unlabelled: bool) -> Dict[str, Any]:
        """The files and their Table. Unlabelled (rows to score), the label column is not a
        feature when the files have it."""
        listed = sorted(files_.glob_files(root, self.pattern))
        # A FIFO, socket, ... matching the pattern is never opened here: the graph rejects it.
        regular = [path for path in listed if csv_records.is_regular(path)]
        readable, columns, unreadable = [], None, []
        for path in regular:
            try:
                found = self.columns(path, encoding)
            except rules.BadRecord as error:  # quarantined by the graph, with its reason
                unreadable.append(f'{rules.display_name(path)}: {error}')
                continue
            if columns is None:
                columns = found
            elif found != columns:
                raise IngestionError(f'{path} has other columns than {readable[0]}: '
                                     f'{found} != {columns}')
            readable.append(path)
        if unreadable and not readable:
            raise IngestionError(f'No readable {self.pattern} file in {root}: '
                                 + '; '.join(unreadable))
        if not readable:
            raise IngestionError(f'Input is empty: no {self.pattern} file in {root}.')
        ignored = label_column if unlabelled else ''
        label = '' if unlabelled else label_column
        if ignored and ignored in columns:
            drop_columns += (ignored,)
        hinted = {column: kind for column, kind in self.schema_hint(readable[0]).items()
                  if column != label and column not in drop_columns}
        try:
            table = table_rows.infer_table(columns, label, self.sample_rows(readable[0], encoding),
                                           dict(hinted, **feature_types), drop_columns)
        except ValueError as error:
            raise IngestionError(f'{listed[0]}: {error}') from None
        return {'files': tuple(listed), 'table': table}

    def read(self, pipeline, options, temp_dir: str):
        # Labels are read in a pass of their own: feeding the same records to both the label
        # side input and the conversion would make the runner hold every record in memory.
        if options.unlabelled:
            class_names = pipeline | 'NoLabels' >> beam.Create([[]])
        else:
            class_names = (
                self.read_records(pipeline, options, 'Label')
                | 'ValidLabels' >> beam.FlatMap(_valid_label, options.table)
                | 'DistinctLabels' >> beam.Distinct()
                | 'SortedLabels' >> beam.combiners.ToList() | beam.Map(sorted))
        outputs = (
            self.read_records(pipeline, options, 'Rows')
            | 'ToExample' >> beam.ParDo(
                convert.RowToExample(options, temp_dir), beam.pvalue.AsSingleton(class_names),
            ).with_outputs(convert.QUARANTINE_TAG, convert.NUMERIC_TAG, main='parts'))
        numeric = table_rows.numeric_columns(options.table)
        _ = (outputs[convert.NUMERIC_TAG]
             | 'Moments' >> beam.CombineGlobally(stats.Moments(len(numeric)))
             | 'TableJson' >> beam.Map(
                 lambda moments, names: json.dumps({'class_names': names, 'moments': dict(
                     zip(numeric, moments))}), names=beam.pvalue.AsSingleton(class_names))
             | 'WriteTable' >> beam.io.WriteToText(
                 os.path.join(temp_dir, TABLE_FILE), num_shards=1, shard_name_template=''))
        return outputs

    def finalize(self, temp_dir: str) -> Optional[dict]:
        with tf.io.gfile.GFile(os.path.join(temp_dir, TABLE_FILE)) as handle:
            return json.load(handle)

    def describe(self, options, result, summary: Optional[dict]) -> Dict[str, Any]:
        """The class names, the input spec with the train moments, and the empty numeric
        values per column (imputed)."""
        missing = stats.read_missing(result)
        if missing:
            logging.info('Empty numeric values, kept and imputed: %s',
                         table_rows.describe_missing(missing, summary['moments']))
        return {'class_names': summary['class_names'],
                'input_spec': inputs.tabular_spec(options.table.types, summary['moments']),
                property_names.MISSING_VALUES: json.dumps(missing)}
