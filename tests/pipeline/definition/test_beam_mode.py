"""Unit tests: the Beam mode chosen from the input's size, its reason, and given args winning."""
import os

from pipeline.definition import beam_mode
from pipeline.definition.config import DEFAULT_DATA


def _write(folder, name, size):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), 'wb') as handle:
        handle.write(b'x' * size)


def test_input_size_counts_files_and_bytes_but_not_hidden_ones(tmp_path):
    _write(tmp_path / 'cats', 'a.png', 1000)
    _write(tmp_path / 'dogs', 'b.jpg', 24)
    _write(tmp_path / 'dogs', '.DS_Store', 5000)
    _write(tmp_path / '.git', 'objects', 9000)
    assert beam_mode.input_size(str(tmp_path)) == (2, 1024)
    assert beam_mode.input_size(str(tmp_path / 'missing')) is None
    assert beam_mode.input_size('gs://bucket/data') is None


def test_small_input_runs_in_process_and_says_why(tmp_path):
    _write(tmp_path / 'a', 'x.png', 999)
    args, reason = beam_mode.choose(str(tmp_path), cores=2, threshold=1000)
    assert args == beam_mode.IN_PROCESS
    assert reason.startswith('in-process') and '1 files, 0.0 MB < 0.0 MB' in reason


def test_input_at_the_threshold_runs_one_worker_per_core(tmp_path):
    _write(tmp_path / 'a', 'x.png', 600)
    _write(tmp_path / 'b', 'y.png', 400)
    args, reason = beam_mode.choose(str(tmp_path), cores=2, threshold=1000)
    assert args == beam_mode.MULTI_PROCESSING
    assert reason.startswith('multi-processing (DirectRunner, 2 workers): 2 files')


def test_one_core_never_starts_workers(tmp_path):
    _write(tmp_path / 'a', 'x.png', 5000)
    args, reason = beam_mode.choose(str(tmp_path), cores=1, threshold=1000)
    assert args == beam_mode.IN_PROCESS and 'one core' in reason


def test_unknown_size_keeps_multi_processing():
    args, reason = beam_mode.choose('gs://bucket/data', cores=8)
    assert args == beam_mode.MULTI_PROCESSING and 'not a local folder' in reason


def test_given_args_win_and_chosen_ones_get_the_extras(tmp_path):
    _write(tmp_path / 'a', 'x.png', 10)
    given = ('--runner=PortableRunner', '--job_endpoint=embed')
    # Naming no dependency of their own, given args get the extras too (TFX would package
    # itself into a temporary folder per Beam stage otherwise), and the reason says so.
    assert beam_mode.resolve(given, str(tmp_path), ('--setup_file=s.py',)) == (
        given + ('--setup_file=s.py',),
        'as given: --runner=PortableRunner --job_endpoint=embed (+ --setup_file=s.py)')
    for own in (('--setup_file', 'mine.py'), ('--extra_package=dep.tar.gz',),
                ('--requirements_file=r.txt',), ('--sdk_container_image=img',)):
        assert beam_mode.carries_dependencies(given + own)
        assert beam_mode.resolve(given + own, str(tmp_path), ('--setup_file=s.py',)) == (
            given + own, 'as given: ' + ' '.join(given + own))
    args, _ = beam_mode.resolve((), str(tmp_path), ('--setup_file=s.py',))
    assert args == beam_mode.IN_PROCESS + ('--setup_file=s.py',)


def test_the_embedded_digits_run_in_process():
    files, size = beam_mode.input_size(DEFAULT_DATA)
    assert files > 1000 and size < beam_mode.INPUT_BYTES_THRESHOLD
    assert beam_mode.choose(DEFAULT_DATA, cores=2)[0] == beam_mode.IN_PROCESS
