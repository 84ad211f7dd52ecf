"""The interface every ingestion source implements: image folders, CSV files, Parquet files.

No TFX imports. A source answers, for one input folder (the input base or a `span-<N>/`
folder in it):
- which files it reads (`pattern`, as TFX's driver matches them) and whether a folder holds any;
- the input's fingerprint, computed as the driver computes it, which keys the span index
  (spans/span_index.py): an unchanged fingerprint means the span is not converted again;
- what to list before Beam starts (`list_input`: class folders, or the table's files and its
  columns with their types, where `schema_hint` gives the types the files declare);
- the Beam graph that reads every record into an Example or a quarantine line with its reason
  (`read`), and what to record on the Examples afterwards (`finalize`, `describe`).

Sources are registered by name in registry.py; beam_pipeline.py, spans/listing.py and the
executor ask the registry and never test a source's name.
"""
import abc
import os
from typing import Any, Dict, Optional, Tuple

from apache_beam.io.filesystems import FileSystems

from components.ingest.formats import files

# Byte sizes, modification times and names, as TFX's driver fingerprints matched files.
_NANOS = 10 ** 9


def total_bytes(pattern: str) -> Tuple[int, int]:
    """(number of files, bytes) matched: one listing call, with sizes, on any file system."""
    matched = FileSystems.match([pattern])[0].metadata_list
    return len(matched), sum(m.size_in_bytes for m in matched)


class Source(abc.ABC):
    """One kind of input. Subclasses are stateless: one instance serves every run (registry)."""
    name: str = ''
    pattern: str = ''             # the files of one input folder, relative to it
    unlabelled_pattern: str = ''  # the same for input to score (runner.py --score)
    expected: str = ''            # what an input folder holds, for messages
    tabular: bool = False         # rows of named columns (a Table), not images

    def input_pattern(self, unlabelled: bool = False) -> str:
        return self.unlabelled_pattern if unlabelled else self.pattern

    def holds_input(self, folder: str) -> bool:
        """Whether the folder holds something to ingest."""
        return bool(files.glob_files(folder, self.pattern))

    def fingerprint(self, folder: str, unlabelled: bool = False) -> str:
        """The fingerprint of the folder's input, equal to the one TFX's FileBasedDriver records
        for it (tfx/utils/io_utils.py generate_fingerprint: the split name, which is the
        source's name (component.py), the number of matched files, their bytes, and the xor and
        sum of their modification times in whole seconds). Names that tf.io.gfile cannot list
        (not UTF-8) are fingerprinted by Python, as spans/name_safe_input.py does for the driver."""
        pattern = os.path.join(folder, self.input_pattern(unlabelled))
        gfile = files.gfile()
        try:
            matched = gfile.glob(pattern)
        except UnicodeDecodeError:
            return files.fingerprint(self.name, pattern)
        total = xor_sum = plain_sum = 0
        for path in matched:
            stat = gfile.stat(path)
            total += stat.length
            mtime = int(stat.mtime_nsec / _NANOS)
            xor_sum ^= mtime
            plain_sum += mtime
        return (f'split:{self.name},num_files:{len(matched)},total_bytes:{total},'
                f'xor_checksum:{xor_sum},sum_checksum:{plain_sum}')

    def schema_hint(self, path: str) -> Dict[str, str]:
        """{column: 'numeric' | 'categorical'} that a file declares; {} when its format has no
        types (types are then inferred from the values, formats/table_rows.py)."""
        del path
        return {}

    def check(self, options) -> Tuple[Tuple[bool, str], ...]:
        """(condition, message) pairs that options for this source must meet."""
        del options
        return ()

    @abc.abstractmethod
    def list_input(self, root: str, label_column: str, feature_types: Dict[str, str],
                   drop_columns: Tuple[str, ...], encoding: str,
                   unlabelled: bool) -> Dict[str, Any]:
        """What the Beam graph needs to know before it starts, as IngestOptions fields; raises
        rules.IngestionError when the folder holds nothing this source can read."""

    @abc.abstractmethod
    def estimated_output_bytes(self, options) -> int:
        """About how many bytes of Examples the input makes (for the automatic shard count)."""

    @abc.abstractmethod
    def estimated_records(self, options) -> int:
        """About how many records the input holds, before Beam reads it (for the eval split's
        share when it is chosen from the data, formats/rules.py train_share)."""

    @abc.abstractmethod
    def read(self, pipeline, options, temp_dir: str):
        """Adds the reading and converting transforms: every record is written to a part file
        under temp_dir (writer.PartWriters) or becomes a quarantine line. Returns the outputs
        tagged 'parts' (the part files) and convert.QUARANTINE_TAG."""

    def finalize(self, temp_dir: str) -> Optional[dict]:
        """After the run, before temp_dir is removed: what the graph wrote there for the
        executor (a table's class names and moments), or None."""
        del temp_dir
        return None

    @abc.abstractmethod
    def describe(self, options, result, summary: Optional[dict]) -> Dict[str, Any]:
        """What a finished run recorded, from the Beam result and finalize's summary:
        'class_names' (a list), 'input_spec' (core/inputs.InputSpec), and other
        Examples properties by name."""
