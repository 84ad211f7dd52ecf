"""Ingestion stage: image folders to sharded TFRecords of tf.train.Example."""
