"""Unit tests of the mixed-precision policy choice."""
import pytest

from components.trainer import precision


@pytest.mark.parametrize('gpus, bf16, expected', [
    (1, True, 'mixed_float16'), (2, False, 'mixed_float16'),
    (0, True, 'mixed_bfloat16'), (0, False, 'float32')])
def test_auto_policy_follows_the_hardware(gpus, bf16, expected):
    assert precision.resolve_policy('auto', num_gpus=gpus, bf16_cpu=bf16) == expected


@pytest.mark.parametrize('name', ['float32', 'mixed_float16', 'mixed_bfloat16'])
def test_explicit_policy_is_kept(name):
    assert precision.resolve_policy(name, num_gpus=0, bf16_cpu=False) == name


def test_unknown_policy_is_rejected():
    with pytest.raises(ValueError, match='mixed_precision must be one of'):
        precision.resolve_policy('float16')


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    with_bf16 = tmp_path / 'a'
    with_bf16.write_text('flags\t\t: fpu avx512f avx512_bf16 avx512_vnni\n')
    with_amx = tmp_path / 'b'
    with_amx.write_text('flags\t\t: fpu amx_bf16 amx_tile\n')
    without = tmp_path / 'c'
    without.write_text('flags\t\t: fpu avx2 fma\n')
    assert precision.cpu_has_bf16(str(with_bf16)) and precision.cpu_has_bf16(str(with_amx))
    assert not precision.cpu_has_bf16(str(without))
    assert not precision.cpu_has_bf16(str(tmp_path / 'missing'))
