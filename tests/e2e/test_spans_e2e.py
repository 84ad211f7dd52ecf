"""Spans under LocalDagRunner: the latest span is ingested and recorded on the Examples with its
window (the span before it referenced, not converted again), a new span re-ingests, an unchanged
input is served from the cache. Only ImageExampleGen runs, on a
few real digits per span, with ML Metadata in SQLite (marked e2e)."""
import json
import os

from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2
import pytest
from tfx import v1 as tfx

from components.ingest.formats.rules import IngestionError
from components.ingest.component import ImageExampleGen, uses_spans
from components.ingest.graph.params import IngestParams
from pipeline.runs import summary as summary_lib

from helpers import IN_PROCESS_BEAM, copy_digits

pytestmark = pytest.mark.e2e


def _run(data, out, window=1):
    pipeline = tfx.dsl.Pipeline(
        pipeline_name='spans', pipeline_root=os.path.join(out, 'root'),
        components=[ImageExampleGen(IngestParams(data_dir=data, num_shards=1, window=window),
                                    pipeline_root=os.path.join(out, 'root'))], enable_cache=True,
        metadata_connection_config=tfx.orchestration.metadata.sqlite_metadata_connection_config(
            os.path.join(out, 'metadata.sqlite')),
        beam_pipeline_args=IN_PROCESS_BEAM)
    tfx.orchestration.LocalDagRunner().run(pipeline)
    summary = summary_lib.read_latest_run(os.path.join(out, 'metadata.sqlite'), 'spans')
    (examples,) = summary.outputs['Examples']
    return summary.states['ImageExampleGen'], examples


def _prop(artifact, name):
    if name in artifact.properties:  # span and version are typed properties of Examples
        return artifact.properties[name].int_value
    return summary_lib.custom_property(artifact, name)


def test_latest_span_is_ingested_new_span_reingests_unchanged_is_cached(tmp_path):
    data, out = str(tmp_path / 'data'), str(tmp_path / 'out')
    copy_digits(os.path.join(data, 'span-1'), classes=('0', '1'), per_class=3)
    copy_digits(os.path.join(data, 'span-2'), classes=('0', '1'), per_class=5)
    assert uses_spans(data) and not uses_spans(os.path.join(data, 'span-1'))

    state, first = _run(data, out, window=2)
    assert state == 'COMPLETE'
    assert _prop(first, 'span') == 2
    assert [(e['span'], e['uri']) for e in json.loads(_prop(first, 'window'))] == [
        (1, os.path.join(first.uri, 'Span-1')), (2, first.uri)]
    assert _prop(first, 'num_found') == 10  # span-2's files only

    # The counts are also properties of the execution itself in ML Metadata.
    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = os.path.join(out, 'metadata.sqlite')
    (execution,) = [e for e in metadata_store.MetadataStore(config).get_executions()
                    if 'num_found' in e.custom_properties]
    counts = {k: v.int_value for k, v in execution.custom_properties.items()
              if k.startswith('num_')}
    assert counts['num_found'] == 10 and counts['num_rejected'] == 0
    assert counts['num_written_train'] + counts['num_written_eval'] == 10

    state, again = _run(data, out, window=2)
    assert state == 'CACHED' and again.id == first.id

    copy_digits(os.path.join(data, 'span-3'), classes=('0', '1'), per_class=4)
    state, third = _run(data, out, window=2)
    assert state == 'COMPLETE' and third.id != first.id
    assert _prop(third, 'span') == 3 and _prop(third, 'num_found') == 8
    # The window moved on: span 2 is referenced where the first run ingested it.
    assert [(e['span'], e['uri']) for e in json.loads(_prop(third, 'window'))] == [
        (2, first.uri), (3, third.uri)]


def test_an_empty_latest_span_stops_ingestion_with_one_line_naming_it(tmp_path):
    data, out = str(tmp_path / 'data'), str(tmp_path / 'out')
    copy_digits(os.path.join(data, 'span-1'), classes=('0', '1'), per_class=3)
    os.makedirs(os.path.join(data, 'span-2', '0'))  # created, but the images never arrived
    with pytest.raises(IngestionError) as raised:
        _run(data, out)
    assert str(raised.value) == (
        f'Span folder {os.path.join(data, "span-2")} is empty: expected one sub-folder per '
        'class holding its images (the latest span-<N>/ folder is ingested).')
