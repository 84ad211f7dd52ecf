"""Fashion-MNIST for bench/bench_quality.py: installed from Debian, written as class folders.

Debian's `dataset-fashion-mnist` package holds the four IDX files (gzip) and the upstream README
with the published benchmark table. Installing it is the bench's business: the product never
needs it. The class folders are what a user would point `--data` at: one folder per class,
named after the class, holding one PNG per image.
"""
import gzip
import os
import subprocess

import numpy as np

PACKAGE = 'dataset-fashion-mnist'
DATA_DIR = '/usr/share/datasets/fashion-mnist'
README = '/usr/share/doc/dataset-fashion-mnist/README.md.gz'
# Label index -> name, from the package README (a '/' cannot be in a folder name).
CLASS_NAMES = ('T-shirt_top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt',
               'Sneaker', 'Bag', 'Ankle_boot')


def ensure_installed() -> None:
    """Installs the Debian package when its files are missing (apt-get, as root or via sudo)."""
    if os.path.isfile(os.path.join(DATA_DIR, 'train-images-idx3-ubyte.gz')):
        return
    command = ['apt-get', 'install', '-y', '-q', PACKAGE]
    if os.geteuid() != 0:
        command.insert(0, 'sudo')
    print('installing Fashion-MNIST:', ' '.join(command), flush=True)
    if subprocess.run(command).returncode:
        raise SystemExit(f'could not install {PACKAGE}; install it and rerun')


def read_idx(prefix: str):
    """(images uint8 [n, 28, 28], labels uint8 [n]) of 'train' or 't10k'."""
    with gzip.open(os.path.join(DATA_DIR, f'{prefix}-images-idx3-ubyte.gz')) as handle:
        images = np.frombuffer(handle.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(DATA_DIR, f'{prefix}-labels-idx1-ubyte.gz')) as handle:
        labels = np.frombuffer(handle.read(), np.uint8, offset=8)
    if len(images) != len(labels):
        raise ValueError(f'{prefix}: {len(images)} images but {len(labels)} labels')
    return images, labels


def write_class_folders(dest: str, limit: int = 0) -> str:
    """Writes the training set (its first `limit` images when > 0) as dest/<class>/<n>.png.

    A marker file records a finished write of that many images, so a rerun reuses the folders
    and an interrupted write is redone from scratch.
    """
    from PIL import Image
    images, labels = read_idx('train')
    if limit:
        images, labels = images[:limit], labels[:limit]
    marker = dest.rstrip('/') + '.complete'  # beside the folders, not among the classes
    if os.path.isfile(marker) and open(marker).read() == str(len(images)):
        return dest
    if os.path.isdir(dest):
        for root, _, files in os.walk(dest, topdown=False):
            for name in files:
                os.remove(os.path.join(root, name))
    for name in CLASS_NAMES:
        os.makedirs(os.path.join(dest, name), exist_ok=True)
    for index, (image, label) in enumerate(zip(images, labels)):
        Image.fromarray(image).save(os.path.join(dest, CLASS_NAMES[label], f'{index:05d}.png'))
    with open(marker, 'w') as handle:
        handle.write(str(len(images)))
    return dest
