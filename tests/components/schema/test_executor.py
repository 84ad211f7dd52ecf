"""Our SchemaGen: inferred on the first run and kept, reused after; a later span with a new
class is then an anomaly, and the gate's message says how to change the schema."""
import os

import pandas as pd
import pytest
import tensorflow_data_validation as tfdv
from tfx import version as tfx_version
from tfx.types import artifact_utils, standard_artifacts
from tfx.utils import io_utils

from components.gate import executor as gate_executor
from components.schema import executor, kept
from tensorflow_metadata.proto.v0 import schema_pb2


def _statistics(folder, classes, source=None):
    """StatisticsGen's output for a span whose train and eval splits hold these classes (and,
    with source, every row from that one file, as a CSV span's rows are)."""
    stats = standard_artifacts.ExampleStatistics()
    stats.uri = str(folder)
    stats.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    stats.set_string_custom_property('tfx_version', tfx_version.__version__)
    frame = pd.DataFrame({'label_name': [c for c in classes for _ in range(20)],
                          'label': [i for i, _ in enumerate(classes) for _ in range(20)]})
    if source:
        frame['source_path'] = source
    for split in ('train', 'eval'):
        os.makedirs(os.path.join(stats.uri, f'Split-{split}'))
        with open(os.path.join(stats.uri, f'Split-{split}', 'FeatureStats.pb'), 'wb') as handle:
            handle.write(tfdv.generate_statistics_from_dataframe(frame).SerializeToString())
    return stats


def _run(tmp_path, statistics, name):
    schema = standard_artifacts.Schema()
    schema.uri = str(tmp_path / name)
    executor.Executor().Do({'statistics': [statistics]}, {'schema': [schema]},
                           {'pipeline_root': str(tmp_path / 'root'), 'infer_feature_shape': 1})
    loaded = io_utils.parse_pbtxt_file(os.path.join(schema.uri, 'schema.pbtxt'),
                                       schema_pb2.Schema())
    return schema, loaded


def _domain(schema):
    return list(tfdv.get_domain(schema, 'label_name').value)


def test_the_first_run_infers_and_keeps_later_runs_reuse(tmp_path):
    first, inferred = _run(tmp_path, _statistics(tmp_path / 's1', ['a', 'b', 'c']), 'first')
    assert first.get_string_custom_property(executor.SOURCE_PROPERTY) == 'inferred'
    assert _domain(inferred) == ['a', 'b', 'c']
    path = tmp_path / 'root' / '_schema' / 'schema.pbtxt'
    assert path.is_file() and os.listdir(path.parent) == ['schema.pbtxt']  # no temp left
    assert first.get_string_custom_property(executor.PATH_PROPERTY) == str(path)
    # Span 2 has a fourth class: the schema is still the first run's, not re-inferred.
    later, reused = _run(tmp_path, _statistics(tmp_path / 's2', ['a', 'b', 'c', 'd']), 'later')
    assert later.get_string_custom_property(executor.SOURCE_PROPERTY) == 'kept'
    assert reused == inferred


def test_a_kept_schema_is_never_replaced(tmp_path):
    root = str(tmp_path / 'root')
    one, two = schema_pb2.Schema(), schema_pb2.Schema()
    one.feature.add(name='one', type=schema_pb2.INT)
    two.feature.add(name='two', type=schema_pb2.INT)
    assert kept.keep(root, one) == one
    assert kept.keep(root, two) == one  # a racing first run keeps the schema written first
    assert os.listdir(os.path.dirname(kept.path(root))) == ['schema.pbtxt']


def test_a_new_class_in_a_later_span_stops_the_gate_with_how_to_change_the_schema(tmp_path):
    _, schema = _run(tmp_path, _statistics(tmp_path / 's1', ['a', 'b', 'c']), 'first')
    new_span = _statistics(tmp_path / 's2', ['a', 'b', 'c', 'd'])
    anomalies = standard_artifacts.ExampleAnomalies()
    anomalies.uri = str(tmp_path / 'anomalies')
    anomalies.split_names = artifact_utils.encode_split_names(['train'])
    os.makedirs(os.path.join(anomalies.uri, 'Split-train'))
    found = tfdv.validate_statistics(
        tfdv.load_stats_binary(os.path.join(new_span.uri, 'Split-train', 'FeatureStats.pb')),
        schema)  # what ExampleValidator does with the kept schema
    with open(os.path.join(anomalies.uri, 'Split-train', 'SchemaDiff.pb'), 'wb') as handle:
        handle.write(found.SerializeToString())
    hint = kept.hint(str(tmp_path / 'root'), None)
    with pytest.raises(gate_executor.DataAnomaliesError) as error:
        gate_executor.Executor().Do({'anomalies': [anomalies]}, {}, {'schema_hint': hint})
    message = str(error.value)
    assert ('label_name: Unexpected string values -- Examples contain values missing from the '
            'schema: d (~25%)') in message
    assert (f'kept in {tmp_path}/root/_schema/schema.pbtxt' in message
            and 'delete that file' in message and '--schema FILE' in message)


def test_the_source_path_gets_no_domain_so_a_later_span_with_other_file_names_passes(tmp_path):
    # A CSV span: every row's source_path names the span's one file, which TFDV would make a
    # domain of; the next span's file has another name and must not be an anomaly.
    _, schema = _run(tmp_path, _statistics(tmp_path / 's1', ['a', 'b'], 'a.csv'), 'first')
    assert _domain(schema) == ['a', 'b']  # the label's domain is kept
    assert tfdv.get_feature(schema, 'source_path').WhichOneof('domain_info') is None
    assert [d.name for d in schema.string_domain] == ['label_name']
    later = _statistics(tmp_path / 's2', ['a', 'b'], 'b.csv')
    found = tfdv.validate_statistics(tfdv.load_stats_binary(
        os.path.join(later.uri, 'Split-train', 'FeatureStats.pb')), schema)
    assert not found.anomaly_info, found
