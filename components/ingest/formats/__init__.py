"""Reading ingestion's input formats: the bottom of components/ingest/'s three packages.

No TFX and no Beam here, and no other package of components/ingest/: graph/ and spans/ build on
this one. rules.py is what every layer shares: the rejection reasons (BadRecord), quarantine
lines, split and shard keys, and IngestionError. files.py opens listed files safely and names
them whatever their bytes are; images.py and image_formats.py read, check and convert one image;
csv_records.py reads CSV files as records in byte ranges that workers share, table_rows.py turns
a row into Example values (the Table, its types, one row's checks), and parquet.py reads Parquet
row groups as the same records.
"""
