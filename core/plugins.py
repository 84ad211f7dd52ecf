"""Implementations by name, each loaded on first use: the ingestion sources
(components/ingest/graph/registry.py) and the trainer's launchers (launch/launchers.py).

    sources = plugins.Registry('source', {'images': 'package.module:ImageSource', ...})
    sources.names         # the names, in the order given (a flag's choices)
    sources.get('images') # one shared instance of the class, imported when first asked for

A registry names each implementation by its import path, so that reading the names (flag
choices, checks) loads no implementation and a layer can name one above it without importing
it. Implementations hold no state: one instance serves every caller.
"""
import importlib
from typing import Dict


class Registry:

    def __init__(self, kind: str, implementations: Dict[str, str]):
        self._kind, self._paths = kind, dict(implementations)
        self._loaded: Dict[str, object] = {}

    @property
    def names(self):
        return tuple(self._paths)

    def check(self, name: str) -> None:
        """ValueError naming the choices, unless `name` is one."""
        if name not in self._paths:
            raise ValueError(f'{self._kind} must be one of {self.names}, got {name!r}')

    def get(self, name: str):
        self.check(name)
        if name not in self._loaded:
            module, cls = self._paths[name].split(':')
            self._loaded[name] = getattr(importlib.import_module(module), cls)()
        return self._loaded[name]
