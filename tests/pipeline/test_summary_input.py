"""The run summary's input line: read from the trained Model's `input_statement`."""
from ml_metadata.proto import metadata_store_pb2

from pipeline import summary as summary_lib


def _model(**properties):
    model = metadata_store_pb2.Artifact()
    for name, value in properties.items():
        if isinstance(value, str):
            model.custom_properties[name].string_value = value
        else:
            model.custom_properties[name].double_value = value
    return model


def _summary(model):
    return summary_lib.RunSummary(run_id='r', states={'ImageTrainer': 'COMPLETE'},
                                  outputs={'Model': [model]})


def test_the_input_line_follows_the_accuracy_line():
    statement = 'trained at 28×28×3; 85% of images 28×28, 15% resized'
    lines = summary_lib.format_summary(_summary(_model(
        train_accuracy=1.0, eval_accuracy=0.9, input_statement=statement))).splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith('  accuracy:'))
    assert lines[index + 1] == f'  input: {statement}'


def test_a_model_without_a_statement_has_no_input_line():
    text = summary_lib.format_summary(_summary(_model(train_accuracy=1.0, eval_accuracy=0.9)))
    assert 'input:' not in text
