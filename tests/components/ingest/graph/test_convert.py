"""Unit tests of listing in the ingestion graph: class folders in parts, each entry in one part."""
import os

from components.ingest.graph import convert

from helpers import copy_digits


def test_units_cover_every_class_in_every_part():
    units = convert.listing_units(('cat', 'dog'), parts=3)
    assert units == [('cat', 0, 3), ('cat', 1, 3), ('cat', 2, 3),
                     ('dog', 0, 3), ('dog', 1, 3), ('dog', 2, 3)]
    assert len(convert.listing_units(('a',))) == convert.LISTING_PARTS


def test_parts_list_every_entry_exactly_once_hidden_ones_never(tmp_path):
    root = copy_digits(str(tmp_path / 'images'), classes=('0',), per_class=40)
    folder = os.path.join(root, '0')
    os.symlink(os.path.join(folder, 'gone.png'), os.path.join(folder, 'dangling.png'))
    os.makedirs(os.path.join(folder, 'nested'))  # listed: ingestion quarantines it
    open(os.path.join(folder, '.DS_Store'), 'wb').close()
    expected = sorted(os.path.join(folder, name) for name in os.listdir(folder)
                      if not name.startswith('.'))
    assert len(expected) == 42
    parts = [list(convert.list_unit(unit, root)) for unit in convert.listing_units(('0',), 4)]
    assert sorted(path for part in parts for path in part) == expected
    assert sum(1 for part in parts if part) > 1  # the hash spreads the files over parts
    # The same file is in the same part whenever it is listed.
    assert parts == [list(convert.list_unit(unit, root))
                     for unit in convert.listing_units(('0',), 4)]


def test_chunks_group_paths_without_losing_the_tail():
    assert list(convert.chunks(map(str, range(5)), size=2)) == [['0', '1'], ['2', '3'], ['4']]
    assert list(convert.chunks([], size=2)) == []
