"""The ResNet-50 seed-case bench: sizes by hardware and the table's arithmetic. Its real run (a
ResNet-50 worker on two replicas, about a minute even at --smoke sizes) is the bench itself,
`python -m bench.bench_seed_case --smoke`, not a test: it measures, and asserts nothing a
training test does not (tests/training/test_distributed.py, test_steps.py)."""

from bench import bench_seed_case as bench


def test_gpu_plan_uses_the_article_sizes_and_every_power_of_two_up_to_the_gpus():
    p = bench.plan(gpus=8, bf16_cpu=False)
    assert (p.device, p.size, p.batch, p.mixed, p.train_policy) == (
        'gpu', 224, 64, 'mixed_float16', 'mixed_float16')
    assert p.replicas == (1, 2, 4, 8)
    assert bench.plan(gpus=3, bf16_cpu=False).replicas == (1, 2, 3)
    assert bench.plan(gpus=1, bf16_cpu=False).replicas == (1,)


def test_cpu_plan_is_smaller_and_trains_float32_without_bf16_instructions():
    p = bench.plan(gpus=0, bf16_cpu=False)
    assert (p.device, p.replicas, p.mixed, p.train_policy) == (
        'cpu', (1, 2), 'mixed_bfloat16', 'float32')
    assert p.size < 224 and p.batch % bench.ACCUM == 0
    bf16 = bench.plan(gpus=0, bf16_cpu=True)
    assert bf16.train_policy == 'mixed_bfloat16' and bf16.size * bf16.batch > p.size * p.batch
    smoke = bench.plan(gpus=0, bf16_cpu=False, smoke=True)
    assert smoke.size * smoke.batch * smoke.steps < p.size * p.batch * p.steps
    assert smoke.batch % bench.ACCUM == 0


def test_each_measurement_is_listed_once():
    cpu = bench.plan(gpus=0, bf16_cpu=False)
    assert bench.configs(cpu) == [(1, 'float32', 1), (2, 'float32', 1),
                                  (1, 'mixed_bfloat16', 1), (1, 'float32', bench.ACCUM)]
    gpu = bench.plan(gpus=2, bf16_cpu=False)
    assert bench.configs(gpu) == [(1, 'mixed_float16', 1), (2, 'mixed_float16', 1),
                                  (1, 'float32', 1), (1, 'mixed_float16', bench.ACCUM)]


def _result(ips, peak, before=500.0, gpu=None):
    result = {'images_per_second': ips, 'peak_rss_mb': peak, 'rss_before_training_mb': before,
              'images_per_cpu_second': ips / 2}
    if gpu is not None:
        result['gpu_peak_mb'] = gpu
    return result


def test_gpu_table_gives_efficiency_against_linear_speed_up_and_memory_change():
    p = bench.plan(gpus=2, bf16_cpu=False)
    rows = bench.table(p, {
        (1, 'mixed_float16', 1): _result(100.0, 3000, gpu=6000),
        (2, 'mixed_float16', 1): _result(184.0, 3000, gpu=6100),
        (1, 'float32', 1): _result(50.0, 3000, gpu=10000),
        (1, 'mixed_float16', 4): _result(90.0, 3000, gpu=5000)})
    by_name = {row[0]: row for row in rows}
    assert by_name['2 GPUs, mixed_float16'][3] == '1.84x one; 92% of linear'
    assert by_name['1 replica, mixed_float16'][3] == '2.00x float32 speed; -40% memory'
    assert by_name['1 replica, float32'][4] == '10000'   # the GPU peak, not the host's RSS
    assert all(row[2] == '' for row in rows)   # host CPU time says nothing about GPUs
    accumulation = rows[-1]
    assert accumulation[0].startswith('accumulation k=4: 4 x 16 images')
    assert accumulation[3] == '0.90x one step of 64 (+10% overhead)'
    assert not any('grown' in row[0] for row in rows)


def test_cpu_table_labels_logical_devices_and_separates_growth_from_the_runtime():
    p = bench.Plan('cpu', (1, 2), 128, 32, 2, 6, 'mixed_bfloat16', 'float32')
    rows = bench.table(p, {
        (1, 'float32', 1): _result(10.0, 2500, before=1000),
        (2, 'float32', 1): _result(11.0, 4000, before=1100),
        (1, 'mixed_bfloat16', 1): _result(8.0, 2200, before=1000),
        (1, 'float32', 4): _result(9.5, 2300, before=1000)})
    assert rows[1][:4] == ('2 logical CPU devices, float32', '11.0', '5.50',
                           '1.10x one; 55% of linear')
    mixed = next(row for row in rows if row[0] == '1 replica, mixed_bfloat16')
    assert mixed[3] == '0.80x float32 speed; -12% memory'
    assert mixed[4] == '2200 (1200 grown in training)'
    growth = next(row for row in rows if 'grown during training' in row[0])
    assert growth[3:] == ('-20%', '1200 vs 1500')
    assert rows[-1][3] == '0.95x one step of 32 (+5% overhead)'
