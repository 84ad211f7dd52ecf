"""How the Beam stages run when the user gives no --beam-args: in-process for small inputs.

ExampleGen, StatisticsGen and the Evaluator run Beam. DirectRunner's multi-processing mode starts
worker processes in every one of those stages, and each worker imports TensorFlow (and TFMA's
workers load the model) before it reads a record: seconds of fixed cost per stage, which dwarf the
work on a small input. In-process (`in_memory`, one worker) has no such cost but uses one core.
bench/bench_beam_mode.py measures both, by input size, on this 2-core machine (figures in
docs/scaling.md, "Beam mode"); INPUT_BYTES_THRESHOLD is where multi-processing starts to pay.

The input's size is the bytes of its files: what ingestion decodes and what the statistics and
the evaluation then scale with. It is read from the folder before the run (one stat per file).
An S3 bucket folder is listed (core/storage.py sizes: one request per 1,000
objects). An input that cannot be listed here (gs://, a path that only exists in a container) keeps
multi-processing, the mode that does not degrade with size. Given --beam-args always win; the
project's setup file is added to them only when they name no dependency flag (resolve).
"""
import os
from typing import Optional, Tuple

from core import storage

IN_PROCESS = ('--direct_running_mode=in_memory', '--direct_num_workers=1')
MULTI_PROCESSING = ('--direct_running_mode=multi_processing', '--direct_num_workers=0')
# bench/bench_beam_mode.py on 2 cores (28x28 PNG class folders, docs/benchmarks.md, "Beam
# mode"): in-process was 1.86x faster at 96 MB and 1.22x at 192 MB; by the two modes' growth,
# multi-processing catches up at about 250-300 MB.
INPUT_BYTES_THRESHOLD = 256 * 2 ** 20
_DEPENDENCY_OPTIONS = ('extra_packages', 'setup_file', 'requirements_file',
                       'worker_harness_container_image', 'sdk_container_image')


def input_size(data_dir: str) -> Optional[Tuple[int, int]]:
    """(files, bytes) under data_dir, hidden files aside; None when it is neither a local
    folder nor a bucket folder that can be listed here."""
    if storage.is_object_store(data_dir):
        return storage.sizes(data_dir)
    if not os.path.isdir(data_dir):
        return None
    files = size = 0
    for root, dirs, names in os.walk(data_dir):
        dirs[:] = [d for d in dirs if not d.startswith('.')]
        for name in names:
            if not name.startswith('.'):
                try:
                    size += os.stat(os.path.join(root, name)).st_size
                except OSError:  # vanished or unreadable: ingestion reports it
                    continue
                files += 1
    return files, size


def _megabytes(size: int) -> str:
    return f'{size / 2 ** 20:,.1f} MB'


def choose(data_dir: str, cores: Optional[int] = None,
           threshold: int = INPUT_BYTES_THRESHOLD) -> Tuple[Tuple[str, ...], str]:
    """(Beam args, the reason in words) for an input folder when no --beam-args are given."""
    cores = cores or os.cpu_count() or 1
    measured = input_size(data_dir)
    if measured is None:
        return MULTI_PROCESSING, ('multi-processing (DirectRunner, one worker per core): the '
                                  'input is not a local folder, so its size is unknown here')
    files, size = measured
    what = f'{files:,} files, {_megabytes(size)}'
    if cores == 1:
        return IN_PROCESS, f'in-process (DirectRunner in_memory): one core, {what}'
    if size < threshold:
        return IN_PROCESS, (f'in-process (DirectRunner in_memory): {what} < '
                            f'{_megabytes(threshold)}, where worker start-up costs more than '
                            'it saves')
    return MULTI_PROCESSING, (f'multi-processing (DirectRunner, {cores} workers): {what} >= '
                              f'{_megabytes(threshold)}')


def carries_dependencies(beam_args: Tuple[str, ...]) -> bool:
    """Whether the args name how Beam's workers get their code: the flags TFX looks for before it
    packages itself (tfx/utils/dependency_utils.py make_beam_dependency_flags), read as it reads
    them (Beam's PipelineOptions, so `--extra_package` and two-token forms count too)."""
    from apache_beam.options.pipeline_options import PipelineOptions
    options = PipelineOptions(flags=list(beam_args)).get_all_options()
    return any(options.get(name) for name in _DEPENDENCY_OPTIONS)


def resolve(beam_args: Tuple[str, ...], data_dir: str,
            extra: Tuple[str, ...] = ()) -> Tuple[Tuple[str, ...], str]:
    """The Beam args a run uses and why: choose()'s plus `extra` (the project's setup file), or
    the given ones, plus `extra` only when they name no dependency of their own. Without any,
    TFX copies its whole install (about 50 MB) to a temporary folder and builds a package of it
    in every Beam stage, and never deletes that folder; and a remote runner's workers need this
    project's code (the ingestion and scoring DoFns) in any case."""
    if beam_args:
        added = () if carries_dependencies(beam_args) else tuple(extra)
        reason = 'as given: ' + ' '.join(beam_args)
        return tuple(beam_args) + added, reason + (f' (+ {" ".join(added)})' if added else '')
    chosen, reason = choose(data_dir)
    return chosen + tuple(extra), reason
