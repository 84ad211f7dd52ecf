"""Unit tests of the input-shape rule: most common size, ties, colour -> 3, overrides, wording."""
import json

import pytest

from core import image_shape as shape_lib


def _recorded(sizes, color=0, **extra):
    properties = {'image_sizes': shape_lib.sizes_json(sizes), 'color_images': color, **extra}
    return shape_lib.Recorded.from_properties(properties)


def test_the_most_common_size_and_grey_data_give_one_channel():
    data = _recorded({(28, 28): 850, (32, 32): 100, (40, 40): 50})
    result = shape_lib.resolve(data)
    assert result.shape == (28, 28, 1)
    assert result.statement == ('trained at 28×28×1; 85% of images 28×28, 15% resized; '
                                '1 channel from the data: all images grayscale')


def test_one_colour_image_makes_three_channels_and_says_so():
    result = shape_lib.resolve(_recorded({(28, 28): 999}, color=1))
    assert result.shape == (28, 28, 3)
    assert result.statement == ('trained at 28×28×3; all 999 images 28×28; 3 channels from the '
                                'data: 1 of 999 images colour, 998 grayscale→RGB')
    assert 'all images colour' in shape_lib.resolve(_recorded({(5, 7): 4}, color=4)).statement


@pytest.mark.parametrize('sizes, expected', [
    ({(28, 28): 5, (32, 32): 5}, (32, 32)),           # tie: the larger area
    ({(16, 64): 5, (64, 16): 5}, (64, 16)),           # same area: the larger height
    ({(16, 64): 5, (64, 16): 5, (8, 8): 6}, (8, 8)),  # a count beats any area
])
def test_ties_are_broken_deterministically(sizes, expected):
    assert shape_lib.most_common_size(sizes) == expected
    assert shape_lib.most_common_size(dict(reversed(list(sizes.items())))) == expected


def test_configured_values_override_and_a_conversion_is_never_silent():
    data = _recorded({(28, 28): 80, (32, 32): 20}, color=20)
    result = shape_lib.resolve(data, height=32, width=32, channels=1)
    assert result.shape == (32, 32, 1)
    assert result.statement == ('trained at 32×32×1; 20% of images 32×32, 80% resized (size as '
                                'configured); 1 channel as configured: 20 colour images '
                                'RGB→grayscale')
    # Only the channels configured: the size is still the data's.
    assert shape_lib.resolve(data, channels=3).shape == (28, 28, 3)
    assert '80 grayscale images →RGB' in shape_lib.resolve(data, channels=3).statement
    assert shape_lib.resolve(data, height=8, width=9).shape == (8, 9, 3)


def test_what_ingestion_changed_is_stated():
    data = _recorded({(28, 28): 100}, color=0, resized_at_ingestion=40,
                     grayscaled_at_ingestion=7)
    statement = shape_lib.resolve(data, channels=1).statement
    assert 'all 100 images 28×28 (40 resized at ingestion)' in statement
    assert '1 channel as configured: 7 colour images RGB→grayscale at ingestion' in statement


def test_percentages_never_round_to_all_or_none():
    statement = shape_lib.resolve(_recorded({(28, 28): 999, (32, 32): 1})).statement
    assert '99% of images 28×28, 1% resized' in statement
    statement = shape_lib.resolve(_recorded({(28, 28): 999, (32, 32): 1}),
                                  height=32, width=32, channels=1).statement
    assert '1% of images 32×32, 99% resized' in statement


def test_many_sizes_keep_the_most_common_and_sum_the_rest():
    sizes = {(10 + i, 10): 2 for i in range(30)}
    sizes[(50, 60)] = 9
    text = shape_lib.sizes_json(sizes)
    recorded = json.loads(text)
    assert list(recorded)[0] == '50x60' and len(recorded) == shape_lib.MAX_SIZES + 1
    assert recorded['other'] == 2 * (31 - shape_lib.MAX_SIZES)
    assert sum(recorded.values()) == sum(sizes.values())
    data = shape_lib.Recorded.from_properties({'image_sizes': text, 'color_images': 0})
    assert data.total == 69 and shape_lib.resolve(data).shape == (50, 60, 1)


def test_examples_without_records_need_an_explicit_shape():
    assert shape_lib.Recorded.from_properties({'color_images': 0}) is None
    with pytest.raises(ValueError, match='--image-size HxW and --channels'):
        shape_lib.resolve(None, channels=1)
    assert shape_lib.resolve(None, 8, 8, 1).shape == (8, 8, 1)
    with pytest.raises(ValueError, match='both set or both 0'):
        shape_lib.resolve(_recorded({(8, 8): 1}), height=8)
    with pytest.raises(ValueError, match='no valid images'):
        shape_lib.resolve(_recorded({}))
