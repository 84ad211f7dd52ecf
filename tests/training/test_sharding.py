"""How several workers split the input (training/data.py): FILE sharding when every
worker can have files of its own, else DATA; each worker's stream under FILE holds only its
files, and a resumed worker skips its share of what the whole stream consumed.

`input_ops.auto_shard_dataset` is what tf.distribute applies to each worker's dataset (with its
worker index), so calling it here shows what worker i reads without starting a cluster; the
e2e test (tests/e2e/test_input_shape_e2e.py) runs FILE sharding on two real workers, on 28x28 images
with the default (light) augmentation.
"""
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.distribute import input_ops

from training import augment, data, distribute

from helpers import write_digit_examples

SHAPE = (28, 28, 1)  # light shifts by up to 2 px here (it leaves images under 10 px alone)


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


def _with_policy(dataset, policy):
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(
        tf.data.experimental.AutoShardPolicy, policy)
    return dataset.with_options(options)


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
    def worker_stream(i):  # a new dataset each time: a second pass would reshuffle
        return _worker_view(data.train_dataset(pattern, 8, (8, 8, 1), seed=0, shard=policy,
                                               worker=i, num_workers=2), 2, i)
    seen = [set(key for batch in worker_stream(i).take(8) for key in _keys([batch]))
            for i in range(2)]
    assert seen[0] == set(per_file[0]) | set(per_file[2])
    assert seen[1] == set(per_file[1]) | set(per_file[3])
    # The files and order tf.distribute's own FILE rewrite gave each worker, bit for bit.
    for i in range(2):
        rewritten = _with_policy(data.train_dataset(pattern, 8, (8, 8, 1), seed=0), 'FILE')
        for ours, theirs in zip(worker_stream(i).take(8), _worker_view(rewritten, 2, i).take(8)):
            np.testing.assert_array_equal(ours[0], theirs[0])
            np.testing.assert_array_equal(ours[1], theirs[1])
    # DATA: every worker's slices come from every file.
    stream = data.train_dataset(pattern, 8, (8, 8, 1), seed=0, shard='DATA')
    seen = set(key for batch in _worker_view(stream, 2, 0).take(16) for key in _keys([batch]))
    assert all(seen & set(keys) for keys in per_file)


@pytest.fixture(scope='module')
def pattern28(tmp_path_factory):
    """Four files of six 28x28 digits each, a class per file, as the ingested train split."""
    folder = tmp_path_factory.mktemp('digits28')
    for i, name in enumerate(('0', '1', '2', '3')):
        write_digit_examples(str(folder / f'part-{i}.gz'), (name,), per_class=6, size=28)
    return str(folder / '*')


def _batches(dataset, count):
    return [image.numpy() for images, _ in dataset.take(count) for image in images]


def _worker_stream(pattern, worker, mode='light', skip=0):
    # What worker `worker` of 2 iterates with the defaults (light, decoded cache): its dataset
    # after tf.distribute's sharding step, which raised "unshardable source dataset" before.
    return _worker_view(data.train_dataset(
        pattern, 8, SHAPE, seed=0, cache_decoded=True, augment=mode, shard='FILE',
        worker=worker, num_workers=2, skip_examples=data.stream_skip(skip, 'FILE', 2)), 2, worker)


def test_file_sharding_with_default_augmentation_keys_each_worker_apart(pattern28):
    assert augment.is_active('light', False, SHAPE)
    transform = augment.make_augment_fn('light', False, 0, SHAPE)
    for worker in range(2):
        plain = _batches(_worker_stream(pattern28, worker, mode='none'), 4)  # 32: 2.7 epochs
        augmented = _batches(_worker_stream(pattern28, worker), 4)
        # The worker's own examples in the same order, position p keyed p x 2 + worker.
        expected = [transform(p * 2 + worker, image, 0)[0].numpy()
                    for p, image in enumerate(plain)]
        np.testing.assert_array_equal(np.stack(augmented), np.stack(expected))
        assert np.mean([not np.array_equal(a, p) for a, p in zip(augmented, plain)]) > 0.5
        # Deterministic, and a resumed worker (16 global examples in: 8 of its own) goes on.
        np.testing.assert_array_equal(_batches(_worker_stream(pattern28, worker), 4), augmented)
        np.testing.assert_array_equal(_batches(_worker_stream(pattern28, worker, skip=16), 3),
                                      augmented[8:])
    # Disjoint and complete: each worker decodes only its files, together every file.
    per_worker = [{image.tobytes() for image in _batches(_worker_stream(pattern28, w, 'none'), 3)}
                  for w in range(2)]
    assert len(per_worker[0]) == len(per_worker[1]) == 12 and not per_worker[0] & per_worker[1]


def test_data_sharding_with_augmentation_splits_one_machines_batches(pattern28):
    # DATA: every worker runs the whole augmented stream (positions counted before the shard,
    # which tf.distribute puts at the end) and keeps its half of each global batch.
    one = _batches(data.train_dataset(pattern28, 8, SHAPE, seed=0, cache_decoded=True,
                                      augment='light'), 3)
    halves = [_batches(_worker_view(data.train_dataset(
        pattern28, 8, SHAPE, seed=0, cache_decoded=True, augment='light').rebatch(4), 2, w), 3)
        for w in range(2)]
    merged = [image for step in range(3) for w in range(2)
              for image in halves[w][step * 4:(step + 1) * 4]]
    np.testing.assert_array_equal(np.stack(merged), np.stack(one))


def test_file_sharding_refuses_a_worker_without_its_index(pattern28):
    with pytest.raises(ValueError, match='FILE sharding needs a worker index'):
        data.train_dataset(pattern28, 8, SHAPE, seed=0, shard='FILE')
    with pytest.raises(ValueError, match='shard must be DATA or FILE'):
        data.train_dataset(pattern28, 8, SHAPE, seed=0, shard='AUTO')


def test_a_worker_reads_by_the_index_tf_distribute_gives_its_input():
    # distribute.input_pipeline numbers tasks as MultiWorkerMirroredStrategy's InputContext
    # does: the chief first, then the workers (Vertex AI's chief + workers; our TF_CONFIGs have
    # workers only, worker 0 the chief).
    def index(cluster, task_type, task_id):
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)
        return distribute.input_pipeline(SimpleNamespace(cluster_resolver=resolver))
    with_chief = {'chief': ['a:1'], 'worker': ['b:1', 'c:1']}
    assert [index(with_chief, t, i) for t, i in (('chief', 0), ('worker', 0), ('worker', 1))] \
        == [0, 1, 2]
    assert index({'worker': ['a:1', 'b:1']}, 'worker', 1) == 1
    assert distribute.input_pipeline(tf.distribute.get_strategy()) == 0  # one process
