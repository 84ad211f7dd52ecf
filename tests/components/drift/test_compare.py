"""TFDV's comparators on statistics of hand-made data: the values are the hand-computed ones,
and TFDV reports them also below the thresholds."""
import numpy as np
import pandas as pd
import pytest
import tensorflow_data_validation as tfdv

from components.drift import compare, measures

LIMITS = measures.Thresholds(label=0.30, categorical=0.30, numeric=0.20, image=0.30)


def _stats(label_counts, x=None, colour=None):
    names = [name for name, n in label_counts.items() for _ in range(n)]
    frame = {'label_name': names, 'label': [0] * len(names),
             'source_path': [f'f{i}' for i in range(len(names))]}
    if x is not None:
        frame['x'] = x
    if colour is not None:
        frame['colour'] = colour
    return tfdv.generate_statistics_from_dataframe(pd.DataFrame(frame))


def _by_feature(values):
    return {v.feature: v for v in values}


def test_label_mix_84_percent_against_uniform_is_0_59_and_exceeds_0_30():
    new = _stats({'a': 84, 'b': 6, 'c': 5, 'd': 5})
    old = _stats({'a': 25, 'b': 25, 'c': 25, 'd': 25})
    [label] = compare.feature_drift(new, old, LIMITS)  # label index and paths not compared
    assert (label.feature, label.measure, label.threshold) == ('label', 'L-infinity', 0.30)
    assert label.value == pytest.approx(0.59)
    assert label.exceeded


def test_values_below_the_threshold_are_reported_too():
    values = _by_feature(compare.feature_drift(
        _stats({'a': 27, 'b': 23, 'c': 25, 'd': 25}, colour=['red'] * 60 + ['blue'] * 40),
        _stats({'a': 25, 'b': 25, 'c': 25, 'd': 25}, colour=['red'] * 50 + ['blue'] * 50),
        LIMITS))
    assert values['label'].value == pytest.approx(0.02)
    assert values['colour'].value == pytest.approx(0.10)
    assert not any(v.exceeded for v in values.values())


def test_jensen_shannon_of_a_numeric_feature():
    # Uniform on [0, 1] against itself: 0. Against uniform on [0.5, 1.5]: half the mass is
    # shared, so JS = 1/2 (KL of each to the mixture is 1/2 * log2(2)) -- hand-computed.
    # Against uniform on [2, 3]: disjoint, the largest JS in base 2, 1.
    counts = {'a': 1000}
    grid = (np.arange(1000) + 0.5) / 1000
    old = _stats(counts, x=grid)
    same, half, apart = (_by_feature(compare.feature_drift(_stats(counts, x=grid + shift), old,
                                                           LIMITS))['x']
                         for shift in (0.0, 0.5, 2.0))
    assert same.measure == 'Jensen-Shannon'
    assert same.value == pytest.approx(0.0, abs=1e-9)
    assert half.value == pytest.approx(0.5, abs=0.02)
    assert apart.value == pytest.approx(1.0)
    assert (same.exceeded, half.exceeded, apart.exceeded) == (False, True, True)


def test_a_feature_only_one_side_has_is_not_compared():
    values = compare.feature_drift(_stats({'a': 10}, x=[0.5] * 10), _stats({'a': 10}), LIMITS)
    assert [v.feature for v in values] == ['label']
