"""Writes scikit-learn's bundled wine table as a CSV file: the embedded default for CSV input.

Run once to (re)create `data/wine/wine.csv`. The pipeline never imports scikit-learn: it reads
the CSV like any user's table.

    python data/make_wine.py [--out data/wine]

The data is the UCI "Wine" set: 178 wines from three cultivars, 13 numeric measurements of
their chemistry. The class goes in the `label` column as `class_0`, `class_1`, `class_2`.
"""
import argparse
import csv
import os

from sklearn.datasets import load_wine


def write_wine(out_dir: str) -> int:
    """Writes `<out_dir>/wine.csv` with a header row; returns the number of rows."""
    wine = load_wine()
    os.makedirs(out_dir, exist_ok=True)
    # Feature names become Example keys; keep them as scikit-learn spells them, but without '/'
    # (od280/od315_of_diluted_wines), which reads like a path in TFDV's output.
    columns = [name.replace('/', '_') for name in wine.feature_names]
    with open(os.path.join(out_dir, 'wine.csv'), 'w', newline='') as handle:
        writer = csv.writer(handle, lineterminator='\n')
        writer.writerow(columns + ['label'])
        for values, target in zip(wine.data, wine.target):
            # repr-exact floats: the file is stable across runs, so re-running is a no-op in git.
            writer.writerow([repr(float(v)) for v in values] + [wine.target_names[target]])
    return len(wine.target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=os.path.join(os.path.dirname(__file__), 'wine'))
    args = parser.parse_args()
    print(f'wrote {write_wine(args.out)} rows to {os.path.join(args.out, "wine.csv")}')


if __name__ == '__main__':
    main()
