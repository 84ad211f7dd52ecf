"""End-to-end: Parquet files another tool wrote, trained with runner.py's flags alone (marked e2e).

scikit-learn's wine table (178 wines of three cultivars) as pyarrow writes it into a landing
folder: `span-1/` with a few rows, `span-2/` with two files of several row groups each and a
third that stopped short (no footer). The class is a dictionary-encoded string column named
`cultivar`, `magnesium` has nulls, `hue` is a list of one value, two measurements are a struct,
and `harvested` is a timestamp. One command ingests the latest span and the window's older one,
quarantines the broken file with its reason, imputes the nulls, infers the schema, trains the
MLP and pushes it, and the console says each of these.
"""
import datetime
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.datasets import load_wine

from helpers import run_command

pytestmark = pytest.mark.e2e


def _landing_folder(folder):
    """Writes the spans; returns the number of null magnesium values in span 2."""
    wine = load_wine()
    rng = np.random.RandomState(3)
    columns = {name.replace('/', '_'): wine.data[:, i]
               for i, name in enumerate(wine.feature_names)}
    magnesium = [None if rng.rand() < 0.1 else float(v) for v in columns.pop('magnesium')]
    phenols = pa.StructArray.from_arrays(
        [pa.array(columns.pop('total_phenols')), pa.array(columns.pop('flavanoids'))],
        ['total', 'flavanoids'])
    table = pa.table(dict(
        {name: pa.array(values) for name, values in columns.items()},
        magnesium=pa.array(magnesium, pa.float64()),
        hue=pa.array([[v] for v in columns.pop('hue')], pa.list_(pa.float64())),
        phenols=phenols,
        harvested=pa.array([datetime.datetime(2020, 9, 1) + datetime.timedelta(days=int(d))
                            for d in rng.randint(0, 60, len(wine.target))], pa.timestamp('ms')),
        cultivar=pa.array([str(wine.target_names[t]) for t in wine.target]).dictionary_encode()))
    table = table.take(pa.array(rng.permutation(table.num_rows)))
    for span in ('span-1', 'span-2'):
        os.makedirs(os.path.join(folder, span))
    pq.write_table(table.slice(0, 30), os.path.join(folder, 'span-1', 'part-00000.parquet'))
    half = table.num_rows // 2
    for part, rows in enumerate((table.slice(0, half), table.slice(half))):
        pq.write_table(rows, os.path.join(folder, 'span-2', f'part-{part:05d}.parquet'),
                       row_group_size=25)
    with open(os.path.join(folder, 'span-2', 'part-00002.parquet'), 'wb') as handle:
        handle.write(b'PAR1' + b'\0' * 100)  # a copy that stopped short: no footer
    return sum(value is None for value in magnesium)


def test_a_user_trains_on_parquet_files_with_flags_alone(tmp_path):
    nulls = _landing_folder(str(tmp_path / 'landing'))
    assert pq.ParquetFile(str(tmp_path / 'landing' / 'span-2' / 'part-00000.parquet')
                          ).num_row_groups == 4
    out = str(tmp_path / 'out')
    result = run_command(
        [sys.executable, 'runner.py', '--local', '--source', 'parquet', '--data',
         str(tmp_path / 'landing'), '--label-column', 'cultivar', '--output', out,
         '--config', 'smoke', '--steps', '60'], timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert next(x for x in lines if x.startswith('  examples:')).endswith(
        'rejected 1 (corrupt_parquet 1) of 179 records (span 2)')
    assert next(x for x in lines if x.startswith('  window:')).startswith(
        '  window: spans 1-2, ')
    imputed = next(x for x in lines if x.startswith('  input: table of '))
    assert imputed.startswith('  input: table of 14 numeric and 0 categorical columns')
    assert imputed.endswith(f'magnesium {nulls}') and nulls > 0
    assert '  blessed: yes' in lines
    assert next(x for x in lines if x.startswith('  pushed:')).startswith(
        '  pushed: version 1 at ')
    # The quarantine names the broken file and pyarrow's reason.
    examples = os.path.join(out, 'pipeline_root', 'ImageExampleGen', 'examples')
    (execution,) = os.listdir(examples)
    with open(os.path.join(examples, execution, 'Quarantine', 'quarantine.jsonl')) as handle:
        (entry,) = [json.loads(line) for line in handle]
    assert (entry['source'], entry['reason']) == ('part-00002.parquet', 'corrupt_parquet')
    assert 'Parquet magic bytes not found' in entry['detail']
    # The served model reads the flattened struct, the list of one value and the timestamp.
    with open(os.path.join(out, 'serving', '1', 'assets.extra', 'input_spec.json')) as handle:
        spec = json.load(handle)
    numeric = {column[0] for column in spec['numeric']}
    assert {'phenols.total', 'phenols.flavanoids', 'hue', 'harvested', 'magnesium'} <= numeric
