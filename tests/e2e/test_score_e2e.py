"""End-to-end: `runner.py --score DIR` on a folder of images the test writes, one of them
truncated, with small real models in <output>/serving (tests/saved_models.py: brightness
classifiers exported by the trainer's own export, so no training is needed).

Version 1 calls dark images 'dark'; version 2, the served one, has its class centres swapped
and calls them 'bright'. The console run scores with the served version; `--version 1` scores
the same folder with the older one. Every good image gets a prediction, the truncated one is
quarantined with its reason, inputs = scored + quarantined, and the version is stated in the
console summary, in every prediction row and in summary.json.
"""
import csv
import json
import os
import sys

import pytest

import runner
import saved_models
from helpers import run_command

pytestmark = pytest.mark.e2e

CLASSES = ('dark', 'bright')
IMAGES = {'night.png': 0.05, 'dusk.png': 0.2, 'noon.png': 0.95}


@pytest.fixture(scope='module')
def scored(tmp_path_factory):
    base = tmp_path_factory.mktemp('score')
    out = base / 'out'
    for version, centers in ((1, [0.1, 0.9]), (2, [0.9, 0.1])):
        model = saved_models.exported_model(base / f'model-{version}', CLASSES, centers)
        saved_models.serve(model, out / 'serving', version)
    folder = base / 'new'
    folder.mkdir()
    for name, value in IMAGES.items():
        (folder / name).write_bytes(saved_models.png(value))
    (folder / 'cut.png').write_bytes(saved_models.png(0.5)[:50])   # truncated PNG
    result = run_command([sys.executable, 'runner.py', '--score', str(folder),
                          '--output', str(out)], timeout=600)
    return out, folder, result


def _result_folder(out, version):
    (folder,) = [f for f in os.listdir(out / 'scores') if f.endswith(f'-v{version}')]
    return out / 'scores' / folder


def test_scores_the_good_images_with_the_served_version(scored):
    out, folder, result = scored
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith('ScoringModel') and 'version 2' in line for line in lines)
    # Small input: Beam in-process, as ingestion chooses (pipeline/definition/beam_mode.py), and
    # why.
    assert any(line.startswith('Beam: in-process') for line in lines)
    assert any(line.startswith('ScoreWriter') and '3 scored, 1 quarantined' in line
               for line in lines)
    assert (f'Scored 3 of 4 inputs with model version 2 ({out / "serving" / "2"}); '
            '1 quarantined (corrupt_image 1)') in lines
    result_dir = _result_folder(out, 2)
    with open(result_dir / 'predictions.jsonl') as handle:
        rows = [json.loads(line) for line in handle]
    # Version 2 swapped its centres: dark images are 'bright' and the bright one 'dark'.
    assert {(r['source'], r['class'], r['model_version']) for r in rows} == {
        ('night.png', 'bright', 2), ('dusk.png', 'bright', 2), ('noon.png', 'dark', 2)}
    for row in rows:
        assert [name for name, _ in row['top_k']] == [row['class']] + [
            c for c in CLASSES if c != row['class']]
        assert row['probability'] == row['top_k'][0][1] > 0.5
    with open(result_dir / 'predictions.csv', newline='') as handle:
        table = list(csv.DictReader(handle))
    assert sorted((r['source'], r['class']) for r in table) == sorted(
        (r['source'], r['class']) for r in rows)
    with open(result_dir / 'quarantine.jsonl') as handle:
        (bad,) = [json.loads(line) for line in handle]
    assert bad['source'].endswith('cut.png') and bad['reason'] == 'corrupt_image'
    with open(result_dir / 'summary.json') as handle:
        summary = json.load(handle)
    assert (summary['inputs'], summary['scored'], summary['quarantined']) == (4, 3, 1)
    assert summary['inputs'] == summary['scored'] + summary['quarantined']
    assert summary['model_version'] == 2 and summary['input'] == str(folder)
    # Nothing half-written is visible: only whole result folders under scores/.
    assert not [f for f in os.listdir(out / 'scores') if f.startswith('.')]
    assert any(name.startswith('score-') for name in os.listdir(out / 'logs'))
    # The run's TFX artifacts (Examples, model links, logs) only duplicated the result: gone.
    left = [os.path.join(root, name) for root, _, names in os.walk(out / 'scoring')
            for name in names if name.endswith('.gz') or name == 'saved_model.pb']
    assert left == []


def test_version_scores_with_an_older_kept_version(scored, capfd):
    out, folder, _ = scored
    assert runner.main(['--score', str(folder), '--output', str(out), '--version', '1']) == 0
    with open(_result_folder(out, 1) / 'predictions.jsonl') as handle:
        rows = [json.loads(line) for line in handle]
    assert {(r['source'], r['class'], r['model_version']) for r in rows} == {
        ('night.png', 'dark', 1), ('dusk.png', 'dark', 1), ('noon.png', 'bright', 1)}
    assert 'with model version 1' in capfd.readouterr().out


def test_a_version_not_kept_is_one_line_and_nothing_scored(scored, capfd):
    out, folder, _ = scored
    before = sorted(os.listdir(out / 'scores'))
    assert runner.main(['--score', str(folder), '--output', str(out), '--version', '7']) == 2
    assert 'Version 7 is not kept under' in capfd.readouterr().out
    assert sorted(os.listdir(out / 'scores')) == before


def test_a_csv_is_scored_with_the_table_models_column_types(tmp_path, capfd):
    from core import inputs
    from training import export
    from models import mlp
    spec = inputs.InputSpec(kind='tabular', numeric=(('size', 2.0, 1.0),),
                            categorical=('colour',))
    out = tmp_path / 'out'
    export.export_serving_model(mlp.build_model(inputs.builder_input_shape(spec, (8, 8, 1)), 2),
                                str(out / 'serving' / '1'), (8, 8, 1), ('a', 'b'), spec)
    folder = tmp_path / 'rows'
    folder.mkdir()
    # '7' looks numeric: without the model's types it would be read as a number, not text;
    # the label column is ignored; the row with 'big' in the numeric column is quarantined.
    (folder / 'new.csv').write_text('size,colour,label\n1.5,7,a\n3,red,\nbig,red,b\n,blue,\n')
    assert runner.main(['--score', str(folder), '--source', 'csv', '--output', str(out)]) == 0
    with open(_result_folder(out, 1) / 'predictions.jsonl') as handle:
        rows = [json.loads(line) for line in handle]
    assert sorted(json.dumps(r['row'], sort_keys=True) for r in rows) == sorted(json.dumps(
        row, sort_keys=True) for row in ({'size': 1.5, 'colour': '7'},
                                         {'size': 3.0, 'colour': 'red'}, {'colour': 'blue'}))
    assert {r['class'] for r in rows} <= {'a', 'b'} and {r['source'] for r in rows} == {'new.csv'}
    assert 'Scored 3 of 4 inputs with model version 1' in capfd.readouterr().out
    with open(_result_folder(out, 1) / 'quarantine.jsonl') as handle:
        assert [json.loads(line)['reason'] for line in handle] == ['non_numeric']
