"""core/plugins.py: implementations by name, loaded when first asked for, one instance each."""
import sys

import pytest

from core import plugins


def test_names_keep_their_order_and_an_unknown_name_is_refused_with_them():
    registry = plugins.Registry('codec', {'b': 'json.decoder:JSONDecoder',
                                          'a': 'json.encoder:JSONEncoder'})
    assert registry.names == ('b', 'a')
    with pytest.raises(ValueError, match=r"codec must be one of \('b', 'a'\), got 'c'"):
        registry.get('c')
    registry.check('a')  # a known name passes


def test_an_implementation_is_imported_on_first_use_and_shared(monkeypatch):
    monkeypatch.delitem(sys.modules, 'fractions', raising=False)
    registry = plugins.Registry('number', {'fraction': 'fractions:Fraction'})
    assert 'fractions' not in sys.modules  # naming it loads nothing
    first = registry.get('fraction')
    assert type(first).__name__ == 'Fraction' and registry.get('fraction') is first
