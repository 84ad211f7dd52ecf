"""The report's Blessing and Push sections on a real evaluation (our Evaluator executor, TFMA).

Brightness models (tests/support/saved_models.py): classes a and b all right, c 8 of 10; overall
0.9333 clears the bar of 0.90, class c fails the opt-in class bar of 0.90.
"""
import re

from core import versions
from pipeline.runs import summary as summary_lib
from components.evaluate.params import EvalParams
from pipeline.report import sections
from ml_metadata.proto import metadata_store_pb2

import saved_models


def _rows(html_text):
    """The table's rows as lists of cell texts."""
    return [re.findall(r'<td>(.*?)</td>', row) for row in re.findall(r'<tr>(.*?)</tr>', html_text)
            if '<td>' in row]


def test_every_check_is_listed_with_value_threshold_and_outcome(tmp_path):
    blessing, evaluation = saved_models.evaluate(
        tmp_path, EvalParams(min_accuracy=0.9, min_class_accuracy=0.9), ('a', 'b', 'c'),
        {'a': [0.1] * 10, 'b': [0.5] * 10, 'c': [0.9] * 8 + [0.5] * 2}, (0.1, 0.5, 0.9))
    pushed = metadata_store_pb2.Artifact()
    pushed.custom_properties['pushed'].int_value = 0
    pushed.custom_properties[versions.NOT_PUSHED_REASON_PROPERTY].string_value = (
        'not blessed: label_name=c: sparse_categorical_accuracy 0.8000 < 0.90')
    summary = summary_lib.RunSummary(
        run_id='r', states={'Evaluator': 'COMPLETE', 'Pusher': 'COMPLETE'},
        outputs={'ModelBlessing': [blessing.mlmd_artifact],
                 'ModelEvaluation': [evaluation.mlmd_artifact], 'PushedModel': [pushed]})

    section = sections.blessing_section(summary, None)
    assert ('<b>Not blessed</b>: label_name=c: sparse_categorical_accuracy 0.8000 &lt; 0.90'
            in section)
    assert 'Nothing was served yet' in section
    assert _rows(section) == [
        ['sparse_categorical_accuracy', 'overall', '0.9333', '&gt;= 0.90', 'pass'],
        ['sparse_categorical_accuracy', 'label_name=a', '1.0000', '&gt;= 0.90', 'pass'],
        ['sparse_categorical_accuracy', 'label_name=b', '1.0000', '&gt;= 0.90', 'pass'],
        ['sparse_categorical_accuracy', 'label_name=c', '0.8000', '&gt;= 0.90', 'FAIL']]
    assert sections.push_section(summary) == (
        '<p class="no"><b>Not pushed</b>: not blessed: label_name=c: '
        'sparse_categorical_accuracy 0.8000 &lt; 0.90.</p>')
