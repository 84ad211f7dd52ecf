"""Subprocess body for the resume tests: one deterministic training job, slowed down a little.

    python resume_worker.py DATA_DIR OUT_DIR CHECKPOINT_DIR [--unhurried]

Op determinism is on, so two runs from the same checkpoint produce the same weights. Each batch
is delayed by a few milliseconds so the test can SIGKILL the process between checkpoints; the
runs nobody kills (--unhurried: the uninterrupted one and the one that resumes) take the same
batches undelayed.
"""
import os
import sys
import time

import tensorflow as tf


def main():
    data_dir, out_dir, checkpoint_dir = sys.argv[1:4]
    tf.config.experimental.enable_op_determinism()
    from absl import logging
    logging.set_verbosity(logging.INFO)  # the test reads the progress and resume lines
    sys.path.insert(0, os.getcwd())
    from training import data, job as job_lib, loop

    original = data.train_dataset

    def slowed(*args, **kwargs):
        def pause(batch):
            time.sleep(0.05)  # slow enough that a loaded machine still kills mid-run
            return batch
        dataset = original(*args, **kwargs)
        shape = dataset.element_spec[0].shape
        return dataset.map(lambda images, labels: (
            tf.ensure_shape(tf.py_function(pause, [images], tf.float32), shape), labels))
    if '--unhurried' not in sys.argv:
        data.train_dataset = slowed

    job = job_lib.TrainJob(
        train_pattern=os.path.join(data_dir, 'train', '*'),
        eval_pattern=os.path.join(data_dir, 'eval', '*'),
        class_names=('0', '1', '2'), image_shape=(8, 8, 1),
        options=loop.LoopOptions.of(train_steps=150, global_batch_size=16, learning_rate=3e-3,
                                    warmup_steps=10, checkpoint_interval=20, log_every=10,
                                    model_builder='models.resnet.build_model',
                                    mixed_precision='float32', seed=3))
    job_lib.train_and_export(job, os.path.join(out_dir, 'model'), os.path.join(out_dir, 'logs'),
                             checkpoint_dir=checkpoint_dir)


if __name__ == '__main__':
    main()
