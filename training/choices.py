# TEMPORARY local shim until layers' move is merged; not committed.
from components.trainer.choices import *  # noqa
BF16_MIN_MACS = 125_000_000
