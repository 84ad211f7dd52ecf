"""Model-size benchmark: cost and accuracy of default-model variants on Fashion-MNIST numpy arrays.

    nice python -m bench.bench_model_size --npz fashion.npz [--epochs 5] [--candidates ...]
    python -m bench.bench_model_size            # the size table only

Prints, per input size, the parameters and multiply-adds (convolutions and dense layers,
counted analytically by training/cost.py) of the default models.resnet.build_model.
With --npz (uint8 x_train Nx28x28, y_train, x_test, y_test), it then compares candidates, each
a set of build_model keyword arguments, on one table: training images/s on this CPU (short fits
taken in turns over the repeats, best kept, so machine noise hits every candidate alike),
parameters, multiply-adds per image, and accuracy after --epochs of keras fit (batch 64, Adam
3e-3 with cosine decay, the pipeline's `light` augmentation from training/augment.py)
on --train-size images, on a held-out 10% of x_train and on x_test. Nothing here is asserted.
"""
import argparse
import json
import os
import time

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from training.augment import make_augment_fn  # noqa: E402
from training.cost import macs  # noqa: E402
from models import resnet  # noqa: E402

SIZES = ((8, 8, 1), (28, 28, 1), (32, 32, 3), (64, 48, 3), (96, 96, 3), (224, 224, 3))
CANDIDATES = {'default': {}, 'deeper': {'blocks_per_stage': 2}, 'wider': {'base_width': 48}}
BATCH = 64


def _stream(x, y, seed: int, augment: bool):
    images = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=seed).repeat()
    aug = make_augment_fn('light' if augment else 'none', False, seed, x.shape[1:])
    images = images.enumerate().map(
        lambda i, xy: aug(i, tf.cast(xy[0], tf.float32) / 255.0, xy[1]),
        num_parallel_calls=tf.data.AUTOTUNE)
    return images.batch(BATCH, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def _compile(model, total_steps: int):
    schedule = keras.optimizers.schedules.CosineDecay(3e-3, max(total_steps, 1))
    model.compile(keras.optimizers.Adam(schedule), metrics=['accuracy'],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))


def _data(npz: str, train_size: int, seed: int):
    data = np.load(npz)
    x, y = data['x_train'][..., None], data['y_train'].astype('int32')
    order = np.random.default_rng(seed).permutation(len(x))
    held = order[:len(x) // 10]
    train = order[len(x) // 10:][:train_size]
    return (x[train], y[train]), (x[held], y[held]), (data['x_test'][..., None],
                                                       data['y_test'].astype('int32'))


def throughput(builders, train, steps: int, repeats: int) -> dict:
    """Best training images/s per candidate over short fits taken in turns."""
    models = {name: build() for name, build in builders.items()}
    stream = _stream(*train, seed=0, augment=True)
    for model in models.values():
        _compile(model, steps)
        model.fit(stream, steps_per_epoch=10, epochs=1, verbose=0)   # trace and warm up
    best = {name: 0.0 for name in models}
    for _ in range(repeats):
        for name, model in models.items():
            start = time.perf_counter()
            model.fit(stream, steps_per_epoch=steps, epochs=1, verbose=0)
            best[name] = max(best[name], steps * BATCH / (time.perf_counter() - start))
    return best


def accuracy(build, train, held, test, epochs: int, seed: int) -> dict:
    keras.utils.set_random_seed(seed)
    model = build()
    steps = len(train[0]) // BATCH
    _compile(model, steps * epochs)
    start = time.perf_counter()
    # The held-out slice is only reported (per epoch, to show where accuracy levels off).
    model.fit(_stream(*train, seed=seed, augment=True), steps_per_epoch=steps, epochs=epochs,
              validation_data=(held[0].astype('float32') / 255.0, held[1]), verbose=2)
    seconds = time.perf_counter() - start

    def score(x, y):
        return float(model.evaluate(x.astype('float32') / 255.0, y, batch_size=256,
                                    verbose=0)[1])
    return {'held_out': score(*held), 'test': score(*test), 'fit_s': seconds}


def print_sizes():
    print(f'{"input":<12} {"stages (width@side)":<34} {"params":>9} {"MMACs":>8}')
    for shape in SIZES:
        model = resnet.build_model(shape, 10)
        convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Add)]
        stages = ' '.join(f'{c.output.shape[-1]}@{c.output.shape[1]}x{c.output.shape[2]}'
                          for c in convs)
        print(f'{"x".join(map(str, shape)):<12} {stages:<34} {model.count_params():>9,} '
              f'{macs(model) / 1e6:>8.1f}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--npz', help='Fashion-MNIST-like arrays; without it, sizes only')
    parser.add_argument('--candidates', nargs='+', default=list(CANDIDATES),
                        help=f'names from {list(CANDIDATES)} or JSON build_model kwargs')
    parser.add_argument('--epochs', type=int, default=5, help='0 = throughput only')
    parser.add_argument('--train-size', type=int, default=43000)
    parser.add_argument('--steps', type=int, default=150, help='steps per throughput fit')
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args()
    print_sizes()
    if not args.npz:
        return
    train, held, test = _data(args.npz, args.train_size, args.seed)
    shape = train[0].shape[1:]
    kwargs = {c: CANDIDATES[c] if c in CANDIDATES else json.loads(c) for c in args.candidates}
    builders = {c: (lambda kw=kw: resnet.build_model(shape, 10, **kw)) for c, kw in kwargs.items()}
    speed = throughput(builders, train, args.steps, args.repeats)
    base = args.candidates[0]
    print(f'\n{"candidate":<28} {"params":>9} {"MMACs":>7} {"img/s":>7} {"speed/" + base:>14} '
          f'{"held-out":>9} {"test":>7} {"fit s":>7}')
    for name, build in builders.items():
        model = build()
        result = accuracy(build, train, held, test, args.epochs, args.seed) if args.epochs else {}
        print(f'{name:<28} {model.count_params():>9,} {macs(model) / 1e6:>7.1f} '
              f'{speed[name]:>7.0f} {speed[name] / speed[base]:>14.2f} '
              f'{result.get("held_out", float("nan")):>9.4f} '
              f'{result.get("test", float("nan")):>7.4f} {result.get("fit_s", 0):>7.0f}',
              flush=True)


if __name__ == '__main__':
    main()
