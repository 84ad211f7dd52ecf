"""Ingestion stage: image folders to sharded TFRecords of tf.train.Example.

component.py (ImageExampleGen's spec) and executor.py (its one Do) sit here, over three packages
that each import only the ones below them, so there is no cycle between them:

    spans/    which spans, and what is listed before Beam starts: formats/, graph/
    graph/    the Beam graph and the sources it is built from: formats/
    formats/  reading the input formats, and the rules every layer shares: none of the others

No package imports component.py or executor.py (tests/test_import_rules.py holds the rules).
"""
