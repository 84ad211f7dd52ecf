"""One trainer measurement in a fresh process (so peak memory is its own), printed as JSON.

    python -m bench.trainer_worker MODE DATA_DIR [--policy P] [--batch B] [--accum K] ...

MODE is `loop` (our StepFunctions), `fit` (Keras model.fit on the same model, strategy, data
and batch), `input` (the tf.data pipeline alone), `matmul` (a float32/bfloat16 matmul peak) or
`policies` (float32 against mixed_bfloat16 on any builder and synthetic images, in turns in one
process: bench/bench_precision.py; DATA_DIR is unused).
"""
import argparse
import json
import os
import resource
import time

import keras
import tensorflow as tf

from training import cost, data, job as job_lib, loop, precision, speed, trial

IMAGE_SHAPE = [8, 8, 1]  # --size changes the model's input; images are resized in-graph


def _job(args) -> job_lib.TrainJob:
    return job_lib.TrainJob(
        train_pattern=os.path.join(args.data, 'Split-train', '*'),
        eval_pattern=os.path.join(args.data, 'Split-eval', '*'),
        class_names=tuple(str(i) for i in range(10)), image_shape=tuple(IMAGE_SHAPE),
        options=loop.LoopOptions.of(train_steps=args.warmup + args.steps,
                                    global_batch_size=args.batch, learning_rate=1e-3,
                                    accumulation_steps=args.accum, seed=0,
                                    model_builder='models.resnet.build_model',
                                    mixed_precision=args.policy))


def _train_data(args):
    return data.train_dataset(os.path.join(args.data, 'Split-train', '*'), args.batch,
                              tuple(IMAGE_SHAPE), seed=0, cache_decoded=args.cache)


def measure_loop(args) -> dict:
    job = _job(args)
    policy = precision.resolve_policy(args.policy)
    keras.mixed_precision.set_global_policy(policy)
    strategy = tf.distribute.MirroredStrategy()
    steps = job_lib.build_steps(job, strategy, policy)
    iterator = iter(strategy.experimental_distribute_dataset(_train_data(args)))
    for _ in range(args.warmup):
        steps.train_step(iterator)
    wait, start = 0.0, time.perf_counter()
    for _ in range(args.steps):
        wait += float(steps.train_step(iterator)[2])
    elapsed = time.perf_counter() - start
    examples = args.steps * args.batch * args.accum
    return {'examples_per_second': examples / elapsed, 'input_wait_fraction': wait / elapsed,
            'train_flops_per_example': 3 * 2 * cost.macs(steps.model)}  # forward + 2x backward


def measure_fit(args) -> dict:
    keras.mixed_precision.set_global_policy(precision.resolve_policy(args.policy))
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = job_lib.import_builder('models.resnet.build_model')(tuple(IMAGE_SHAPE), 10)
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=['accuracy'])
    dataset = _train_data(args)
    model.fit(dataset, steps_per_epoch=args.warmup, epochs=1, verbose=0)
    start = time.perf_counter()
    model.fit(dataset, steps_per_epoch=args.steps, epochs=1, verbose=0)
    return {'examples_per_second': args.steps * args.batch / (time.perf_counter() - start)}


def measure_input(args) -> dict:
    iterator = iter(_train_data(args))
    for _ in range(args.warmup):
        next(iterator)
    start = time.perf_counter()
    for _ in range(args.steps):
        next(iterator)
    return {'examples_per_second': args.steps * args.batch / (time.perf_counter() - start)}


def measure_matmul(args) -> dict:
    size = 2048
    dtype = tf.bfloat16 if args.policy == 'mixed_bfloat16' else tf.float32
    a = tf.random.normal((size, size), dtype=tf.float32)
    a, b = tf.cast(a, dtype), tf.cast(tf.transpose(a), dtype)
    matmul = tf.function(lambda x, y: tf.reduce_sum(tf.cast(tf.matmul(x, y), tf.float32)))
    float(matmul(a, b))
    repeats, start = 10, time.perf_counter()
    for _ in range(repeats):
        float(matmul(a, b))
    return {'flops_per_second': repeats * 2 * size ** 3 / (time.perf_counter() - start)}


def measure_policies(args) -> dict:
    """Training images/s of args.builder under float32 and mixed_bfloat16, timed in turns.

    Both models are built and traced first; then each round times both (order swapped every
    round, so a drift in machine load hits both alike), ~args.seconds each; the best is kept
    (trial.run, the trainer's own `auto` trial).
    """
    shape = (args.size, args.size, args.channels)
    job = job_lib.TrainJob(train_pattern='', eval_pattern='', image_shape=shape,
                           class_names=tuple(str(i) for i in range(10)),
                           options=loop.LoopOptions.of(train_steps=1, global_batch_size=args.batch,
                                                       learning_rate=1e-3,
                                                       model_builder=args.builder))
    dataset = speed.synthetic_batches(shape, 10, args.batch)
    strategy = tf.distribute.MirroredStrategy()
    start = time.perf_counter()   # what deciding `auto` adds: one float32 build and a count
    model_cost = precision.measure_cost(lambda: job_lib.import_builder(args.builder)(shape, 10))
    measure_seconds = time.perf_counter() - start

    def build(candidate):
        keras.mixed_precision.set_global_policy(candidate.policy)
        steps = job_lib.build_steps(job, strategy, candidate.policy)
        keras.mixed_precision.set_global_policy('float32')
        return steps
    # The timing of the trainer's own `auto` trial (training/trial.py): built and traced, then
    # turns in alternating order, the best kept.
    rates = {c.policy: rate for c, rate in trial.run(
        build, dataset, trial.candidates(['float32', 'mixed_bfloat16'], 'off'), args.batch,
        rounds=args.rounds, seconds=args.seconds, warmup=args.warmup).items()}
    return {'macs': model_cost.macs, 'depthwise_macs': model_cost.depthwise_macs,
            'measure_seconds': measure_seconds,
            'float32': rates['float32'], 'mixed_bfloat16': rates['mixed_bfloat16']}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('mode', choices=('loop', 'fit', 'input', 'matmul', 'policies'))
    parser.add_argument('data')
    parser.add_argument('--policy', default='float32')
    parser.add_argument('--batch', type=int, default=64)
    parser.add_argument('--accum', type=int, default=1)
    parser.add_argument('--warmup', type=int, default=30)
    parser.add_argument('--steps', type=int, default=200)
    parser.add_argument('--size', type=int, default=8, help='model input height and width')
    parser.add_argument('--cache', type=int, default=1,
                        help='cache the decoded split in memory, as the trainer does for small '
                             'splits')
    parser.add_argument('--builder', default='models.resnet.build_model', help='policies mode')
    parser.add_argument('--channels', type=int, default=1, help='policies mode')
    parser.add_argument('--rounds', type=int, default=3, help='policies mode: timed turns')
    parser.add_argument('--seconds', type=float, default=3.0,
                        help='policies mode: seconds per timed run')
    args = parser.parse_args()
    IMAGE_SHAPE[:2] = [args.size, args.size]
    measure = {'loop': measure_loop, 'fit': measure_fit, 'input': measure_input,
               'matmul': measure_matmul, 'policies': measure_policies}[args.mode]
    result = measure(args)
    result['peak_rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print('RESULT ' + json.dumps(result))


if __name__ == '__main__':
    main()
