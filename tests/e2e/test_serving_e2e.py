"""End-to-end: `runner.py --config smoke` on 3 classes x 30 digits, then real clients (marked e2e).

The pushed version is checked with TensorFlow's own `saved_model_cli` (show, and run with a
serialized tf.Example and with raw PNG bytes), its predictions against in-process ones, the
report against its sections, and a rerun where only the Pusher misses the cache.
"""
import glob
import os
import re
import sys

import numpy as np
import pytest
import tensorflow as tf

from core import versions
from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text
from pipeline.report import page

from helpers import run_command

pytestmark = pytest.mark.e2e
# The module the `saved_model_cli` script runs (its entry point is this module's main), as
# `python -m`: so helpers.run_command runs it in a child of the warm interpreter, where
# TensorFlow is already imported, instead of a fresh interpreter importing it for each of the
# three commands (about 4 s each). The program and its arguments are the same.
CLI = 'tensorflow.python.tools.saved_model_cli'


@pytest.fixture(scope='module')
def run(served_digits):
    """The shared smoke run (conftest.py, served_digits): `runner.py --local --config smoke` on 3
    classes x 30 digits; what a test reads of the output after later runs was recorded then."""
    shared = served_digits
    assert shared.first_run.returncode == 0, shared.first_run.stderr[-3000:]
    return shared.cfg, shared.first_run.stdout, shared.data, shared


def _pngs(data, per_class=2):
    return [open(path, 'rb').read() for name in ('0', '1', '2')
            for path in sorted(glob.glob(os.path.join(data, name, '*.png')))[:per_class]]


def _cli(*args):
    result = run_command([sys.executable, '-m', CLI, *args], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_push_is_integer_version_one_recorded_on_the_artifact(run):
    cfg, stdout, _, shared = run
    assert shared.served_after_first == ['1']
    pushed = shared.first.outputs['PushedModel'][0]
    assert summary_lib.custom_property(pushed, 'pushed_version') == '1'
    assert summary_lib.custom_property(pushed, 'pushed_destination') == os.path.join(
        cfg.serving_dir, '1')
    assert f'pushed: version 1 at {cfg.serving_dir}/1' in stdout


def test_saved_model_cli_show_lists_both_signatures(run):
    cfg, _, _, _ = run
    shown = _cli('show', '--dir', os.path.join(cfg.serving_dir, '1'), '--all')
    for signature, input_name in (('serving_default', 'examples'), ('predict_images', 'images')):
        block = shown.split(f"signature_def['{signature}']")[1].split('signature_def[')[0]
        assert f"inputs['{input_name}'] tensor_info:" in block and 'dtype: DT_STRING' in block
        for output in ('probabilities', 'class_ids', 'class_names'):
            assert f"outputs['{output}']" in block


def test_saved_model_cli_run_with_examples_and_raw_bytes_equals_in_process(run, tmp_path):
    cfg, _, data, _ = run
    version_dir = os.path.join(cfg.serving_dir, '1')
    pngs = _pngs(data)
    # serving_default: saved_model_cli builds the tf.Examples itself from the feature literals.
    # Every byte is \x-escaped, since the CLI splits its argument at ';' before parsing it.
    literals = ["b'" + ''.join(f'\\x{byte:02x}' for byte in png) + "'" for png in pngs]
    examples = '[' + ','.join('{"image/encoded":[%s]}' % lit for lit in literals) + ']'
    _cli('run', '--dir', version_dir, '--tag_set', 'serve', '--signature_def',
         'serving_default', '--input_examples', f'examples={examples}',
         '--outdir', str(tmp_path / 'by_example'))
    # predict_images: a client sends the PNG files' bytes, no protobuf.
    np.save(tmp_path / 'images.npy', np.array(pngs, dtype=object))
    _cli('run', '--dir', version_dir, '--tag_set', 'serve', '--signature_def', 'predict_images',
         '--inputs', f'images={tmp_path / "images.npy"}', '--outdir', str(tmp_path / 'by_image'))

    loaded = tf.saved_model.load(version_dir)
    expected = loaded.signatures['predict_images'](images=tf.constant(pngs))
    for folder in ('by_example', 'by_image'):
        probabilities = np.load(tmp_path / folder / 'probabilities.npy')
        assert probabilities.shape == (len(pngs), 3)
        np.testing.assert_allclose(probabilities, expected['probabilities'].numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_array_equal(np.load(tmp_path / folder / 'class_ids.npy'),
                                      expected['class_ids'].numpy())
        names = np.load(tmp_path / folder / 'class_names.npy', allow_pickle=True)
        assert [n.decode() for n in names.ravel()] == [
            n.decode() for n in expected['class_names'].numpy().ravel()]
    # A trained model, not chance: most of these training digits get their folder's class.
    predicted = np.load(tmp_path / 'by_image' / 'class_ids.npy')
    assert np.mean(predicted == np.repeat([0, 1, 2], 2)) >= 0.8


def test_report_is_written_printed_and_has_every_section(run):
    cfg, stdout, _, shared = run
    path = os.path.join(os.path.abspath(cfg.output_dir), page.REPORT_FILE)
    assert f'Report: {path}' in stdout
    # The report and its pictures' sizes as the run left them (later runs rewrite report.html).
    assert shared.report_path == path
    text = shared.report_text
    for section in page.SECTIONS:
        assert f'<h2 id="{section.lower()}">{section}</h2>' in text
    for picture in re.findall(r'<img src="([^"]+)"', text):
        assert shared.report_picture_sizes[picture] > 1000
    assert {'data_classes.png', 'training_curves.png', 'confusion_matrix.png'} <= {
        os.path.basename(src) for src in re.findall(r'<img src="([^"]+)"', text)}
    assert not re.search(r'(src|href)="(https?:)?//', text)  # opens offline
    assert 'train: <span class="yes">none</span>' in text       # anomalies
    assert 'train/loss' in text and 'sparse_categorical_accuracy' in text
    assert '<b>Blessed</b>' in text  # smoke bar 0.0: the one check, overall, passed
    assert re.search(r'<td>sparse_categorical_accuracy</td><td>overall</td><td>[01]\.\d{4}</td>'
                     r'<td>&gt;= 0\.00</td><td>pass</td>', text)
    assert os.path.join(cfg.serving_dir, '1') in text


def test_rerun_where_only_the_pusher_misses_the_cache_makes_no_new_version(run):
    _, _, _, shared = run
    # conftest.py reran the pipeline with the Beam args runner.py chose for the first run (they
    # are part of every Beam stage's cache key), and only the Pusher's setting changed
    # (keep_versions=3).
    summary = shared.pusher_rerun
    states = {n: s for n, s in summary.states.items() if n != 'Resolver'}
    assert states.pop('Pusher') == 'COMPLETE'
    assert set(states.values()) == {'CACHED'}, states
    # the stock Pusher made a second copy here
    assert shared.served_after_pusher_rerun == ['1']
    pushed = summary.outputs['PushedModel'][0]
    assert summary_lib.custom_property(pushed, 'pushed_version') == '1'
    assert summary_lib.custom_property(pushed, versions.REUSED_PROPERTY) == 1
    assert 'version 1 at' in summary_text.format_summary(summary)
    assert '(already served: no new copy)' in summary_text.format_summary(summary)
