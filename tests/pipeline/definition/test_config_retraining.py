"""--keep-runs, the [retention] table and RetentionConfig
(pipeline/definition/config_retraining.py)."""
import pytest

import runner
from pipeline.definition import presets
from pipeline.runs import summary as summary_lib
from pipeline.runs import summary_text
from pipeline.definition.config_retraining import RetentionConfig

from helpers import DIGITS


def _config(tmp_path, *flags, toml=None):
    argv = ['--local', '--data', DIGITS, '--output', str(tmp_path / 'out'), *flags]
    if toml is not None:
        (tmp_path / 'c.toml').write_text(toml)
        argv += ['--config-file', str(tmp_path / 'c.toml')]
    config, _ = presets.from_args(runner.build_parser().parse_args(argv))
    return config


def test_three_runs_are_kept_by_default_and_the_flag_or_the_file_changes_it(tmp_path):
    assert _config(tmp_path).retention == RetentionConfig(keep_runs=3)
    assert _config(tmp_path, '--keep-runs', '0').retention.keep_runs == 0
    assert _config(tmp_path, toml='[retention]\nkeep_runs = 5\n').retention.keep_runs == 5
    assert _config(tmp_path, '--keep-runs', '2',
                   toml='[retention]\nkeep_runs = 5\n').retention.keep_runs == 2  # flags win
    assert presets.FLAG_FIELDS['keep_runs'] == 'retention.keep_runs'


def test_a_negative_count_is_an_error_naming_what_the_user_wrote(tmp_path):
    with pytest.raises(ValueError, match='--keep-runs must be >= 0'):
        _config(tmp_path, '--keep-runs', '-1')
    with pytest.raises(ValueError, match=r'\[retention\] keep_runs must be >= 0'):
        _config(tmp_path, toml='[retention]\nkeep_runs = -2\n')
    with pytest.raises(ValueError, match=r'\[retention\] keep_runs must be an integer'):
        _config(tmp_path, toml='[retention]\nkeep_runs = "all"\n')


def test_the_summary_says_what_retention_did():
    summary = summary_lib.RunSummary(run_id='r', states={}, outputs={}, retention=(
        'kept 3 runs, deleted 5 artifacts of 2 runs (41.2 MB)'))
    assert summary_text.format_summary(summary).splitlines()[-1] == (
        '  retention: kept 3 runs, deleted 5 artifacts of 2 runs (41.2 MB)')
    quiet = summary_lib.RunSummary(run_id='r', states={}, outputs={})
    assert 'retention' not in summary_text.format_summary(quiet)
