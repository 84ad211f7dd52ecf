"""Turns BulkInferrer's PredictionLogs (the `classify` signature) into prediction rows, and
writes them as JSON lines and CSV.

A Classify log carries the request's tf.Example, so each row names its source (the image
path, or the CSV file, as ingestion recorded it in `source_path`) beside the predicted
class, its probability and the top-k classes. A CSV row is named by its file and its values
as ingestion read them (`row`: numbers as floats, an empty number left out), since ingestion
reads big files in parallel ranges and records no line number. Every row and both files
state the model version used. Files are written under a temporary name and renamed, so a
crash never leaves a half-written predictions file visible. No TFX imports.
"""
import csv
import io
import json
import os
from typing import Any, Dict, Iterable, List, Optional

import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from core import features

JSONL_FILE = 'predictions.jsonl'
CSV_FILE = 'predictions.csv'
TOP_K = 3

Row = Dict[str, Any]


def rows(logs: Iterable[prediction_log_pb2.PredictionLog], version: int,
         top_k: int = TOP_K) -> List[Row]:
    """One row per classified example, sorted by source so outputs are reproducible."""
    out = []
    for log in logs:
        if log.WhichOneof('log_type') != 'classify_log':
            raise ValueError(f'expected classify logs (the `classify` signature), got '
                             f'{log.WhichOneof("log_type")}')
        examples = log.classify_log.request.input.example_list.examples
        results = log.classify_log.response.result.classifications
        for example, classification in zip(examples, results):
            ranked = sorted(classification.classes, key=lambda c: -c.score)
            source = example.features.feature[features.SOURCE_KEY].bytes_list.value
            row = {'source': source[0].decode('utf-8', 'surrogateescape') if source else ''}
            values = _table_values(example)
            if values is not None:
                row['row'] = values
            out.append(dict(row, **{
                'class': ranked[0].label, 'probability': round(ranked[0].score, 6),
                'top_k': [[c.label, round(c.score, 6)] for c in ranked[:top_k]],
                'model_version': version}))
    return sorted(out, key=lambda row: (row['source'], json.dumps(row.get('row'),
                                                                  sort_keys=True)))


def _table_values(example: tf.train.Example) -> Optional[Dict[str, Any]]:
    """A CSV row's feature values ({column: float or text}); None for an image."""
    feature = example.features.feature
    if features.IMAGE_KEY in feature or features.IMAGE_RAW_KEY in feature:
        return None
    values = {}
    for name in sorted(set(feature) - features.RESERVED_KEYS):
        value = feature[name]
        if value.HasField('float_list'):
            values[name] = round(value.float_list.value[0], 6)
        elif value.HasField('bytes_list'):
            values[name] = value.bytes_list.value[0].decode('utf-8', 'replace')
    return values


def _write_atomically(path: str, text: str) -> None:
    tmp = path + '.tmp'
    with tf.io.gfile.GFile(tmp, 'w') as handle:
        handle.write(text)
    tf.io.gfile.rename(tmp, path, overwrite=True)


def write(out_dir: str, predicted: List[Row]) -> Dict[str, str]:
    """Writes predictions.jsonl and predictions.csv (top-k as 'class:probability' joined by
    ';'; a CSV row's values as columns after `source`); returns their paths."""
    tf.io.gfile.makedirs(out_dir)
    jsonl = ''.join(json.dumps(row, ensure_ascii=False) + '\n' for row in predicted)
    table = io.StringIO()
    writer = csv.writer(table)
    columns = sorted({name for row in predicted for name in row.get('row', {})})
    writer.writerow(['source'] + columns + ['class', 'probability', 'top_k', 'model_version'])
    for row in predicted:
        values = row.get('row', {})
        writer.writerow([row['source']] + [values.get(c, '') for c in columns] + [
            row['class'], row['probability'],
            ';'.join(f'{name}:{score}' for name, score in row['top_k']), row['model_version']])
    paths = {'jsonl': os.path.join(out_dir, JSONL_FILE), 'csv': os.path.join(out_dir, CSV_FILE)}
    _write_atomically(paths['jsonl'], jsonl)
    _write_atomically(paths['csv'], table.getvalue())
    return paths
