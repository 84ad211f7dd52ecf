"""The trainer's named choices, in a module light enough for the pipeline config to import.

The config validates these names without importing TensorFlow (runner.py answers --help and
flag errors at once); the loop and the precision module use the same tuples.
"""
OPTIMIZERS = ('adam', 'adamw', 'sgd')
POLICIES = ('auto', 'float32', 'mixed_float16', 'mixed_bfloat16')
AUGMENTS = ('none', 'light', 'standard')
