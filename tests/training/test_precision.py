"""Unit tests of the mixed-precision policy choice: the hardware, then the model's cost."""
import pytest

from training import precision

BELOW, ABOVE = precision.BF16_MIN_MACS - 1, precision.BF16_MIN_MACS


def _never_called():
    raise AssertionError('the model cost was measured when the answer did not depend on it')


@pytest.mark.parametrize('gpus, bf16, macs, expected', [
    (1, True, BELOW, 'mixed_float16'), (2, False, ABOVE, 'mixed_float16'),
    (0, True, ABOVE, 'mixed_bfloat16'), (0, True, BELOW, 'float32'),
    (0, False, ABOVE, 'float32'), (0, False, BELOW, 'float32')])
def test_auto_policy_follows_the_hardware_and_the_model_cost(gpus, bf16, macs, expected):
    assert precision.resolve_policy('auto', num_gpus=gpus, bf16_cpu=bf16,
                                    model_cost=macs) == expected


def test_a_bf16_cpu_picks_bfloat16_only_from_the_threshold_up_and_says_why():
    small = precision.choose_policy('auto', 10_520_320, num_gpus=0, bf16_cpu=True)
    assert small == ('float32', 'auto on a bf16 CPU: 10.5M multiply-adds per example < '
                                f'{precision.BF16_MIN_MACS / 1e6:,.0f}M, below which bfloat16 '
                                'is slower')
    big = precision.choose_policy('auto', lambda: precision.Cost(1_259_098_112), num_gpus=0,
                                  bf16_cpu=True)
    assert big[0] == 'mixed_bfloat16' and big[1].startswith(
        'auto on a bf16 CPU: 1,259.1M multiply-adds per example >= ')
    # A threshold given explicitly moves the line (the bench uses the module's constant).
    assert precision.choose_policy('auto', 1000, num_gpus=0, bf16_cpu=True,
                                   threshold=1000)[0] == 'mixed_bfloat16'


BIG = 10 * ABOVE


@pytest.mark.parametrize('depthwise, expected', [
    (0, 'mixed_bfloat16'), (BIG // 100, 'mixed_bfloat16'),   # 1%: Xception's kind of share
    (int(BIG * precision.DEPTHWISE_MAX_SHARE) - 1, 'mixed_bfloat16'),
    (int(BIG * precision.DEPTHWISE_MAX_SHARE), 'float32'),
    (BIG // 10, 'float32')])                                  # 10%: MobileNet, EfficientNet
def test_a_depthwise_heavy_model_stays_float32_whatever_its_size(depthwise, expected):
    policy, why = precision.choose_policy('auto', precision.Cost(BIG, depthwise),
                                          num_gpus=0, bf16_cpu=True)
    assert policy == expected
    if depthwise == BIG // 10:
        assert why == (f'auto on a bf16 CPU: 10% of its {BIG / 1e6:,.1f}M multiply-adds '
                       'per example in depthwise convolutions, which are slower in bfloat16')


def test_the_cost_is_measured_only_when_it_decides():
    assert precision.choose_policy('auto', _never_called, num_gpus=1, bf16_cpu=True) == (
        'mixed_float16', 'auto on 1 GPU(s)')
    assert precision.choose_policy('auto', _never_called, num_gpus=0, bf16_cpu=False) == (
        'float32', 'auto on a CPU without bfloat16 instructions')
    assert precision.choose_policy('mixed_bfloat16', _never_called) == (
        'mixed_bfloat16', 'asked')


def test_an_unknown_cost_on_a_bf16_cpu_stays_float32():
    assert precision.choose_policy('auto', None, num_gpus=0, bf16_cpu=True) == (
        'float32', 'auto on a bf16 CPU, model cost unknown')


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
