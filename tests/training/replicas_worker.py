"""The augmented train stream on 2 logical CPU devices (test_augment.py): the first 5 global
batches, each the replicas' parts concatenated, saved as one array.

    python replicas_worker.py PATTERN SKIP_EXAMPLES OUT.npy

Logical devices must be set before TensorFlow's runtime starts: a process of its own.
"""
import sys

import numpy as np
import tensorflow as tf


def main(pattern: str, skip: int, out: str) -> None:
    cpu = tf.config.list_physical_devices('CPU')[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from training import data
    strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
    dataset = data.train_dataset(pattern, 4, (24, 24, 3), seed=3, augment='standard',
                                 flip=True, skip_examples=skip)
    batches = []
    for images, _ in iter(strategy.experimental_distribute_dataset(dataset)):
        batches.append(np.concatenate(
            [t.numpy() for t in strategy.experimental_local_results(images)]))
        if len(batches) == 5:
            break
    np.save(out, np.stack(batches))


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
