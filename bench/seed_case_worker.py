"""One ResNet-50 training measurement in a fresh process, printed as JSON (bench_seed_case.py).

    python -m bench.seed_case_worker --replicas N --policy P --size S --batch B [--accum K]

A fresh process per measurement because logical CPU devices can only be configured before
TensorFlow initialises its devices, and so that each peak memory figure is this run's own.
The model, optimizer and step functions are the pipeline's: `job.build_steps` with the
`models.applications.resnet50` builder (`--model resnet50`: Keras' ResNet50, weights=None),
on synthetic random images that are already in memory, so only training is timed.
--batch is per replica and per update; with --accum K each update is K micro-batches of B/K.
"""
import argparse
import json
import resource
import time


def _current_rss_mb() -> float:
    with open('/proc/self/status') as handle:
        for line in handle:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _devices(tf, replicas: int) -> list:
    """The first `replicas` GPUs, else that many logical CPU devices (before TF initialises)."""
    gpus = tf.config.list_physical_devices('GPU')
    if gpus:
        if replicas > len(gpus):
            raise ValueError(f'{replicas} replicas asked, {len(gpus)} GPUs present')
        return [f'/gpu:{i}' for i in range(replicas)]
    if replicas > 1:
        cpu = tf.config.list_physical_devices('CPU')[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
    return [f'/cpu:{i}' for i in range(replicas)]


def measure(args) -> dict:
    import keras
    import tensorflow as tf

    devices = _devices(tf, args.replicas)
    from training import distribute, job as job_lib, loop, precision

    strategy = distribute.make_strategy(devices)
    policy = precision.resolve_policy(args.policy)
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    micro = args.batch // args.accum * args.replicas   # one micro-batch over all replicas
    job = job_lib.TrainJob(
        train_pattern='', eval_pattern='', class_names=tuple(map(str, range(args.classes))),
        image_shape=(args.size, args.size, 3),
        options=loop.LoopOptions.of(train_steps=args.warmup + args.steps, global_batch_size=micro,
                                    learning_rate=0.1, accumulation_steps=args.accum,
                                    optimizer='sgd', mixed_precision=policy,
                                    model_builder='models.applications.resnet50'))
    steps = job_lib.build_steps(job, strategy, policy)
    # One random batch, repeated: the input costs nothing, so the table measures training.
    images = tf.random.uniform((micro, args.size, args.size, 3))
    labels = tf.random.uniform((micro,), maxval=args.classes, dtype=tf.int32)
    dataset = tf.data.Dataset.from_tensors((images, labels)).repeat()
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    rss_before = _current_rss_mb()
    start = time.perf_counter()
    for _ in range(args.warmup):   # tracing, graph optimisation, allocator growth: not timed
        float(steps.train_step(iterator)[0])
    warmup_seconds = time.perf_counter() - start
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    for _ in range(args.steps):
        float(steps.train_step(iterator)[0])   # the float waits for the update to finish
    elapsed, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    result = {'images_per_second': args.steps * micro * args.accum / elapsed,
              'seconds_per_update': elapsed / args.steps, 'warmup_seconds': warmup_seconds,
              # On a shared machine wall time stretches with the load; CPU time much less.
              'images_per_cpu_second': args.steps * micro * args.accum / cpu,
              'policy': policy, 'replicas': strategy.num_replicas_in_sync,
              'device': devices[0].split(':')[0].strip('/'),
              'rss_before_training_mb': rss_before,
              'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if result['device'] == 'gpu':   # the allocator's peak, highest over the replicas' GPUs
        result['gpu_peak_mb'] = max(
            tf.config.experimental.get_memory_info(f'GPU:{i}')['peak']
            for i in range(args.replicas)) / 2 ** 20
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--replicas', type=int, default=1)
    parser.add_argument('--policy', default='float32')
    parser.add_argument('--size', type=int, default=224, help='image height and width')
    parser.add_argument('--batch', type=int, default=64, help='images per replica per update')
    parser.add_argument('--accum', type=int, default=1)
    parser.add_argument('--classes', type=int, default=1000)
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--steps', type=int, default=10)
    args = parser.parse_args()
    if args.batch % args.accum:
        raise ValueError(f'--batch {args.batch} does not split into {args.accum} micro-batches')
    print('RESULT ' + json.dumps(measure(args)))


if __name__ == '__main__':
    main()
