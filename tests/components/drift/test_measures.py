"""The drift figures against hand-computed values, and their words."""
import pytest

from components.drift import measures

UNIFORM = {'bag': 250, 'coat': 250, 'dress': 250, 'shirt': 250}
DRIFTED = {'bag': 400, 'coat': 25, 'dress': 25, 'shirt': 25}  # the day 3
LIMITS = measures.Thresholds(label=0.30, categorical=0.30, numeric=0.20, image=0.30)


def test_l_infinity_of_a_label_mix_is_the_largest_share_difference():
    # 84% against 25%: 0.59, as the drifted day (400 of 475 = 0.842 bags) gives 0.592.
    assert measures.l_infinity({'a': 84, 'b': 6, 'c': 5, 'd': 5},
                               {'a': 25, 'b': 25, 'c': 25, 'd': 25}) == pytest.approx(0.59)
    assert measures.l_infinity(DRIFTED, UNIFORM) == pytest.approx(400 / 475 - 0.25)
    assert measures.l_infinity(UNIFORM, {k: 2 * v for k, v in UNIFORM.items()}) == 0.0


def test_a_class_only_one_side_has_counts_with_its_whole_share():
    # A new class e holding 20% of the new span: its share differs by 0.20, the others' by
    # 0.25 - 0.20 = 0.05 each.
    assert measures.l_infinity({'a': 20, 'b': 20, 'c': 20, 'd': 20, 'e': 20},
                               {'a': 1, 'b': 1, 'c': 1, 'd': 1}) == pytest.approx(0.20)


def test_image_size_and_colour_mode_mixes_by_l_infinity():
    values = measures.image_mix({'28x28': 90, '32x32': 10}, {'L': 100},
                                {'28x28': 500}, {'L': 400, 'RGB': 100}, 0.30)
    assert [(v.feature, v.measure, round(v.value, 4), v.exceeded) for v in values] == [
        ('image size', 'L-infinity', 0.1, False), ('colour mode', 'L-infinity', 0.2, False)]
    # A side without a recorded mix (CSV data, or an old record) is not compared.
    assert measures.image_mix(None, None, {'28x28': 5}, {'L': 5}, 0.3) == []


def test_mixes_are_summed_over_the_window_and_read_from_json_or_dicts():
    window = [{'image_sizes': '{"28x28": 3}'}, {'image_sizes': {'28x28': 1, '8x8': 4}},
              {'image_sizes': None}]
    assert measures.summed(measures.counts(e['image_sizes']) for e in window) == {
        '28x28': 4.0, '8x8': 4.0}
    assert measures.summed([None, None]) is None


def test_thresholds_are_exceeded_only_above_the_bar():
    at = measures.DriftValue('label', measures.L_INFINITY, 0.30, 0.30)
    above = measures.DriftValue('label', measures.L_INFINITY, 0.3001, 0.30)
    assert not at.exceeded and above.exceeded
    assert above.as_json() == {'feature': 'label', 'measure': 'L-infinity', 'value': 0.3001,
                               'threshold': 0.30, 'exceeded': True}


def test_the_summary_line_names_what_exceeded_else_the_label_and_the_nearest_other():
    label = measures.DriftValue('label', measures.L_INFINITY, 0.63, 0.30)
    alcohol = measures.DriftValue('alcohol', measures.JENSEN_SHANNON, 0.05, 0.20)
    size = measures.DriftValue('image size', measures.L_INFINITY, 0.12, 0.30)
    assert measures.text([label, alcohol], 1, None) == (
        'drift: label L∞ 0.63 > 0.30 vs the data of served version 1')
    assert measures.reasons([label, alcohol], 1) == [
        'label L∞ 0.63 > 0.30 vs the data of served version 1']
    calm = measures.DriftValue('label', measures.L_INFINITY, 0.04, 0.30)
    assert measures.text([calm, alcohol, size], 2, None) == (
        'drift: label L∞ 0.04 <= 0.30, largest other image size L∞ 0.12 <= 0.30 '
        'vs the data of served version 2')
    assert measures.text([calm], 2, None) == 'drift: label L∞ 0.04 <= 0.30 vs the data of ' \
                                             'served version 2'
    assert measures.text([], -1, 'nothing served yet') == 'drift: not measured (nothing ' \
                                                          'served yet)'
