"""End-to-end: two `runner.py` runs into one output, with long class names (marked e2e).

The second run is the same command, so every step is cached. Checks what only a real run shows:
the training settings read back from ML Metadata (the trainer's execution properties and what it
recorded on the Model), one report per run with its own pictures, report.html being the newest,
and the cached rerun naming its baseline and the version served now.
"""
import os
import re
import subprocess
import sys

from PIL import Image
import pytest

from pipeline.report import page

from helpers import REPO_ROOT, copy_digits

pytestmark = pytest.mark.e2e
LONG = 'class_with_a_rather_long_name_{}'


def _run(data, out):
    result = subprocess.run(
        [sys.executable, 'runner.py', '--local', '--config', 'smoke', '--data', data,
         '--output', out], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = os.path.join(out, page.REPORTS_DIR)
    return sorted(n for n in os.listdir(reports) if n.endswith('.html'))


def _rows(text):
    return dict(re.findall(r'<tr><td>([^<]+)</td><td>([^<]+)</td></tr>', text))


def test_two_runs_keep_their_own_reports_with_settings_from_metadata(tmp_path):
    data = copy_digits(str(tmp_path / 'digits'), classes=('0', '1', '2', '3'), per_class=20)
    for digit in '0123':
        os.rename(os.path.join(data, digit), os.path.join(data, LONG.format(digit)))
    out = str(tmp_path / 'out')
    first = _run(data, out)
    assert len(first) == 1
    first_pictures = os.path.join(out, page.REPORTS_DIR, first[0][:-len('.html')])
    stamps = {n: os.stat(os.path.join(first_pictures, n)).st_mtime_ns
              for n in os.listdir(first_pictures)}
    assert set(stamps) == {'data_classes.png', 'training_curves.png', 'confusion_matrix.png'}

    both = _run(data, out)  # unchanged: every step cached, a new run id
    assert len(both) == 2 and first[0] in both
    assert {n: os.stat(os.path.join(first_pictures, n)).st_mtime_ns
            for n in os.listdir(first_pictures)} == stamps  # untouched by the second run
    second = [n for n in both if n not in first][0]
    with open(os.path.join(out, page.REPORT_FILE), encoding='utf-8') as handle:
        newest = handle.read()
    with open(os.path.join(out, page.REPORTS_DIR, second), encoding='utf-8') as handle:
        own = handle.read()
    assert newest.replace(f'{page.REPORTS_DIR}/', '') == own  # the same page, links aside
    for src in re.findall(r'<img src="([^"]+)"', newest):
        assert os.path.getsize(os.path.join(out, src)) > 1000

    # Read back from ML Metadata: the smoke config's settings, and what the trainer recorded.
    rows = _rows(newest)
    assert rows['input size'].startswith('8\u00d78\u00d71 ')
    assert rows['replicas'] == '1'
    # auto on a CPU: float32 for the digits model, with the reason (bf16 instructions or not).
    assert rows['precision policy'].startswith('float32 (auto on a ')
    assert rows['batch'].startswith('16 per micro-batch') and rows['steps'] == '30 updates'
    assert rows['learning rate'].startswith('0.003') and rows['optimizer'] == 'adam'
    assert 'Every step was served from the cache' in newest
    assert ('Baseline: none (nothing was served), chosen when this model was first evaluated '
            '(reused from the cache)') in newest
    assert (f'Served now: version 1 ({os.path.join(out, "serving", "1")}), this run&#x27;s '
            'model') in newest
    # Long class names: the confusion matrix is drawn big enough for its rotated labels.
    matrix = os.path.join(out, page.REPORTS_DIR, second[:-len('.html')], 'confusion_matrix.png')
    with Image.open(matrix) as image:
        assert image.size[0] >= 450 and image.size[1] >= 450
