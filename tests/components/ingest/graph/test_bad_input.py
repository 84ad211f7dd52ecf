"""Every bad-input case of the ingestion issue: quarantined with its reason, counted, reconciled.

Runs the real Beam graph (in-process DirectRunner) on real files: real images next to a
truncated PNG, a zero-byte file, a text file, symlinks, a file no one may read (checked as
user `nobody` in a subprocess, since root ignores permissions) and CSV rows that break the
table's rules.
"""
import io
import json
import os
import shutil
import tempfile

import apache_beam as beam
import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from core import features
from components.ingest.formats import rules, table_rows
from components.ingest.graph import beam_pipeline, checks, stats

from helpers import REPO_ROOT, copy_digits
import warm_python


def _run(options, output_dir):
    pipeline = beam.Pipeline(argv=['--direct_running_mode=in_memory'])
    beam_pipeline.build_ingest(pipeline, options, output_dir)
    result = pipeline.run()
    result.wait_until_finish()
    table = beam_pipeline.finalize(output_dir, options)
    return stats.read_counts(result), checks.read_quarantine(output_dir), table


def _examples(output_dir, split):
    records_ = []
    for path in sorted(tf.io.gfile.glob(os.path.join(output_dir, f'Split-{split}', '*'))):
        records_ += [tf.train.Example.FromString(r.numpy()) for r in
                     tf.data.TFRecordDataset(path, compression_type='GZIP')]
    return records_


def _assert_reconciled(counts):
    written = counts['written_train'] + counts['written_eval']
    assert written + counts['rejected'] == counts['found']
    assert sum(counts[f'rejected_{r}'] for r in rules.REASONS) == counts['rejected']


def _gif_with_two_frames() -> bytes:
    frames = [Image.fromarray(np.full((8, 8), v, np.uint8)) for v in (10, 200)]
    buffer = io.BytesIO()
    frames[0].save(buffer, 'GIF', save_all=True, append_images=frames[1:])
    return buffer.getvalue()


def test_each_bad_image_is_quarantined_with_its_reason(small_images, tmp_path):
    png = os.path.join(small_images, '0', sorted(os.listdir(os.path.join(small_images, '0')))[0])
    with open(png, 'rb') as handle:
        data = handle.read()
    outside = tmp_path / 'outside.png'
    outside.write_bytes(data)
    bad = {
        '1/truncated.png': 'corrupt_image', '1/empty.png': 'empty_file',
        '2/notes.txt': 'not_an_image', '2/escape.png': 'outside_input_base',
        '2/dangling.png': 'unreadable',
    }
    (tmp_path / 'images' / '1' / 'truncated.png').write_bytes(data[:40])
    (tmp_path / 'images' / '1' / 'empty.png').write_bytes(b'')
    (tmp_path / 'images' / '2' / 'notes.txt').write_text('not an image')
    os.symlink(outside, os.path.join(small_images, '2', 'escape.png'))
    os.symlink(os.path.join(small_images, '2', 'gone.png'),  # inside the base, but missing
               os.path.join(small_images, '2', 'dangling.png'))
    # Good files that look unusual: a symlink inside the base, an animated GIF, BMP and JPEG.
    os.symlink(png, os.path.join(small_images, '1', 'inside_link.png'))
    (tmp_path / 'images' / '0' / 'animated.gif').write_bytes(_gif_with_two_frames())
    Image.open(png).save(os.path.join(small_images, '0', 'copy.bmp'))
    Image.open(png).convert('RGB').save(os.path.join(small_images, '0', 'copy.jpg'))

    options = beam_pipeline.IngestOptions(root=small_images, classes=('0', '1', '2'))
    counts, quarantine, _ = _run(options, str(tmp_path / 'out'))

    reasons = {os.path.relpath(q['source'], small_images): q['reason'] for q in quarantine}
    assert reasons == bad
    details = {os.path.basename(q['source']): q['detail'] for q in quarantine}
    assert str(outside) in details['escape.png']
    assert 'No such file' in details['dangling.png']
    assert counts['found'] == 15 + 5 + 4 and counts['rejected'] == 5
    for reason in set(bad.values()):
        assert counts[f'rejected_{reason}'] == list(bad.values()).count(reason)
    _assert_reconciled(counts)
    written = {e.features.feature[features.SOURCE_KEY].bytes_list.value[0].decode()
               for s in features.SPLITS for e in _examples(str(tmp_path / 'out'), s)}
    assert {'1/inside_link.png', '0/animated.gif', '0/copy.bmp', '0/copy.jpg'} <= written
    assert not written & set(bad)


def test_a_file_without_read_permission_is_quarantined_as_unreadable(tmp_path):
    # Outside pytest's tmp_path, whose parent only root may enter.
    base = tempfile.mkdtemp(prefix='ingest-perm-')
    try:
        root = copy_digits(os.path.join(base, 'images'), per_class=3)
        warmup = copy_digits(os.path.join(base, 'warmup'), per_class=1)
        # One bad file, so the warm-up writes a quarantine too (and loads what that needs):
        # a clean input writes none.
        with open(os.path.join(warmup, '0', 'bad.png'), 'w') as handle:
            handle.write('not an image')
        secret = os.path.join(root, '1', 'secret.png')
        shutil.copy(os.path.join(root, '1', sorted(os.listdir(os.path.join(root, '1')))[0]),
                    secret)
        for folder, dirs, files in os.walk(base):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        os.chmod(secret, 0o000)
        os.makedirs(os.path.join(base, 'out', 'run'))
        os.chmod(os.path.join(base, 'out', 'run'), 0o777)
        # A child of the warm interpreter (Beam and TensorFlow imported once a session), which
        # starts as root and drops to `nobody` as a fresh `python` would.
        output = warm_python.run_captured(
            [os.path.join(os.path.dirname(__file__), 'unprivileged_worker.py'),
             warmup, root, os.path.join(base, 'out')], REPO_ROOT, timeout=300,
            env={**os.environ, 'PYTHONPATH': REPO_ROOT, 'TF_CPP_MIN_LOG_LEVEL': '2'})
        assert output.returncode == 0, output.stderr[-3000:]
        result = json.loads(output.stdout.split('RESULT ', 1)[1])
    finally:
        shutil.rmtree(base)
    counts, quarantine = result['counts'], result['quarantine']
    assert [(os.path.basename(q['source']), q['reason']) for q in quarantine] == [
        ('secret.png', 'unreadable')]
    assert 'Permission denied' in quarantine[0]['detail']
    assert counts['found'] == 10 and counts['rejected_unreadable'] == 1
    _assert_reconciled(counts)


CSV_ROWS = [
    'width,colour,species',
    '1.5,red,a', '2.5,blue,b', '3.0,red,a', '4.0,green,b', '0.5,red,c',
    '"5.5","dark, blue",c',     # quoted fields, a comma inside a category: valid
    '',                         # a blank line is not a record
    '1.0,red,a,extra',          # wrong number of columns
    '2.0,red',                  # wrong number of columns
    'wide,red,a',               # non-numeric value in a numeric column
    ',red,b',                   # empty numeric value: kept, the value is missing
    '3.5,blue,',                # missing label
]


def _csv(tmp_path, rows=CSV_ROWS):
    root = tmp_path / 'table'
    root.mkdir(exist_ok=True)
    (root / 'data.csv').write_text('\n'.join(rows) + '\n')
    header = table_rows.read_header(str(root / 'data.csv'))
    # 'width' is given: in so few rows, one typo is more than the 5% inference tolerates.
    table = table_rows.infer_table(header, 'species',
                                   table_rows.sample_rows(str(root / 'data.csv')),
                                   {'width': 'numeric'})
    return beam_pipeline.IngestOptions(root=str(root), source='csv', table=table,
                                       files=(str(root / 'data.csv'),))


def test_each_bad_csv_row_is_quarantined_with_its_reason_and_raw_text(tmp_path):
    options = _csv(tmp_path)
    assert options.table.types == (('width', 'numeric'), ('colour', 'categorical'))
    counts, quarantine, table = _run(options, str(tmp_path / 'out'))
    assert sorted((q['reason'], q.get('column'), q['raw']) for q in quarantine) == [
        ('missing_label', 'species', '3.5,blue,'), ('non_numeric', 'width', 'wide,red,a'),
        ('wrong_column_count', None, '1.0,red,a,extra'), ('wrong_column_count', None, '2.0,red')]
    assert all(q['source'] == 'data.csv' for q in quarantine)
    assert counts['found'] == 11 and counts['rejected'] == 4
    assert counts['rejected_wrong_column_count'] == 2
    _assert_reconciled(counts)
    assert table['class_names'] == ['a', 'b', 'c']
    written = [e for s in features.SPLITS for e in _examples(str(tmp_path / 'out'), s)]
    # The empty width is left out of its Example (TFDV counts it missing); the row is kept.
    (no_width,) = [e for e in written if 'width' not in e.features.feature]
    assert no_width.features.feature['colour'].bytes_list.value[0] == b'red'
    by_width = {e.features.feature['width'].float_list.value[0]: e for e in written
                if e is not no_width}
    assert sorted(by_width) == [0.5, 1.5, 2.5, 3.0, 4.0, 5.5]
    quoted = by_width[5.5].features.feature
    assert quoted['colour'].bytes_list.value[0] == b'dark, blue'
    assert quoted[features.LABEL_KEY].int64_list.value[0] == 2
    assert quoted[features.LABEL_NAME_KEY].bytes_list.value[0] == b'c'


def test_numeric_moments_come_from_the_train_split(tmp_path):
    options = _csv(tmp_path)
    _, _, table = _run(options, str(tmp_path / 'out'))
    rows = _examples(str(tmp_path / 'out'), 'train')
    train = [e.features.feature['width'].float_list.value[0]
             for e in rows if 'width' in e.features.feature]
    # Over the non-empty values only; the rows without one are counted as missing.
    assert table['moments']['width'] == pytest.approx({
        'mean': np.mean(train), 'std': np.std(train) or 1.0, 'count': len(train),
        'missing': len(rows) - len(train)})


def test_inference_tolerates_a_few_typos_which_are_then_rejected():
    rows = [[str(i), 'red' if i % 2 else 'blue', 'a'] for i in range(40)] + [['n/a', 'red', 'a']]
    table = table_rows.infer_table(['size', 'colour', 'label'], 'label', rows)
    assert table.types == (('size', 'numeric'), ('colour', 'categorical'))
    with pytest.raises(rules.BadRecord) as raised:
        table_rows.row_values(['n/a', 'red', 'a'], table)
    assert raised.value.reason == 'non_numeric' and "'n/a'" in str(raised.value)
    mostly_text = rows[:10] + [['x', 'red', 'a']]
    assert table_rows.infer_table(['size', 'colour', 'label'], 'label', mostly_text).types[0] == (
        'size', 'categorical')


def test_given_feature_types_override_inference(tmp_path):
    rows = ['zip,label', '01234,x', '99999,y']
    header = rows[0].split(',')
    assert table_rows.infer_table(header, 'label', [r.split(',') for r in rows[1:]]).types == (
        ('zip', 'numeric'),)
    table = table_rows.infer_table(header, 'label', [], {'zip': 'categorical'})
    assert table_rows.row_values(['01234', 'x'], table) == ({'zip': '01234'}, 'x')
    with pytest.raises(ValueError, match='unknown columns'):
        table_rows.infer_table(header, 'label', [], {'zipcode': 'numeric'})
    with pytest.raises(ValueError, match='label column'):
        table_rows.infer_table(header, 'class', [])
    with pytest.raises(ValueError, match='clash'):
        table_rows.infer_table(['source_path', 'label'], 'label', [])
