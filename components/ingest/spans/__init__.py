"""Which spans a run ingests, and what is listed before Beam starts: the TFX and span glue, the top
of components/ingest/'s three packages.

It imports formats/ and graph/; in components/ingest/ only component.py and executor.py import
it. listing.py lists the input (the span-<N>/ folders, an empty latest span, the graph's options
from the execution properties), span_index.py is the span index (what was ingested, with which
parameters, where), window_spans.py picks the spans of the training window, and
name_safe_input.py is TFX's input processor made to work on file names that are not UTF-8 (the
one TFX import of the package).
"""
