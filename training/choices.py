"""The trainer's named choices, in a module light enough for the pipeline config to import.

The config validates these names without importing TensorFlow (runner.py answers --help and
flag errors at once); the loop and the precision module use the same tuples, and the --help
text of --mixed-precision states the same bf16 line the precision module decides by.
"""
OPTIMIZERS = ('adam', 'adamw', 'sgd')
POLICIES = ('auto', 'float32', 'mixed_float16', 'mixed_bfloat16')
AUGMENTS = ('none', 'light', 'standard')
# XLA for the train step's forward and backward pass: auto = by the timed trial (trial.py).
XLA_CHOICES = ('auto', 'on', 'off')
# Random horizontal flips of train images: auto = when the held-out slice says mirroring keeps
# the labels (flip_choice.py).
FLIP_CHOICES = ('auto', 'on', 'off')

# mixed_bfloat16 pays on a bf16 CPU from this many forward multiply-adds per example up.
# bench/bench_precision.py on a 2-core AMD EPYC with AVX512_BF16, two runs (docs/benchmarks.md,
# "Precision"): models of dense convolutions ran 0.94x-1.27x float32 between 2.1M and 38M, 0.97x-
# 1.07x at 63M and 79M (the default model at 224 px, ResNet-50 at 32 px), and won in every run
# from 200M up (1.15x-1.37x; ResNet-50 at 128 px 1.27x and 1.37x). The line sits between the last
# loss and the first sure win (their geometric mean): ResNet-50 qualifies from about 40 px, the
# default model from about 310 px (133M at 320 px). Without bf16 instructions bfloat16 never paid
# (0.07x-0.54x over the same ladder on an AVX2 EPYC), so there `auto` is float32 whatever the
# size.
BF16_MIN_MACS = 125_000_000
