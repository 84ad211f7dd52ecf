"""Helpers shared by the ingestion tests: one ImageExampleGen `Do` on a folder, a guard against
hangs, a decompression-bomb PNG, and a Parquet table with every kind of column."""
import contextlib
import datetime
import os
import signal
import struct
import zlib

from tfx.dsl.components.base import base_beam_executor
from tfx.proto import example_gen_pb2
from tfx.types import standard_artifacts
from tfx.utils import proto_utils

from components.ingest import component, executor
from helpers import IN_PROCESS_BEAM


def ingest_do(input_base, output_uri, max_rejected_fraction=0.01, pattern='*/*', properties=None,
        **extra):
    """Runs the driver's work and the executor in-process on input_base, as every orchestrator
    runs them; returns the Examples artifact (and fills `properties` with the execution
    properties, as TFX would record them). A given input_fingerprint stands for a driver that
    ran already (Vertex AI's hook)."""
    examples = standard_artifacts.Examples()
    # Laid out as TFX lays out a run: <pipeline root>/<node>/examples/<execution id>.
    examples.uri = os.path.join(output_uri, 'ImageExampleGen', 'examples', '1')
    input_config = example_gen_pb2.Input(splits=[
        example_gen_pb2.Input.Split(name='images', pattern=pattern)])
    exec_properties = {
        'input_base': input_base, 'input_config': proto_utils.proto_to_json(input_config),
        'train_percent': 60, 'num_shards': 2, 'max_rejected_fraction': max_rejected_fraction,
        'pipeline_root': output_uri, **extra}
    if 'input_fingerprint' not in exec_properties:
        exec_properties = component.resolve_input(exec_properties)
    context = base_beam_executor.BaseBeamExecutor.Context(
        beam_pipeline_args=IN_PROCESS_BEAM)
    executor.Executor(context).Do({}, {'examples': [examples]}, exec_properties)
    if properties is not None:
        properties.update(exec_properties)
    return examples


class Hung(Exception):
    """Not an OSError (as TimeoutError is), so that no reader can take it for a bad file."""


@contextlib.contextmanager
def no_hang(seconds=60):
    """Fails (Hung) instead of hanging when the body blocks, e.g. opening a FIFO."""
    def fail(*_):
        raise Hung(f'blocked for {seconds} s')
    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))


def bomb_png(width: int = 30000, height: int = 30000) -> bytes:
    """A valid PNG header of a huge grayscale image over a few rows of zeros (a few KB)."""
    header = struct.pack('>IIBBBBB', width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b'\0' * (width + 1) * 8, 9)
    return (b'\x89PNG\r\n\x1a\n' + _chunk(b'IHDR', header) + _chunk(b'IDAT', rows)
            + _chunk(b'IEND', b''))


def parquet_table(rows=40, start=0):
    """Every kind of column a tool writes: a float with nulls, a dictionary-encoded string with
    a null, a timestamp with a time zone, a date, a list of one value (one row: two), a
    struct, and the label."""
    import pyarrow as pa
    ids = range(start, start + rows)
    return pa.table({
        'size': pa.array([None if i % 5 == 0 else i + 0.5 for i in ids], pa.float64()),
        'colour': pa.array([None if i == 3 else ('red', 'green', 'blue')[i % 3]
                            for i in ids]).dictionary_encode(),
        'seen': pa.array([datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
                          + datetime.timedelta(seconds=i) for i in ids],
                         pa.timestamp('ns', tz='UTC')),
        'day': pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 3)
                         for i in ids], pa.date32()),
        'reading': pa.array([[i * 2] if i != 7 else [1, 2] for i in ids], pa.list_(pa.int64())),
        'where': pa.array([{'x': i, 'name': f'p{i % 2}'} for i in ids],
                          pa.struct([('x', pa.int64()), ('name', pa.string())])),
        'kind': pa.array([('cat', 'dog')[i % 2] for i in ids]),
    })


def write_parquet(folder, name, table, row_group_size=10):
    """Writes table to folder/name (made when missing) in row groups of row_group_size; the
    path."""
    import pyarrow.parquet as pq
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path
