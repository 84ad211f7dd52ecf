"""The source registry and what every Source shares: names, patterns, and the fingerprint that
keys the span index, which must be the one TFX's driver records for the same folder."""
import os
import shutil

import pytest
from tfx.utils import io_utils

from components.ingest.graph import registry, source
from components.ingest.graph.params import IngestParams
from pipeline.definition import config as config_lib

from helpers import DIGITS, copy_digits


def test_every_name_has_a_source_and_the_config_offers_exactly_those():
    offered = IngestParams.__dataclass_fields__['source'].metadata['choices']
    assert registry.NAMES == ('images', 'csv', 'parquet') == offered   # --source's choices
    assert set(config_lib.SOURCE_DEFAULTS) == set(registry.NAMES)
    for name in registry.NAMES:
        found = registry.get(name)
        assert isinstance(found, source.Source) and found.name == name
        assert found is registry.get(name)
    with pytest.raises(ValueError, match=r"source must be one of \('images', 'csv', "
                       r"'parquet'\), got 'avro'"):
        registry.get('avro')


def test_the_fingerprint_is_the_one_tfx_records_for_the_folder(tmp_path):
    images = copy_digits(str(tmp_path / 'span-1'), classes=('0', '1'), per_class=2)
    (tmp_path / 'span-1' / '0' / '.DS_Store').write_bytes(b'\0')  # matched by TFX's glob too
    tables = tmp_path / 'span-2'
    os.makedirs(tables)
    shutil.copy(os.path.join(os.path.dirname(DIGITS), 'wine', 'wine.csv'), tables)
    (tables / 'part.parquet').write_bytes(b'PAR1')
    for name, folder in (('images', images), ('csv', str(tables)), ('parquet', str(tables))):
        found = registry.get(name)
        expected = io_utils.generate_fingerprint(name, os.path.join(folder, found.pattern))
        assert found.fingerprint(folder) == expected
        assert found.holds_input(folder)
    assert 'num_files:5' in registry.get('images').fingerprint(images)
    assert not registry.get('parquet').holds_input(images)
