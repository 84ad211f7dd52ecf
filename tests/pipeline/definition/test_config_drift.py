"""The drift thresholds: defaults, the [drift] table, --max-label-drift, and bad values."""
import os

import pytest

import runner
from pipeline.definition import config, presets
from components.drift.params import DriftParams

from helpers import REPO_ROOT


def test_the_defaults_are_documented_and_the_example_file_keeps_them(tmp_path):
    assert DriftParams() == DriftParams(max_label_drift=0.30, max_categorical_drift=0.30,
                                        max_numeric_drift=0.15, max_image_drift=0.30)
    cfg = presets.from_flags('default', os.path.join(REPO_ROOT, 'config.example.toml'),
                             {'output': str(tmp_path)})
    assert cfg.drift == DriftParams() == config.PipelineConfig().drift


def test_the_table_sets_every_bar_and_the_flag_wins(tmp_path):
    path = tmp_path / 'settings.toml'
    path.write_text('[drift]\nmax_label_drift = 0.2\nmax_numeric_drift = 1\n')
    cfg = presets.from_flags('default', str(path), {'output': str(tmp_path)})
    assert (cfg.drift.max_label_drift, cfg.drift.max_numeric_drift) == (0.2, 1.0)
    parsed = runner.build_parser().parse_args(
        ['--local', '--config-file', str(path), '--output', str(tmp_path),
         '--max-label-drift', '0.5'])
    cfg, _ = presets.from_args(parsed)
    assert cfg.drift.max_label_drift == 0.5 and cfg.drift.max_numeric_drift == 1.0


@pytest.mark.parametrize('flags, message', [
    ({'max_label_drift': 1.5}, '--max-label-drift must be in [0, 1], got 1.5'),
    ({'max_label_drift': -0.1}, '--max-label-drift must be in [0, 1], got -0.1'),
])
def test_a_bar_outside_0_1_is_an_error_naming_the_flag(tmp_path, flags, message):
    with pytest.raises(ValueError, match=message.replace('[', r'\[').replace(']', r'\]')):
        presets.from_flags('default', None, dict(flags, output=str(tmp_path)))
