"""End-to-end (issue 21): a landing folder with one hostile file of each kind, through runner.py.

The digits sample plus a FIFO named pipe.png, a 30000x30000 PNG decompression bomb, a digit
named with the bytes b'\\xff\\xfe.png' and a lossless WebP. Through the real local runner (its
driver fingerprints the input; tf.io.gfile could not list the non-UTF-8 name) the run
completes within the rejected fraction allowed by the flag: the FIFO and the bomb are
quarantined with their reasons, the WebP is converted and counted, nothing hangs (a
subprocess timeout would fail the test).
"""
import glob
import io
import json
import os

from PIL import Image
import pytest

from helpers import copy_digits, run_command, run_log, runner_command
from ingest_helpers import bomb_png

pytestmark = pytest.mark.e2e


def test_a_hostile_landing_folder_completes_with_the_bad_files_quarantined(tmp_path):
    data = copy_digits(str(tmp_path / 'data'))
    digit = os.path.join(data, '1', sorted(os.listdir(os.path.join(data, '1')))[0])
    os.mkfifo(os.path.join(data, '0', 'pipe.png'))
    with open(os.path.join(data, '2', 'bomb.png'), 'wb') as handle:
        handle.write(bomb_png())
    with open(digit, 'rb') as source, open(
            os.path.join(os.fsencode(data), b'1', b'\xff\xfe.png'), 'wb') as handle:
        handle.write(source.read())
    buffer = io.BytesIO()
    Image.open(digit).save(buffer, 'WEBP', lossless=True)
    with open(os.path.join(data, '2', 'photo.webp'), 'wb') as handle:
        handle.write(buffer.getvalue())
    out = str(tmp_path / 'out')
    result = run_command(runner_command(data, out, '--config', 'smoke',
                                        '--max-rejected-fraction', '0.05'))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert 'Traceback' not in result.stdout and 'Traceback' not in result.stderr
    log = run_log(result.stdout)
    assert 'found 94, written 92' in log and 'converted 1 to PNG' in log
    assert 'Converted 2/photo.webp from WEBP' in log
    [quarantine] = glob.glob(os.path.join(out, '**', 'Quarantine', 'quarantine.jsonl'),
                             recursive=True)
    with open(quarantine) as handle:
        reasons = {os.path.basename(e['source']): e['reason'] for e in map(json.loads, handle)}
    assert reasons == {'pipe.png': 'not_a_file', 'bomb.png': 'too_large'}
