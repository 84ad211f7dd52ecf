"""The training window recorded on Examples (core/window.py): reading it, the
patterns and fingerprint the trainer uses, the summary's words, and training_data.json."""
import os

from tfx.types import standard_artifacts

from core import window


def _entry(span, train=10, evaluation=2, fingerprint='f', uri=None):
    return window.SpanEntry(span=span, uri=uri or f'/root/{span}', fingerprint=fingerprint,
                            num_train=train, num_eval=evaluation)


def test_an_artifact_without_a_window_is_a_window_of_itself():
    examples = standard_artifacts.Examples()
    examples.uri = '/root/ImageExampleGen/examples/7'
    examples.set_int_custom_property('span', 4)
    examples.set_string_custom_property('input_fingerprint', 'split:images,num_files:3')
    examples.set_int_custom_property('num_written_train', 0)  # a JSON 0 under Kubeflow
    examples.set_int_custom_property('num_written_eval', 3)
    examples.set_string_custom_property('image_sizes', '{"8x8": 0}')
    assert window.read(examples) == [window.SpanEntry(
        span=4, uri=examples.uri, fingerprint='split:images,num_files:3', num_train=0,
        num_eval=3, image_sizes={'8x8': 0}, color_modes=None)]


def test_a_recorded_window_is_read_oldest_first_with_its_patterns():
    examples = standard_artifacts.Examples()
    examples.uri = '/root/3'
    entries = [_entry(2), _entry(3)]
    examples.set_string_custom_property(window.PROPERTY, window.to_json(entries))
    assert window.read(examples) == entries
    assert window.train_patterns(entries) == ('/root/2/Split-train/*', '/root/3/Split-train/*')
    assert window.eval_patterns(entries) == ('/root/2/Split-eval/*', '/root/3/Split-eval/*')
    assert window.uris(entries) == ['/root/2', '/root/3']
    assert window.spans_text(entries) == '2,3'
    # A newer writer's extra keys are ignored.
    assert window.from_json('[{"span": 1, "uri": "/u", "fingerprint": "", "num_train": 1, '
                            '"num_eval": 0, "origin": "x"}]')[0].span == 1


def test_the_window_fingerprint_is_the_spans_and_unknown_when_one_is():
    assert window.fingerprint([_entry(3, fingerprint='a')]) == 'a'  # one span: its own
    assert window.fingerprint([_entry(2, fingerprint='a'), _entry(3, fingerprint='b')]) == \
        'span 2: a\nspan 3: b'
    assert window.fingerprint([_entry(2, fingerprint=''), _entry(3)]) == ''


def test_describe_says_which_spans_and_how_many_examples():
    assert window.describe([_entry(2, 797, 199), _entry(3, 800, 200), _entry(4, 794, 198)]) == \
        'spans 2-4, 2,391 train / 597 eval examples'
    assert window.describe([_entry(1), _entry(3)]) == 'spans 1,3, 20 train / 4 eval examples'
    assert window.describe([_entry(5)]) == 'span 5, 10 train / 2 eval examples'


def test_training_data_travels_with_the_model(tmp_path):
    entries = [_entry(2), _entry(3)]
    path = window.write_training_data(str(tmp_path), entries)
    assert path == os.path.join(str(tmp_path), 'assets.extra', 'training_data.json')
    assert window.read_training_data(str(tmp_path)) == entries
    assert os.listdir(tmp_path / 'assets.extra') == ['training_data.json']  # no temp left
    assert window.read_training_data(str(tmp_path / 'older_model')) is None
