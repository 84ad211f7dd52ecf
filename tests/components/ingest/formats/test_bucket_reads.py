"""CSV and Parquet files on a bucket read as the same records as on disk, although a GET of
theirs answers 500 (the `relay` fixture, tests/conftest.py): through tensorflow-io the CSV's
first lines were the error's XML and its last rows were lost (docs/storage.md). And a store that
stops answering while a Parquet file is read is the run's outage (StoreUnanswered, which ends
the run with exit 75), never the file's fault: no row group is quarantined as corrupt for it."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from components.ingest.formats import csv_records, parquet
from core import storage, store_watch


def _csv_text():
    return 'x,y,label\n' + ''.join(f'{i},"a, {i % 3}",label{i % 2}\n' for i in range(400))


def test_a_csv_on_a_bucket_reads_as_on_disk_through_a_500(s3, relay, tmp_path):
    local = tmp_path / 'data.csv'
    local.write_text(_csv_text())
    s3.server.client().put_object(Bucket=s3.name, Key='in/data.csv', Body=_csv_text().encode())
    relay.fail_next_get(f'{s3.name}/in/data.csv')
    on_bucket = [r[1:] for r in csv_records.file_records(s3.uri('in', 'data.csv'), 'utf-8')]
    assert relay.failed == [f'{s3.name}/in/data.csv']
    assert on_bucket == [r[1:] for r in csv_records.file_records(str(local), 'utf-8')]
    assert len(on_bucket) == 401 and on_bucket[-1] == ('399,"a, 0",label1', None)


def test_a_parquet_file_on_a_bucket_reads_as_on_disk_through_a_500(s3, relay, tmp_path):
    table = pa.table({'x': list(range(300)), 'label': [f'l{i % 2}' for i in range(300)]})
    local = tmp_path / 'data.parquet'
    pq.write_table(table, str(local), row_group_size=100)
    s3.server.client().put_object(Bucket=s3.name, Key='in/data.parquet',
                                  Body=local.read_bytes())

    def records(path):
        return [r[1:] for unit in parquet.plan_units(path)
                for r in parquet.read_unit(unit, ['x', 'label'], [])]
    relay.fail_next_get(f'{s3.name}/in/data.parquet')
    on_bucket = records(s3.uri('in', 'data.parquet'))
    assert relay.failed == [f'{s3.name}/in/data.parquet']
    assert on_bucket == records(str(local))
    assert len(on_bucket) == 300 and all(rejection is None for _, rejection in on_bucket)


@pytest.fixture
def large_parquet(s3, tmp_path, monkeypatch):
    """A 240-KB Parquet file of 3 row groups on the bucket, read in 1-KB GETs, with a store
    that stops answering given up on after 1 s (30 s in the product)."""
    monkeypatch.setattr(storage, 'READ_CHUNK_BYTES', 1024)
    monkeypatch.setattr(store_watch, 'BLIP_SECONDS', 1.0)
    values = np.random.default_rng(0).random(30_000)   # incompressible: 80 KB a row group
    local = tmp_path / 'data.parquet'
    pq.write_table(pa.table({'x': values, 'label': ['a'] * 30_000}), str(local),
                   row_group_size=10_000)
    s3.server.client().put_object(Bucket=s3.name, Key='in/data.parquet',
                                  Body=local.read_bytes())
    return s3.uri('in', 'data.parquet'), f'{s3.name}/in/data.parquet', local.stat().st_size


def test_an_outage_while_row_groups_are_decoded_is_the_runs_not_the_files(large_parquet, relay):
    uri, key, size = large_parquet
    units = parquet.plan_units(uri)
    assert len(units) == 1 and units[0][1:] == (0, 3)
    # The footer (pyarrow reads the last 64 KB) answers; the first row groups' bytes do not.
    relay.fail_gets(key, below=size - 70_000)
    with pytest.raises(storage.StoreUnanswered):
        list(parquet.read_unit(units[0], ['x', 'label'], []))
    assert relay.failed


def test_an_outage_while_a_parquet_file_is_opened_is_the_runs_not_the_files(large_parquet,
                                                                             relay):
    uri, key, size = large_parquet
    relay.fail_gets(key, below=size)   # every GET: its length is known, its bytes are not
    with pytest.raises(storage.StoreUnanswered):
        parquet.plan_units(uri)
    with pytest.raises(storage.StoreUnanswered):
        list(parquet.read_unit((uri, 0, 3), ['x', 'label'], []))
