"""Unit tests of the run summary: it reads the run it is asked for, and says nothing about
stages that never ran. The store is a real ML Metadata SQLite file written the way TFX does."""
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2

from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text

_STATE = metadata_store_pb2.Execution


def _write_store(path):
    """Two runs of one pipeline: each ingests, and each pushes its own version."""
    config = metadata_store_pb2.ConnectionConfig()
    config.sqlite.filename_uri = path
    store = metadata_store.MetadataStore(config)
    types = {name: store.put_context_type(metadata_store_pb2.ContextType(name=name))
             for name in ('pipeline', 'pipeline_run')}
    pusher = store.put_execution_type(metadata_store_pb2.ExecutionType(
        name='components.push.component.Pusher'))
    pushed_type = store.put_artifact_type(metadata_store_pb2.ArtifactType(name='PushedModel'))
    pipeline = metadata_store_pb2.Context(type_id=types['pipeline'], name='p')
    [pipeline.id] = store.put_contexts([pipeline])
    for run_id, version in (('run-1', '1'), ('run-2', '2')):
        run = metadata_store_pb2.Context(type_id=types['pipeline_run'], name=run_id)
        [run.id] = store.put_contexts([run])
        artifact = metadata_store_pb2.Artifact(type_id=pushed_type, uri=f'/pushed/{version}')
        artifact.custom_properties['pushed'].int_value = 1
        artifact.custom_properties['pushed_version'].string_value = version
        artifact.custom_properties['pushed_destination'].string_value = f'/serving/{version}'
        event = metadata_store_pb2.Event(type=metadata_store_pb2.Event.OUTPUT)
        store.put_execution(
            metadata_store_pb2.Execution(type_id=pusher, last_known_state=_STATE.COMPLETE),
            [(artifact, event)], [pipeline, run])


def test_read_run_reads_the_named_run_and_read_latest_run_the_newest(tmp_path):
    path = str(tmp_path / 'metadata.sqlite')
    _write_store(path)
    first = summary_lib.read_run(path, 'run-1')
    assert first.run_id == 'run-1' and first.states == {'Pusher': 'COMPLETE'}
    assert 'pushed: version 1 at /serving/1' in summary_text.format_summary(first)
    assert summary_lib.read_latest_run(path, 'p').run_id == 'run-2'
    assert summary_lib.read_run(path, 'run-3') is None


def test_read_run_of_a_run_that_recorded_nothing_is_none(tmp_path):
    assert summary_lib.read_run(str(tmp_path / 'metadata.sqlite'), 'run-1') is None


def test_a_failed_run_names_the_stage_and_error_and_nothing_after_it():
    summary = summary_lib.RunSummary(
        run_id='r', states={'ImageExampleGen': 'FAILED'}, outputs={},
        failure=('ImageExampleGen', 'Nothing valid under /data\n  /data/a.png: not_an_image'))
    text = summary_text.format_summary(summary)
    assert text.splitlines() == ['Run r', '  steps: ImageExampleGen failed',
                                 '  failed: ImageExampleGen', '    Nothing valid under /data',
                                 '      /data/a.png: not_an_image']


def test_the_anomalies_line_only_when_the_gate_ran():
    passed = summary_lib.RunSummary('r', {'AnomalyGate': 'CACHED'}, {})
    stopped = summary_lib.RunSummary('r', {'AnomalyGate': 'FAILED'}, {},
                                     failure=('AnomalyGate', 'anomalies in train'))
    assert '  anomalies: none' in summary_text.format_summary(passed).splitlines()
    assert '  anomalies: found: the gate stopped the run' in summary_text.format_summary(stopped)
