"""Prediction rows from Classify logs, and the JSON-lines and CSV files they are written to."""
import csv
import json

import pytest
from tensorflow_serving.apis import prediction_log_pb2

from components.common import features
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
