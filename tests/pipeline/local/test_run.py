"""Unit tests of how the local runner words a failed stage's error for the summary."""
from components.gate.executor import DataAnomaliesError
from components.ingest.formats.rules import IngestionError
from pipeline.local import run as local_run


def test_a_data_error_is_its_message_and_anything_else_names_its_type():
    assert local_run.first_lines(IngestionError('Input is empty: no records found under /d.')) == [
        'Input is empty: no records found under /d.']
    assert local_run.first_lines(DataAnomaliesError('train: 1 anomaly\n  image: bad')) == [
        'train: 1 anomaly', '  image: bad']
    assert local_run.first_lines(KeyError('label')) == ["KeyError: 'label'"]
    assert local_run.first_lines(RuntimeError()) == ['RuntimeError']


def test_a_long_error_keeps_its_first_lines_and_says_where_the_rest_is():
    error = IngestionError('\n'.join(f'line {n}' for n in range(20)))
    lines = local_run.first_lines(error)
    assert lines[:8] == [f'line {n}' for n in range(8)]
    assert lines[8:] == ['... (12 more lines in the log)']
