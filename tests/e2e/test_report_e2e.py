"""End-to-end: two `runner.py` runs into one output, with long class names (marked e2e).

The second run is the same command, so every step is cached. Checks what only a real run shows:
the training settings read back from ML Metadata (the trainer's execution properties and what it
recorded on the Model), one report per run with its own pictures, report.html being the newest,
and the cached rerun naming its baseline and the version served now.

Both run on Beam's portable path, the one Flink, Spark and Dataflow take: PortableRunner with an
embedded job server and LOOPBACK workers (the run's process runs the SDK harness). Given
--beam-args are used as they are (the project's setup file added, as they name no dependency),
so every Beam stage (ingestion, statistics, TFMA) goes through the Runner API and the Fn API
instead of the DirectRunner, and the first run still pushes.
"""
import glob
import http.server
import json
import os
import re
import socket
import sys
import threading

from PIL import Image
import pytest

from pipeline.definition.config import SETUP_FILE_ARG
from pipeline.report import page
from pipeline.runs import run_files

from helpers import copy_digits, run_command, run_log

pytestmark = pytest.mark.e2e
LONG = 'class_with_a_rather_long_name_{}'
PORTABLE = '--runner=PortableRunner --job_endpoint=embed --environment_type=LOOPBACK'


def _run(data, out, *flags, code=0, said=None):
    result = run_command(
        [sys.executable, 'runner.py', '--local', '--config', 'smoke', '--data', data,
         '--output', out, *flags])
    assert result.returncode == code, result.stderr[-3000:]
    if said is not None:
        said.append(result.stdout)
    reports = os.path.join(out, run_files.REPORTS_DIR)
    return sorted(n for n in os.listdir(reports) if n.endswith('.html'))


class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        type(self).bodies.append(json.loads(self.rfile.read(int(self.headers['Content-Length']))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def _history_rows(text):
    section = text.split('<h2 id="history">History</h2>')[1]
    return re.findall(r'<tr><td>([^<]+)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>'
                      r'<td>([^<]*)</td><td>([^<]*)</td></tr>', section)


def _rows(text):
    return dict(re.findall(r'<tr><td>([^<]+)</td><td>([^<]+)</td></tr>', text))


def _assert_ran_on_the_portable_runner(console):
    lines = console.splitlines()
    assert f'  beam: as given: {PORTABLE} (+ {SETUP_FILE_ARG})' in lines
    [examples] = [line for line in lines if line.startswith('  examples: ')]
    train, evaluated = map(int, re.fullmatch(
        r'  examples: train (\d+), eval (\d+), rejected 0 of 80 records.*', examples).groups())
    assert train + evaluated == 80 and 'pushed: version 1 at' in console
    log = run_log(console)
    # The portable runner's job service really ran the three Beam stages (ingestion,
    # statistics, TFMA): each is a submitted job that reached DONE.
    assert "Running job 'job-" in log
    assert log.count('Completed job in') >= 3 and log.count('Job state changed to DONE') >= 3
    # With a dependency flag among the args, TFX never packages itself into a temporary folder
    # (it did in every Beam stage, leaving each folder behind).
    assert 'Attempting to infer TFX Python dependency' not in log
    assert log.count('Nonempty beam arg setup_file already includes dependency') >= 3


def test_two_runs_keep_their_own_reports_with_settings_from_metadata(tmp_path):
    data = copy_digits(str(tmp_path / 'digits'), classes=('0', '1', '2', '3'), per_class=20)
    for digit in '0123':
        os.rename(os.path.join(data, digit), os.path.join(data, LONG.format(digit)))
    out = str(tmp_path / 'out')
    said = []
    # A failing --on-finish command: one line, the run's exit code (0) stays.
    first = _run(data, out, f'--beam-args={PORTABLE}',
                 '--on-finish', f'{sys.executable} -c "raise SystemExit(5)"', said=said)
    assert len(first) == 1
    assert 'notification failed: on-finish command exited with status 5: ' in said[0]
    _assert_ran_on_the_portable_runner(said[0])
    first_pictures = os.path.join(out, run_files.REPORTS_DIR, first[0][:-len('.html')])
    stamps = {n: os.stat(os.path.join(first_pictures, n)).st_mtime_ns
              for n in os.listdir(first_pictures)}
    assert set(stamps) == {'data_classes.png', 'training_curves.png', 'confusion_matrix.png',
                           'history_accuracy.png'}

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f'http://127.0.0.1:{server.server_address[1]}/'
    try:  # unchanged: every step cached, a new run id
        both = _run(data, out, f'--beam-args={PORTABLE}', '--notify', url, said=said)
    finally:
        server.shutdown()
        server.server_close()
    assert f'Notified {url}' in said[1]
    assert len(both) == 2 and first[0] in both
    assert {n: os.stat(os.path.join(first_pictures, n)).st_mtime_ns
            for n in os.listdir(first_pictures)} == stamps  # untouched by the second run
    second = [n for n in both if n not in first][0]
    with open(os.path.join(out, page.REPORT_FILE), encoding='utf-8') as handle:
        newest = handle.read()
    with open(os.path.join(out, run_files.REPORTS_DIR, second), encoding='utf-8') as handle:
        own = handle.read()
    assert newest.replace(f'{run_files.REPORTS_DIR}/', '') == own  # the same page, links aside
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
    assert (f'Served now: stable version 1 ({os.path.join(out, "serving", "1")}), this '
            'run&#x27;s model') in newest
    # The notification: the cached run's outcome, and the same JSON in the summary file.
    posted, = _Receiver.bodies
    assert posted['outcome'] == 'not pushed' and posted['exit_code'] == 0
    assert posted['reasons'] == ['version 1 already serves this model: pushed by an earlier '
                                 'run (the Pusher was cached)']
    assert posted['report'] == os.path.join(out, page.REPORT_FILE)
    # DriftCheck ran (cached from run 1): nothing was served then, so nothing was compared.
    assert posted['drift'] == {'compared_version': -1, 'reasons': [], 'values': [],
                               'text': 'drift: not measured (nothing served yet)'}
    with open(posted['summary_file']) as handle:
        assert json.load(handle) == posted
    assert posted['summary_file'] == posted['log'][:-len('.log')] + '.summary.json'
    # History: both runs, read back from ML Metadata, and the accuracy of version 1.
    rows = _history_rows(newest)
    assert [row[0] for row in rows] == [first[0][:-5].replace('_', ':'), posted['run_id']]
    train, evaluated = map(int, rows[0][2].split(' / '))
    assert train + evaluated == 80 and evaluated > 0 and rows[0][5] == 'pushed: version 1'
    assert rows[0][1] == rows[1][1] != ''  # the span
    # The Evaluator's figure, on the run's eval examples: nothing was served to compare with.
    accuracy = re.fullmatch(r'(0\.\d{4}) on (\d+) examples \(nothing served\)', rows[0][3])
    assert accuracy and int(accuracy.group(2)) == evaluated
    assert rows[1][3] == rows[0][3] and float(accuracy.group(1)) > 0  # the first run's model
    assert rows[1][5] == ('not pushed: version 1 already serves this model: pushed by an '
                          'earlier run (the Pusher was cached)')
    assert 'Served now: version 1. Labels (models.config): stable version 1, no canary.' in newest
    # The Data table: per class and split (no span folders: the data is one window of itself),
    # counted from the records, its total the run's.
    data = newest.split('<h2 id="data">Data</h2>')[1].split('<h2')[0]
    assert '<th>class</th><th>train</th><th>eval</th>' in data and 'window' not in data
    counts = re.findall(r'<tr><td>([^<]+)</td><td>(\d+)</td><td>(\d+)</td></tr>', data)
    assert [c[0] for c in counts] == [LONG.format(d) for d in '0123'] + ['total']
    assert counts[-1][1:] == (str(train), str(evaluated))
    # Long class names: the confusion matrix is drawn big enough for its rotated labels.
    matrix = os.path.join(out, run_files.REPORTS_DIR, second[:-len('.html')],
                          'confusion_matrix.png')
    with Image.open(matrix) as image:
        assert image.size[0] >= 450 and image.size[1] >= 450


def test_a_failed_run_notifies_its_stage_and_a_dead_receiver_keeps_exit_code_1(tmp_path):
    data, out = str(tmp_path / 'empty'), str(tmp_path / 'out')
    os.makedirs(data)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    said = []
    _run(data, out, '--notify', f'http://127.0.0.1:{port}/', code=1, said=said)
    failed = [line for line in said[0].splitlines() if line.startswith('notification failed')]
    assert len(failed) == 1 and 'refused' in failed[0].lower()
    saved, = glob.glob(os.path.join(out, 'logs', '*.summary.json'))
    with open(saved) as handle:
        summary = json.load(handle)
    assert (summary['outcome'], summary['failed_stage'], summary['exit_code']) == (
        'failed', 'ImageExampleGen', 1)
    with open(os.path.join(out, page.REPORT_FILE), encoding='utf-8') as handle:
        rows = _history_rows(handle.read())
    assert len(rows) == 1 and rows[0][5].startswith('failed: ImageExampleGen: ')
