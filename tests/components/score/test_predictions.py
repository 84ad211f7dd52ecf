"""Prediction rows from Classify logs, and the JSON-lines and CSV files they are written to."""
import csv
import json

import pytest
from tensorflow_serving.apis import prediction_log_pb2

from core import features
from components.score import predictions


def _log(source, scores):
    log = prediction_log_pb2.PredictionLog()
    example = log.classify_log.request.input.example_list.examples.add()
    example.features.feature[features.SOURCE_KEY].bytes_list.value.append(source.encode())
    classification = log.classify_log.response.result.classifications.add()
    for label, score in scores.items():
        klass = classification.classes.add()
        klass.label, klass.score = label, score
    return log


def test_rows_rank_the_classes_and_name_source_and_version(tmp_path):
    logs = [_log('b.png', {'cat': 0.2, 'dog': 0.7, 'fox': 0.1}),
            _log('a.png', {'cat': 0.6, 'dog': 0.3, 'fox': 0.1})]
    rows = predictions.rows(logs, version=4, top_k=2)
    assert [r['source'] for r in rows] == ['a.png', 'b.png']
    assert rows[1]['class'] == 'dog' and rows[1]['probability'] == pytest.approx(0.7)
    assert [name for name, _ in rows[0]['top_k']] == ['cat', 'dog']
    assert {r['model_version'] for r in rows} == {4}

    paths = predictions.write(str(tmp_path / 'out'), rows)
    with open(paths['jsonl']) as handle:
        assert [json.loads(line)['class'] for line in handle] == ['cat', 'dog']
    with open(paths['csv'], newline='') as handle:
        table = list(csv.DictReader(handle))
    assert [(r['source'], r['class'], r['model_version']) for r in table] == [
        ('a.png', 'cat', '4'), ('b.png', 'dog', '4')]
    assert table[1]['top_k'].startswith('dog:0.7')
    assert not list((tmp_path / 'out').glob('*.tmp'))


def test_a_predict_log_is_refused_with_the_reason():
    log = prediction_log_pb2.PredictionLog()
    log.predict_log.request.model_spec.signature_name = 'serving_default'
    with pytest.raises(ValueError, match='expected classify logs'):
        predictions.rows([log], version=1)


def test_a_csv_row_is_named_by_its_file_and_values_in_both_files(tmp_path):
    logs = []
    for size, colour, scores in ((2.0, 'red', {'a': 0.8, 'b': 0.2}),
                                 (1.5, 'blue', {'a': 0.1, 'b': 0.9})):
        log = _log('rows.csv', scores)
        feature = log.classify_log.request.input.example_list.examples[0].features.feature
        feature['size'].float_list.value.append(size)
        feature['colour'].bytes_list.value.append(colour.encode())
        logs.append(log)
    rows = predictions.rows(logs, version=2)
    assert [(r['row'], r['class']) for r in rows] == [
        ({'colour': 'blue', 'size': 1.5}, 'b'), ({'colour': 'red', 'size': 2.0}, 'a')]
    paths = predictions.write(str(tmp_path), rows)
    with open(paths['csv'], newline='') as handle:
        table = list(csv.DictReader(handle))
    assert list(table[0]) == ['source', 'colour', 'size', 'class', 'probability', 'top_k',
                              'model_version']
    assert [(r['colour'], r['size'], r['class']) for r in table] == [
        ('blue', '1.5', 'b'), ('red', '2.0', 'a')]
