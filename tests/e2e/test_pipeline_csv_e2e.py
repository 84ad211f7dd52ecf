"""End-to-end: the real pipeline on a tiny CSV sample under LocalDagRunner (marked e2e).

The CSV source through the same create_pipeline() as images: ingestion with a quarantined bad
row, TFDV against the curated wine schema, the MLP trained by the same loop, TFMA, the push,
and a second run served entirely from the cache.
"""
import dataclasses
import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from pipeline.definition import config as config_lib
from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text

from helpers import run_pipeline, version_folders

pytestmark = pytest.mark.e2e


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp('csv_e2e')
    with open(os.path.join(config_lib.DEFAULT_CSV_DATA, 'wine.csv')) as handle:
        header, *rows = handle.read().splitlines()
    by_class = {}
    for row in rows:
        by_class.setdefault(row.rsplit(',', 1)[1], []).append(row)
    sample = [r for name in sorted(by_class) for r in by_class[name][:20]]
    bad = 'lots,' + sample[0].split(',', 1)[1]  # a non-numeric alcohol value
    os.makedirs(base / 'data')
    (base / 'data' / 'wine.csv').write_text('\n'.join([header] + sample + [bad]) + '\n')
    cfg = config_lib.smoke_config(str(base / 'data'), str(base / 'out'), source='csv',
                                  schema_path=config_lib.WINE_SCHEMA)
    cfg = dataclasses.replace(cfg, ingest=dataclasses.replace(cfg.ingest,
                                                              max_rejected_fraction=0.05))
    return cfg, run_pipeline(cfg), run_pipeline(cfg)


def test_every_component_runs_and_the_bad_row_is_quarantined(runs):
    cfg, first, _ = runs
    assert {s for n, s in first.states.items() if n != 'Resolver'} == {'COMPLETE'}
    assert 'ImportSchemaGen' in first.states and 'ImageTrainer' in first.states
    (examples,) = first.outputs['Examples']
    prop = lambda name: summary_lib.custom_property(examples, name)  # noqa: E731
    assert (prop('num_found'), prop('num_rejected'), prop('num_rejected_non_numeric')) == (61, 1, 1)
    assert prop('num_written_train') + prop('num_written_eval') == 60
    assert json.loads(prop('class_names')) == ['class_0', 'class_1', 'class_2']
    with open(prop('quarantine_uri')) as handle:
        (entry,) = [json.loads(line) for line in handle]
    assert entry['reason'] == 'non_numeric' and entry['raw'].startswith('lots,')
    assert 'examples: train' in summary_text.format_summary(first)
    assert '(non_numeric 1) of 61 records' in summary_text.format_summary(first)


def test_the_exported_mlp_serves_serialized_rows(runs):
    _, first, _ = runs
    model = first.trained_model()
    loaded = tf.saved_model.load(os.path.join(model.uri, 'Format-Serving'))
    assert set(loaded.signatures) == {'serving_default', 'classify'}
    (examples,) = first.outputs['Examples']
    files = glob.glob(os.path.join(examples.uri, 'Split-eval', '*.gz'))
    batch = tf.stack(list(tf.data.TFRecordDataset(files, compression_type='GZIP').take(4)))
    out = loaded.signatures['serving_default'](examples=batch)
    assert out['probabilities'].shape == (4, 3)
    np.testing.assert_allclose(out['probabilities'].numpy().sum(axis=1), 1.0, rtol=1e-5)
    assert set(n.decode() for n in out['class_names'].numpy()[:, 0]) <= {
        'class_0', 'class_1', 'class_2'}
    # TF Serving's warm-up file: up to 8 eval rows, each for serving_default and classify.
    eval_rows = sum(1 for _ in tf.data.TFRecordDataset(files, compression_type='GZIP'))
    warmup_file = os.path.join(model.uri, 'Format-Serving', 'assets.extra',
                               'tf_serving_warmup_requests')
    assert sum(1 for _ in tf.data.TFRecordDataset(warmup_file)) == 2 * min(8, eval_rows) > 0


def test_the_model_is_pushed_and_a_second_run_is_fully_cached(runs):
    cfg, first, second = runs
    (pushed,) = first.outputs['PushedModel']
    assert summary_lib.custom_property(pushed, 'pushed') == 1
    assert {s for n, s in second.states.items() if n != 'Resolver'} == {'CACHED'}
    assert len(version_folders(cfg.serving_dir)) == 1
