"""The Beam graph of ingestion: list the input, convert and validate, split, write shards.

No TFX imports: the executor builds a pipeline with TFX's Beam options and calls
`build_ingest`, and tests and the benchmark run the same graph on a plain `beam.Pipeline`.

Every source (registry.py: image folders, one file = one record; CSV and Parquet tables, one
row = one record) shares everything after its conversion. Every record found ends in exactly
one place, a split's shard or the quarantine, and is counted (Beam metrics in the `ingest`
namespace): `found`, `written_<split>`, `rejected` and `rejected_<reason>`, so
`found == written + rejected` and the rejections by reason add up to `rejected`. Table columns
have counters of their own (stats.py): empty numeric values, which are kept and imputed, and
rejections by reason and column.
"""
import dataclasses
import os
from typing import Dict, Optional

import apache_beam as beam
import tensorflow as tf

from components.ingest.formats import rules, table_rows
from components.ingest.graph import convert, registry, writer
from components.ingest.graph.params import IngestParams

TEMP_DIR = '.ingest-tmp'          # per-bundle part files; removed when the shards are written


@dataclasses.dataclass(frozen=True, kw_only=True)
class IngestOptions(IngestParams):
    """What the Beam graph needs: the settings (params.py, with the shard count resolved) and
    what was listed before Beam starts; validated here so a bad value fails before Beam starts."""
    root: str                       # images: the folder of class folders; tables: of the files
    classes: tuple = ()             # images: sorted class names; the label is the index
    input_base: str = ''            # symlinks must resolve inside it ('' = root)
    eval_shards: int = 0            # 0: same as num_shards
    table: Optional[table_rows.Table] = None       # tables: columns, label and types
    files: tuple = ()               # tables: the files, all with the table's columns
    # The setting's 0 (from the data) resolved by listing.py, to 0.01%, and why.
    train_percent: float = rules.DEFAULT_TRAIN_PERCENT
    split_reason: str = ''

    def _checks(self):
        yield from super()._checks()
        yield (0 < self.train_percent < 100,
               f'train_percent must be in (0, 100) for Beam, got {self.train_percent}')
        yield (self.num_shards >= 1 and self.eval_shards >= 0,
               f'num_shards must be >= 1, got {self.num_shards} (eval {self.eval_shards})')
        yield (self.split_key in ('source', 'content') or (
            self.table is not None and self.split_key in self.table.columns),
               f'split_key must be "source", "content" or a CSV column, got {self.split_key!r}')
        yield from registry.get(self.source).check(self)

    def shards(self) -> Dict[str, int]:
        return {'train': self.num_shards, 'eval': self.eval_shards or self.num_shards}


def finalize(output_dir: str, options: IngestOptions) -> Optional[dict]:
    """After the run: removes the part files, gives every split its N shards (an empty file for
    a shard no record hashed to), and returns what the source wrote for the executor (a
    table's class names and moments; None for images)."""
    temp_dir = os.path.join(output_dir, TEMP_DIR)
    summary = registry.get(options.source).finalize(temp_dir)
    if tf.io.gfile.exists(temp_dir):
        tf.io.gfile.rmtree(temp_dir)
    writer.fill_empty_shards(output_dir, options.shards(), options.compress)
    return summary


def build_ingest(pipeline: beam.Pipeline, options: IngestOptions, output_dir: str) -> None:
    """Adds the ingestion graph to `pipeline`, writing `Split-<name>/` shards and the
    quarantine under output_dir."""
    temp_dir = os.path.join(output_dir, TEMP_DIR)
    outputs = registry.get(options.source).read(pipeline, options, temp_dir)
    writer.write_shards(outputs['parts'], output_dir, options.shards(), options.compress)
    _ = (outputs[convert.QUARANTINE_TAG]
         | 'WriteQuarantine' >> beam.io.WriteToText(
             os.path.join(output_dir, rules.QUARANTINE_DIR,
                          rules.QUARANTINE_FILE.rsplit('.', 1)[0]),
             file_name_suffix='.jsonl', num_shards=1, shard_name_template='',
             # No file for a clean input: Beam's S3 writer cannot write an empty one (it
             # completes a multipart upload without parts, which S3 refuses), and readers
             # take a missing quarantine as an empty one (checks.read_quarantine).
             skip_if_empty=True))
