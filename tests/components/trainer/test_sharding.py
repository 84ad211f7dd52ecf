"""How several workers split the input (components/trainer/data.py): FILE sharding when every
worker can have files of its own, else DATA; each worker's stream under FILE holds only its
files, and a resumed worker skips its share of what the whole stream consumed.

`input_ops.auto_shard_dataset` is what tf.distribute applies to each worker's dataset (with its
worker index), so calling it here shows what worker i reads without starting a cluster; the
e2e test (tests/test_workers_e2e.py) runs FILE sharding on two real workers.
"""
import tensorflow as tf
from tensorflow.python.distribute import input_ops

from components.trainer import data

from helpers import write_digit_examples


def test_file_sharding_only_when_every_worker_has_files():
    assert data.shard_policy(num_files=4, num_workers=2) == 'FILE'
    assert data.shard_policy(num_files=2, num_workers=2) == 'FILE'
    assert data.shard_policy(num_files=1, num_workers=2) == 'DATA'
    assert data.shard_policy(num_files=8, num_workers=1) == 'DATA'


def test_a_resumed_worker_skips_its_share_of_the_stream():
    assert data.stream_skip(640, 'DATA', 2) == 640
    assert data.stream_skip(640, 'FILE', 2) == 320
    assert data.stream_skip(640, 'FILE', 4) == 160


def _keys(dataset):
    # The trainer's datasets carry pixels and labels only: an example is known by their sums.
    return sorted((int(label), float(tf.reduce_sum(image)))
                  for images, labels in dataset for image, label in zip(images, labels))


def _worker_view(dataset, workers, index):
    return input_ops.auto_shard_dataset(dataset, workers, index, num_replicas_in_sync=workers)


def test_under_file_sharding_each_worker_reads_only_its_own_files(tmp_path):
    classes = ('0', '1', '2', '3')
    for i, name in enumerate(classes):  # one file per class: a file's examples share a label
        write_digit_examples(str(tmp_path / f'part-{i}.gz'), (name,), per_class=8)
    pattern = str(tmp_path / '*')
    files = len(tf.io.gfile.glob(pattern))
    policy = data.shard_policy(files, 2)
    assert policy == 'FILE'
    # Every file's label is 0 (each was written alone): its pixel sums tell them apart.
    per_file = [_keys(data.eval_dataset(str(tmp_path / f'part-{i}.gz'), 8, (8, 8, 1)))
                for i in range(4)]
    stream = data.train_dataset(pattern, 8, (8, 8, 1), seed=0, shard=policy)
    seen = [set(key for batch in _worker_view(stream, 2, i).take(8)
                for key in _keys([batch])) for i in range(2)]
    assert seen[0] == set(per_file[0]) | set(per_file[2])
    assert seen[1] == set(per_file[1]) | set(per_file[3])
    # DATA: every worker's slices come from every file.
    stream = data.train_dataset(pattern, 8, (8, 8, 1), seed=0, shard='DATA')
    seen = set(key for batch in _worker_view(stream, 2, 0).take(16) for key in _keys([batch]))
    assert all(seen & set(keys) for keys in per_file)
