"""Executor tests of the training window: ImageExampleGen's Do over span folders, run after run
with one pipeline root, as open-source KFP runs it (the entry point's driver work, no cache):
what is converted, what is referenced, what is linked, and what is ingested again when its data
is gone."""
import json
import os
import shutil

import pytest
from tfx.dsl.components.base import base_beam_executor
from tfx.proto import example_gen_pb2
from tfx.types import standard_artifacts
from tfx.utils import proto_utils

from core import window
from components.ingest import component, executor

from helpers import IN_PROCESS_BEAM, copy_digits
from ingest_helpers import ingest_do


@pytest.fixture
def converted(monkeypatch):
    """The folders each Do converted (ran the Beam graph into), in order."""
    folders = []
    convert = executor.Executor._convert

    def counting(self, root, input_base, exec_properties, output_dir, pipeline_root):
        folders.append((os.path.basename(root), os.path.relpath(output_dir, pipeline_root)))
        return convert(self, root, input_base, exec_properties, output_dir, pipeline_root)

    monkeypatch.setattr(executor.Executor, '_convert', counting)
    return folders


def _do(data, root, run, window_size=2, **extra):
    """One uncached run (a fresh output URI per run, like KFP's per-run folders)."""
    examples = standard_artifacts.Examples()
    examples.uri = os.path.join(root, run, 'ImageExampleGen', 'examples')
    input_config = example_gen_pb2.Input(splits=[
        example_gen_pb2.Input.Split(name='images', pattern='span-{SPAN}/*/*')])
    properties = {'input_base': data, 'input_config': proto_utils.proto_to_json(input_config),
                  'train_percent': 60, 'num_shards': 1, 'max_rejected_fraction': 0.01,
                  'pipeline_root': root, 'window': window_size, **extra}
    context = base_beam_executor.BaseBeamExecutor.Context(
        beam_pipeline_args=IN_PROCESS_BEAM)
    executor.Executor(context).Do({}, {'examples': [examples]},
                                  component.resolve_input(properties))
    return examples


def _spans(tmp_path, *spans):
    data = tmp_path / 'data'
    for span, per_class in spans:
        copy_digits(str(data / f'span-{span}'), classes=('0', '1'), per_class=per_class)
    return str(data)


def test_first_run_ingests_the_window_then_only_the_new_span(tmp_path, converted):
    data, root = _spans(tmp_path, (1, 2), (2, 3), (3, 4)), str(tmp_path / 'root')
    first = _do(data, root, 'run-1')
    entries = window.read(first)
    assert [e.span for e in entries] == [2, 3]
    assert entries[1].uri == first.uri and entries[0].uri == os.path.join(first.uri, 'Span-2')
    assert converted == [('span-3', 'run-1/ImageExampleGen/examples'),
                         ('span-2', 'run-1/ImageExampleGen/examples/Span-2')]
    # Each entry's folder holds exactly its span: the artifact's own splits are span 3's.
    assert entries[0].num_train + entries[0].num_eval == 6
    assert entries[1].num_train + entries[1].num_eval == 8
    assert first.get_int_custom_property('num_found') == 8
    assert entries[1].fingerprint == first.get_string_custom_property('input_fingerprint')
    assert entries[0].image_sizes == {'8x8': entries[0].num_train}
    assert len(os.listdir(os.path.join(root, '_spans', 'ImageExampleGen'))) == 2

    copy_digits(os.path.join(data, 'span-4'), classes=('0', '1'), per_class=5)
    converted.clear()
    second = _do(data, root, 'run-2')
    entries = window.read(second)
    assert converted == [('span-4', 'run-2/ImageExampleGen/examples')]  # span 4 only
    assert [e.span for e in entries] == [3, 4]
    assert entries[0].uri == first.uri  # span 3: referenced where run 1 ingested it
    assert entries[1].uri == second.uri and not os.path.exists(
        os.path.join(second.uri, 'Span-3'))
    assert window.describe(entries) == (
        f'spans 3-4, {entries[0].num_train + entries[1].num_train} train / '
        f'{entries[0].num_eval + entries[1].num_eval} eval examples')


def test_an_unchanged_newest_span_is_linked_not_converted(tmp_path, converted):
    data, root = _spans(tmp_path, (1, 2), (2, 3)), str(tmp_path / 'root')
    first = _do(data, root, 'run-1')
    converted.clear()
    again = _do(data, root, 'run-2')
    assert converted == []  # nothing new: no Beam run at all
    shard = os.path.join('Split-train', sorted(os.listdir(os.path.join(first.uri,
                                                                       'Split-train')))[0])
    # The same file (a hard link): no second copy of the data on disk.
    assert os.stat(os.path.join(again.uri, shard)).st_ino == \
        os.stat(os.path.join(first.uri, shard)).st_ino
    assert [e.uri for e in window.read(again)] == [os.path.join(first.uri, 'Span-1'), again.uri]
    for name in ('num_found', 'num_written_train', 'num_written_eval'):
        assert again.get_int_custom_property(name) == first.get_int_custom_property(name)
    assert again.get_string_custom_property('class_names') == \
        first.get_string_custom_property('class_names')
    assert again.get_string_custom_property('quarantine_uri').startswith(again.uri)


def test_a_span_whose_data_is_gone_is_ingested_again(tmp_path, converted):
    data, root = _spans(tmp_path, (1, 2), (2, 3)), str(tmp_path / 'root')
    first = _do(data, root, 'run-1')
    shutil.rmtree(os.path.join(first.uri, 'Span-1'))  # e.g. deleted by hand
    converted.clear()
    again = _do(data, root, 'run-2')
    # Span 2 is still there (linked); span 1 is converted again, into this run's artifact.
    assert converted == [('span-1', 'run-2/ImageExampleGen/examples/Span-1')]
    assert window.read(again)[0].uri == os.path.join(again.uri, 'Span-1')
    shutil.rmtree(first.uri)
    converted.clear()
    third = _do(data, root, 'run-3')
    assert converted == []  # the index now points at run 2's copies, which exist
    assert [e.uri for e in window.read(third)] == [os.path.join(again.uri, 'Span-1'), third.uri]


def test_a_changed_span_or_parameter_is_ingested_again(tmp_path, converted):
    data, root = _spans(tmp_path, (1, 2), (2, 3)), str(tmp_path / 'root')
    _do(data, root, 'run-1')
    shutil.copy(os.path.join(data, 'span-2', '0', sorted(os.listdir(
        os.path.join(data, 'span-2', '0')))[0]), os.path.join(data, 'span-1', '0', 'late.png'))
    converted.clear()
    _do(data, root, 'run-2')
    assert converted == [('span-1', 'run-2/ImageExampleGen/examples/Span-1')]
    converted.clear()
    _do(data, root, 'run-3', train_percent=50)  # another split: other records
    assert [c[0] for c in converted] == ['span-2', 'span-1']


def test_a_window_of_one_and_no_spans_are_one_entry_windows(tmp_path, converted):
    data, root = _spans(tmp_path, (1, 2), (2, 3)), str(tmp_path / 'root')
    only = _do(data, root, 'run-1', window_size=1)
    assert [(e.span, e.uri) for e in window.read(only)] == [(2, only.uri)]
    flat = copy_digits(str(tmp_path / 'flat'), classes=('0', '1'), per_class=2)
    examples = ingest_do(flat, str(tmp_path / 'flat_out'), num_shards=1, window=3)
    assert [(e.span, e.uri) for e in window.read(examples)] == [(0, examples.uri)]


def test_an_older_span_with_other_classes_is_left_out_and_said_so(tmp_path, converted):
    data = tmp_path / 'data'
    copy_digits(str(data / 'span-1'), classes=('0', '1', '2'), per_class=2)
    copy_digits(str(data / 'span-2'), classes=('0', '1'), per_class=3)
    examples = _do(str(data), str(tmp_path / 'root'), 'run-1')
    assert [e.span for e in window.read(examples)] == [2]
    assert examples.get_string_custom_property('window_note') == (
        "span 1 left out: its classes ['0', '1', '2'] are not those of span 2 ['0', '1']")
    assert json.loads(examples.get_string_custom_property('ingest_parameters'))[
        'train_percent'] == 60
