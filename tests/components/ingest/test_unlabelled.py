"""Ingestion of input to score (runner.py --score): images directly in the folder, or a CSV
without (or ignoring) its label column; the Examples carry no label, and bad input is
quarantined with its reason exactly as for training data."""
import glob
import json
import os

import tensorflow as tf

from core import features
from components.ingest.graph import checks
from ingest_helpers import ingest_do
import saved_models


def _examples(uri):
    found = []
    for path in sorted(glob.glob(os.path.join(uri, 'Split-*', '*.gz'))):
        found += [tf.train.Example.FromString(r.numpy())
                  for r in tf.data.TFRecordDataset(path, compression_type='GZIP')]
    return found


def _source(example):
    return example.features.feature[features.SOURCE_KEY].bytes_list.value[0].decode()


def test_a_flat_folder_of_images_becomes_unlabelled_examples_and_a_quarantine(tmp_path):
    folder = tmp_path / 'new'
    folder.mkdir()
    for name, value in (('a.png', 0.1), ('b.png', 0.9), ('c.png', 0.5)):
        (folder / name).write_bytes(saved_models.png(value))
    (folder / 'cut.png').write_bytes(saved_models.png(0.3)[:40])  # truncated
    (folder / 'sub').mkdir()                                        # not an image
    properties = {}
    examples = ingest_do(str(folder), str(tmp_path / 'out'), max_rejected_fraction=1.0,
                         pattern='*', unlabelled=1, properties=properties)
    found = _examples(examples.uri)
    assert sorted(_source(e) for e in found) == ['a.png', 'b.png', 'c.png']
    for example in found:
        assert features.LABEL_KEY not in example.features.feature
        assert features.LABEL_NAME_KEY not in example.features.feature
        assert example.features.feature[features.IMAGE_KEY].bytes_list.value[0]
    assert json.loads(examples.get_string_custom_property('class_names')) == []
    quarantine = {e['source'].rsplit('/', 1)[-1]: e['reason']
                  for e in checks.read_quarantine(examples.uri)}
    assert quarantine == {'cut.png': 'corrupt_image', 'sub': 'not_a_file'}
    assert (properties['num_found'], properties['num_rejected']) == (5, 2)


def test_a_csv_without_label_is_scored_and_a_label_column_present_is_ignored(tmp_path):
    for name, header, rows in (('plain', 'size,colour', ['1.5,red', '2,blue', 'x,red']),
                               ('labelled', 'size,colour,label', ['1.5,red,a', '2,blue,'])):
        folder = tmp_path / name
        folder.mkdir()
        (folder / 'rows.csv').write_text('\n'.join([header] + rows) + '\n')
        examples = ingest_do(str(folder), str(tmp_path / f'out-{name}'),
                             max_rejected_fraction=1.0, pattern='*.csv', source='csv',
                             label_column='label', feature_types='{"size": "numeric"}',
                             unlabelled=1)
        found = _examples(examples.uri)
        assert len(found) == 2  # the row with 'x' in the numeric column is quarantined
        for example in found:
            assert set(example.features.feature) == {features.SOURCE_KEY, 'size', 'colour'}
        spec = json.loads(examples.get_string_custom_property('input_spec'))
        assert spec['kind'] == 'tabular'
        reasons = [e['reason'] for e in checks.read_quarantine(examples.uri)]
        assert reasons == (['non_numeric'] if name == 'plain' else [])
