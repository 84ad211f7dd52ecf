"""docs/cli.md lists every flag beside its config-file key and default, and every key without a
flag: the page is generated (pipeline/definition/cli_docs.py) and these tests fail when it is
stale."""
import dataclasses
import re

import runner
from core import settings
from pipeline.definition import cli_docs, config_file
from training import params as params_lib

FIX = 'docs/cli.md is stale: run `python -m pipeline.definition.cli_docs` and commit the page'


def _page():
    with open(cli_docs.PAGE) as handle:
        return handle.read()


def _rows(page):
    """The generated tables' rows: first cell -> the other cells."""
    generated = page.split(cli_docs.MARKER)[1]
    return {cells[0].strip('`'): cells[1:] for cells in (
        [c.strip() for c in re.split(r'(?<!\\)\|', line)[1:-1]]
        for line in generated.splitlines() if line.startswith('| `'))}


def test_the_page_is_what_the_parser_and_the_configs_make():
    page = _page()
    assert cli_docs.MARKER in page
    assert cli_docs.page_with(runner.build_parser(), page) == page, FIX


def test_every_flag_and_config_key_is_on_the_page():
    rows = _rows(_page())
    flags = {row.split()[0] for row in rows if row.startswith('--')}
    parser_flags = {action.option_strings[0] for action in runner.build_parser()._actions
                    if action.option_strings[0] != '-h'}
    assert flags == parser_flags
    keys = {row for row in rows if not row.startswith('--')} | {
        cells[0].strip('`') for row, cells in rows.items() if row.startswith('--')}
    for path in config_file.field_types():
        assert config_file.display_name(path) in keys, path


def test_every_training_parameter_shows_its_flag_key_and_default_from_the_dataclass():
    rows = _rows(_page())
    by_key = {cells[0].strip('`'): (flag, cells[1]) for flag, cells in rows.items()
              if flag.startswith('--')}
    by_key.update({key: (None, cells[0]) for key, cells in rows.items()
                   if not key.startswith('--')})
    for field in dataclasses.fields(params_lib.TrainParams):
        flag, default = by_key[f'[train] {field.name}']
        assert (flag and flag.split()[0]) == field.metadata['flag']
        shown = runner.DEFAULT_TEXTS.get(field.name) or settings.default_text(field)
        if field.metadata['flag'] is None and 'default_text' not in field.metadata:
            shown = cli_docs._literal(field)   # as the config file writes it
        assert default.replace('\\|', '|') == shown, field.name


def test_a_new_flag_or_key_missing_from_the_page_fails():
    parser = runner.build_parser()
    parser.add_argument_group('training').add_argument('--mixup-alpha', type=float,
                                                       help='x (default: 0)')
    assert '--mixup-alpha' in cli_docs.markdown(parser)
    assert cli_docs.page_with(parser, _page()) != _page()
