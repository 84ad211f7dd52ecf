"""The layers' import rules, read from the source with `ast` (every import statement, also those
inside functions), so that a docstring's "no TFX imports" is a rule a change cannot break:

- training/ (the library): no TFX, TFX-BSL, TFMA, TFDV, Beam, ML Metadata, Kubernetes or
  subprocess; no stage of components/, no launch/, pipeline/ or runner; of core
  only modules that themselves (and what they import of core) import none of that;
- launch/ (how a job runs): no TFX, no stage of components/, no pipeline/ or runner;
- components/<stage>/: of components/, only its own stage and core;
- core/ (what every layer shares: serving layout, property names, image shape, window,
  features, inputs, settings, storage): none of the layers above it, so no components/,
  training/, launch/, models/, pipeline/ or runner;
- components/, training/, launch/: no pipeline/ or runner;
- pipeline/: no stage's executor (what it needs of a stage is in the stage's libraries).
"""
import ast
import os
from typing import Dict, Iterator, List, Tuple

from helpers import REPO_ROOT

LAYERS = ('core', 'training', 'launch', 'components', 'pipeline')
_ABOVE_CORE = ('components', 'training', 'launch', 'models', 'pipeline', 'runner')
_NOT_IN_TRAINING = ('tfx', 'tfx_bsl', 'tensorflow_model_analysis', 'tensorflow_data_validation',
                    'apache_beam', 'ml_metadata', 'kubernetes', 'subprocess')
_TFX = ('tfx', 'tfx_bsl')


def _within(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + '.') for p in packages)


def imports(source: str) -> Iterator[Tuple[int, str]]:
    """(line, module) of every import in the source; `from a import b` gives a.b as well as a,
    since b may be a module."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f'{node.module}.{alias.name}'


def _stage(name: str) -> str:
    """'trainer' for components.trainer.executor; '' outside the stages."""
    parts = name.split('.')
    if parts[0] != 'components' or len(parts) < 2:
        return ''
    return parts[1]


def violation(module: str, imported: str, common_ok=lambda name: True) -> str:
    """Why `module` may not import `imported`, or ''. common_ok tells whether a
    core module is fit for the training library."""
    layer = module.split('.')[0]
    if layer == 'core' and _within(imported, _ABOVE_CORE):
        return 'core/ imports none of the layers above it (components, training, launch, ' \
            'models, pipeline, runner)'
    if layer in ('training', 'launch', 'components') and _within(imported, ('pipeline', 'runner')):
        return f'{layer}/ imports no pipeline/ or runner'
    if layer == 'training':
        if _within(imported, _NOT_IN_TRAINING + ('launch',)):
            return 'training/ imports no TFX, Beam, Kubernetes, subprocess or launch/'
        if _stage(imported):
            return 'training/ imports no stage of components/'
        if imported.startswith('core.') and not common_ok(imported):
            return f'training/ imports no core module that imports TFX ({imported})'
    if layer == 'launch' and (_within(imported, _TFX) or _stage(imported)):
        return 'launch/ imports no TFX and no stage of components/'
    if layer == 'components' and _stage(imported) and _stage(imported) != _stage(module):
        return (f'components.{_stage(module)} imports no other stage '
                f'(components.{_stage(imported)}): shared code goes to core/')
    if layer == 'pipeline' and _stage(imported) and imported.split('.')[2:3] == ['executor']:
        return "pipeline/ imports no stage's executor: shared code goes to a library"
    return ''


def _modules() -> Dict[str, Tuple[str, str]]:
    """module name -> (path relative to the checkout, source), for every layer's .py file."""
    found = {}
    for layer in LAYERS:
        for folder, _, names in os.walk(os.path.join(REPO_ROOT, layer)):
            for name in sorted(names):
                if name.endswith('.py'):
                    path = os.path.relpath(os.path.join(folder, name), REPO_ROOT)
                    module = path[:-3].replace(os.sep, '.').removesuffix('.__init__')
                    with open(os.path.join(REPO_ROOT, path)) as handle:
                        found[module] = (path, handle.read())
    return found


def _fit_for_training(modules) -> Dict[str, bool]:
    """core module -> whether it, and what it imports of core,
    imports nothing training/ may not."""
    common = {m: [name for _, name in imports(src)] for m, (_, src) in modules.items()
              if m.startswith('core.')}
    fit: Dict[str, bool] = {}

    def check(module, seen=()):
        if module not in fit:
            names = common.get(module, [])
            fit[module] = not any(_within(n, _NOT_IN_TRAINING) for n in names) and all(
                check(n, seen + (module,)) for n in names if n in common and n not in seen)
        return fit[module]
    for module in common:
        check(module)
    return fit


def broken_rules(modules) -> List[str]:
    fit = _fit_for_training(modules)
    found = []
    for module, (path, source) in sorted(modules.items()):
        for line, imported in imports(source):
            why = violation(module, imported, lambda name: fit.get(name, True))
            if why:
                found.append(f'{path}:{line}: {imported}: {why}')
    return sorted(set(found))


def test_every_module_keeps_to_its_layers_imports():
    modules = _modules()
    assert {'training.loop', 'launch.sequence', 'components.trainer.executor',
            'core.properties', 'pipeline.local.console'} <= set(modules)  # all walked
    assert broken_rules(modules) == []


def test_the_rules_flag_forbidden_imports_and_only_those():
    modules = {
        'training.loop': ('t.py', 'import os\ndef f():\n    import tfx.types\n'),
        'training.data': ('d.py', 'from core import served_baseline\n'),
        'training.job': ('j.py', 'import tensorflow\nfrom core import props\n'),
        'core.served_baseline': ('b.py', 'from tfx import types\n'),
        'core.props': ('c.py', 'import json\n'),
        'core.x': ('x.py', 'from components.baseline import executor\n'),
        'launch.local': ('l.py', 'import subprocess\nfrom components.trainer import executor\n'),
        'components.push.executor': ('p.py', 'from components.evaluate import checks\n'),
        'components.trainer.component': ('a.py', 'from components.trainer import executor\n'
                                         'from training import loop\nfrom launch import tfjob\n'),
        'components.gate.anomalies': ('g.py', 'from pipeline import summary\n'),
        'pipeline.report.readers': ('r.py', 'from components.trainer import executor\n'
                                    'from components.evaluate import checks\n'),
    }
    flagged = {tuple(found.split(': ')[:2]) for found in broken_rules(modules)}
    assert flagged == {
        ('t.py:3', 'tfx.types'),                              # inside a function too
        ('d.py:1', 'core.served_baseline'),                   # a core module with TFX
        ('x.py:1', 'components.baseline'), ('x.py:1', 'components.baseline.executor'),
        ('l.py:2', 'components.trainer'), ('l.py:2', 'components.trainer.executor'),
        ('p.py:1', 'components.evaluate'), ('p.py:1', 'components.evaluate.checks'),
        ('g.py:1', 'pipeline'), ('g.py:1', 'pipeline.summary'),
        ('r.py:1', 'components.trainer.executor'),            # a library of a stage is fine
    }
