"""Console logging for pipeline runs: timestamps, and TFX's bulky debug dumps kept out.

TFX's launcher logs every ExecutionInfo and node proto at INFO level (thousands of lines per run)
which buries the progress lines people look for: "Component X is running", ingestion counts,
training steps with ETA, the blessing. Those dumps are dropped unless verbose is asked for.
"""
import logging
import os

_MAX_LINES = 12  # longer INFO messages are proto dumps, not progress


class _DropDumps(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        return record.getMessage().count('\n') < _MAX_LINES


def configure(verbose: bool = False) -> None:
    """Call once, before TensorFlow is imported, from the entry point."""
    # TensorFlow's C++ start-up chatter (CUDA plugin registration on a CPU machine) is noise here.
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1' if verbose else '2')
    logging.basicConfig(level=logging.INFO, force=True,
                        format='%(asctime)s %(levelname).1s %(message)s', datefmt='%H:%M:%S')
    if not verbose:
        for handler in logging.getLogger().handlers:
            handler.addFilter(_DropDumps())
        # The report reads the training events; TensorBoard's reader logs each file it finishes.
        logging.getLogger('tensorboard').setLevel(logging.WARNING)
    from absl import logging as absl_logging  # after basicConfig, so absl uses our handler
    absl_logging.set_verbosity(absl_logging.INFO)
