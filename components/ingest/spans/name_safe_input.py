"""TFX's file-based input processor, made to work on local file names that are not UTF-8.

The stock processor (used by the component's driver, and by the executor when no driver ran)
resolves the span and fingerprints the input with tf.io.gfile.glob, which raises
UnicodeDecodeError on a local name such as b'\xff\xfe.png' (as unzip and old Windows tools
write them): one such file would stop the run before ingestion starts. When that happens, the
same span rule (the latest span-<N>/, or the range's start span) and the same fingerprint
format are computed with Python's own listing (formats/files.py), which returns such names as
surrogate escapes. Ingestion then reads the file and records its name (rules.name_bytes,
formats/rules.py).

This module is the only TFX adapter of the ingestion libraries; it holds no logic of its own.
"""
import os
from typing import Optional, Tuple

from absl import logging
from tfx.components.example_gen import input_processor

from components.ingest.formats import files
from components.ingest.spans import listing


class Processor(input_processor.FileBasedInputProcessor):
    """FileBasedInputProcessor, falling back to Python's listing for undecodable names."""

    def resolve_span_and_version(self) -> Tuple[int, Optional[int]]:
        try:
            return super().resolve_span_and_version()
        except UnicodeDecodeError as error:
            if '://' in self._input_base_uri:
                raise
            logging.info('Input names that are not UTF-8 (%s): fingerprinted by Python', error)
        span = 0
        if self._is_match_span:
            spans = listing.span_folders(self._input_base_uri)
            static = self._range_config and self._range_config.HasField('static_range')
            span = (self._range_config.static_range.start_span_number if static
                    else max(spans, default=0))
        self._fingerprint = '\n'.join(files.fingerprint(split.name, os.path.join(
            self._input_base_uri, self.get_pattern_for_span_version(split.pattern, span, None)))
            for split in self._splits)
        return span, None
