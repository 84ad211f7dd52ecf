"""The Beam graph of ingestion and the sources it is built from: the middle of components/ingest/'s
three packages.

No TFX imports; of components/ingest/ it imports formats/ only, and spans/ and the executor
build on it. source.py is the interface every source implements and registry.py names them
(image_source.py; table_source.py, with csv_source.py and parquet_source.py): each builds its
part of the graph from convert.py's DoFns. beam_pipeline.py puts the graph together (IngestOptions,
build_ingest), writer.py writes the shards, stats.py reads the counters and moments back, and
checks.py judges a run's counts. params.py (IngestParams, every setting) is here rather than
beside component.py because IngestOptions extends it and it takes the source names from
registry.py: above the packages, it would import graph/ and be imported by it.
"""
