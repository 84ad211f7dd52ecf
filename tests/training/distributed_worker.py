"""Subprocess body for the distributed-equivalence tests: trains a tiny model, saves weights.

Run in a fresh process because logical CPU devices must be configured before TensorFlow
initialises. Under TF_CONFIG it joins a MultiWorkerMirroredStrategy cluster instead.

    python distributed_worker.py --replicas N --batch B --accum K --steps S [--jit] --out W.npz

With --jit-too it then trains the same case again with XLA in the same process (a new model,
optimizer and step functions from the same initial weights), written as W.npz.jit.npz: the
logical devices are what need a process of their own, not each training on them.

With --early-stopping it runs the whole loop (loop.run_training) in epochs of 2 updates with a
BatchNorm model, judging a held-out slice whose labels are noise, and also saves the weights
each epoch was judged on and the loop's result.
"""
import argparse
import json
import os
import sys

import numpy as np


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument('--replicas', type=int, default=1)
    parser.add_argument('--batch', type=int, required=True, help='per-replica micro-batch')
    parser.add_argument('--accum', type=int, default=1)
    parser.add_argument('--steps', type=int, default=10)
    parser.add_argument('--policy', default='float32')
    # SGD, not Adam: Adam divides by the gradient's own scale, so a loss normalised by the wrong
    # batch size would go unnoticed; with SGD it changes the weights.
    parser.add_argument('--optimizer', default='sgd')
    parser.add_argument('--overflow-step', type=int, default=0,
                        help='force a loss-scale overflow on this update (1-based)')
    parser.add_argument('--jit', action='store_true',
                        help='XLA-compile the forward and backward pass (StepFunctions)')
    parser.add_argument('--jit-too', action='store_true',
                        help='then the same case with --jit, to OUT.jit.npz')
    parser.add_argument('--early-stopping', action='store_true')
    parser.add_argument('--budget', type=float, default=0.0, help='time budget, seconds')
    parser.add_argument('--out', required=True)
    return parser.parse_args()


def tiny_model(keras):
    """Conv + dense without BatchNorm: BN uses per-replica batch statistics by design, which
    would make replica counts differ for reasons unrelated to the loop's maths."""
    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(4, 3, activation='relu')(inputs)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(16, activation='relu')(x)
    return keras.Model(inputs, keras.layers.Dense(5, dtype='float32')(x))


def count_reductions(tf):
    """Counts cross-replica reductions created while train_step is traced (once per kind).

    The micro-batch loop body is traced once, so an all-reduce per micro-batch would show up
    as an extra call here: exactly one batched all-reduce per update is the expected count.
    """
    calls = {'all_reduce': 0, 'strategy_reduce': 0}
    replica_context = tf.distribute.ReplicaContext
    original_all_reduce = replica_context.all_reduce
    original_reduce = tf.distribute.Strategy.reduce

    def all_reduce(self, *args, **kwargs):
        calls['all_reduce'] += 1
        return original_all_reduce(self, *args, **kwargs)

    def reduce(self, *args, **kwargs):
        calls['strategy_reduce'] += 1
        return original_reduce(self, *args, **kwargs)
    replica_context.all_reduce = all_reduce
    tf.distribute.Strategy.reduce = reduce

    def restore():
        replica_context.all_reduce = original_all_reduce
        tf.distribute.Strategy.reduce = original_reduce
    return calls, restore


def early_stopping_run(args, tf, keras, strategy, loop, steps_lib):
    """The loop with epochs, patience 2 and the held-out evaluation, under the strategy."""
    global_batch = args.batch * strategy.num_replicas_in_sync
    options = loop.LoopOptions.of(train_steps=40, global_batch_size=global_batch,
                               learning_rate=0.5, optimizer='sgd', steps_per_epoch=2,
                               max_epochs=20, patience=2, time_budget_minutes=args.budget / 60)
    rng = np.random.default_rng(0)
    images, labels = rng.random((256, 8, 8, 1), dtype=np.float32), rng.integers(0, 5, 256)
    held = (rng.random((64, 8, 8, 1), dtype=np.float32), rng.integers(0, 5, 64))
    with strategy.scope():
        keras.utils.set_random_seed(0)
        inputs = keras.Input((8, 8, 1))
        x = keras.layers.BatchNormalization()(keras.layers.Conv2D(4, 3)(inputs))
        x = keras.layers.Dense(5)(keras.layers.Flatten()(keras.layers.ReLU()(x)))
        model = keras.Model(inputs, x)
        steps = steps_lib.StepFunctions(model, loop.make_optimizer(options), strategy,
                                        global_batch)
    held_out = tf.data.Dataset.from_tensor_slices(
        (held[0], held[1].astype(np.int32))).batch(global_batch)
    snapshots = {}

    def held_out_fn():
        snapshots[f's{int(steps.step.numpy())}'] = model.get_weights()
        return steps.evaluate(held_out)

    def train(skip):
        return tf.data.Dataset.from_tensor_slices((images, labels.astype(np.int32))).repeat() \
            .skip(skip).batch(global_batch, drop_remainder=True)

    result = loop.run_training(steps, train, options, held_out_fn=held_out_fn)
    np.savez(args.out, **{f'w{i}': w for i, w in enumerate(model.get_weights())})
    np.savez(args.out + '.epochs.npz', **{f'{key}_{i}': w for key, weights in snapshots.items()
                                          for i, w in enumerate(weights)})
    with open(args.out + '.json', 'w') as handle:
        json.dump({'replicas': strategy.num_replicas_in_sync, **result.to_metrics()}, handle)


def main():
    args = parse()
    import tensorflow as tf
    if args.replicas > 1:
        cpu = tf.config.list_physical_devices('CPU')[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * args.replicas)
    import keras
    sys.path.insert(0, os.getcwd())
    from training import distribute, loop, precision, steps as steps_lib

    if distribute.cluster_spec():
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    else:
        strategy = tf.distribute.MirroredStrategy(
            [f'/cpu:{i}' for i in range(args.replicas)])
    if args.early_stopping:
        return early_stopping_run(args, tf, keras, strategy, loop, steps_lib)
    keras.mixed_precision.set_global_policy(args.policy)
    for jit, out in [(args.jit, args.out)] + ([(True, args.out + '.jit.npz')]
                                              if args.jit_too else []):
        equivalence_run(args, tf, keras, strategy, loop, precision, steps_lib, jit, out)


def equivalence_run(args, tf, keras, strategy, loop, precision, steps_lib, jit, out):
    """args.steps updates of tiny_model from fixed initial weights; its weights and figures
    written to out (out.json, out.init.npz, out.overflow.npz)."""
    replicas = strategy.num_replicas_in_sync
    global_batch = args.batch * replicas
    options = loop.LoopOptions.of(train_steps=args.steps, global_batch_size=global_batch,
                               learning_rate=0.05, accumulation_steps=args.accum,
                               warmup_steps=min(3, args.steps - 1), optimizer=args.optimizer)
    rng = np.random.default_rng(0)
    images = rng.random((512, 8, 8, 1), dtype=np.float32)
    labels = rng.integers(0, 5, 512).astype(np.int32)
    with strategy.scope():
        model = tiny_model(keras)
        optimizer = loop.make_optimizer(options)
        loss_scale = precision.DynamicLossScale(enabled=args.policy == 'mixed_float16')
    # Same initial weights in every process, whatever the replica count or RNG consumption.
    init = np.random.default_rng(1)
    model.set_weights([init.normal(0, 0.3, w.shape).astype(np.float32)
                       for w in model.get_weights()])
    np.savez(out + '.init.npz', *model.get_weights())
    steps = steps_lib.StepFunctions(model, optimizer, strategy, global_batch, args.accum,
                                    loss_scale, jit_compile=jit)
    data = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(
        global_batch, drop_remainder=True)
    iterator = iter(strategy.experimental_distribute_dataset(data))
    calls, restore = count_reductions(tf)
    before_overflow = None
    for step in range(1, args.steps + 1):
        if step == args.overflow_step:
            before_overflow = [w.copy() for w in model.get_weights()]
            loss_scale.scale.assign(3e38)  # any float16 gradient now overflows to inf
        steps.train_step(iterator)
        if step == args.overflow_step:
            after = model.get_weights()
            np.savez(out + '.overflow.npz', *before_overflow, *after)
    result = {f'w{i}': w for i, w in enumerate(model.get_weights())}
    np.savez(out, **result)
    with open(out + '.json', 'w') as handle:
        json.dump({'replicas': replicas, 'iterations': int(optimizer.iterations.numpy()),
                   'skipped': int(steps.skipped_updates.numpy()),
                   'loss_scale': float(loss_scale.scale.numpy()),
                   'learning_rate': float(optimizer.learning_rate),
                   'reductions_traced': calls}, handle)
    restore()  # a next run counts its own tracing


if __name__ == '__main__':
    main()
