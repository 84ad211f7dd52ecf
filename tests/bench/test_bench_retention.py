"""The retention bench's spans and table (the runs themselves are the bench's job)."""
import json
import os

from bench import bench_retention as bench


def test_every_span_holds_images_no_other_span_holds(tmp_path):
    for span in (1, 2, 3):
        bench.add_span(str(tmp_path), span, per_class=4)
    names = [{f'{c}/{n}' for c in bench.CLASSES
              for n in os.listdir(tmp_path / f'span-{span}' / c)} for span in (1, 2, 3)]
    assert [len(n) for n in names] == [12, 12, 12]
    assert not (names[0] & names[1] or names[1] & names[2] or names[0] & names[2])


def test_the_table_shows_both_sizes_their_ratio_and_the_growth_per_run():
    row = lambda run, root, line='': bench.Row(run, root, 500_000, 0, 0, line, 1.0)  # noqa
    without = [row(i, i * 1_000_000) for i in range(1, 5)]
    with_keep = [row(1, 1_000_000), row(2, 2_000_000), row(3, 2_500_000, 'kept 2 runs, ...'),
                 row(4, 2_500_000, 'kept 2 runs, ...')]
    lines = bench.table(without, with_keep, keep=2).splitlines()
    assert lines[2].split()[:4] == ['1', '1.00', '1.00', '1.00']
    assert lines[5].split()[:4] == ['4', '4.00', '2.50', '0.62']
    assert lines[5].endswith('kept 2 runs, ...')
    assert lines[-1] == ('growth per run over the last 2 runs: keep all +1.00 MB, '
                         'keep 2 +0.25 MB')


def test_the_output_table_compares_the_last_run_with_run_8_and_the_halves():
    rows = [bench.Row(i, 0, 0, 0, 0, '', 10.0 if i <= 6 else 11.0, output=(100 + i) * 1_000_000)
            for i in range(1, 13)]
    lines = bench.output_table(rows, keep=3).splitlines()
    assert lines[2].split() == ['1', '101.00', '10.0']
    assert lines[-1] == ('whole output after run 12 / after run 8: 1.037; mean wall time runs '
                         '7-12 / runs 2-6: 1.10')
    assert 'after run 8' not in bench.output_table(rows[:11], keep=3)


def test_the_kubeflow_table_counts_cache_hits_and_missing_inputs_and_compares_run_8():
    rows = [bench.KubeflowRow(i, (10 + min(i, 6)) * 1_000_000, 9_000_000, 1_000_000,
                              'kept 3 runs, ...', int(i == 2), int(i == 3), 5.0)
            for i in range(1, 13)]
    lines = bench.kubeflow_table(rows, keep=3).splitlines()
    assert lines[2].split()[:6] == ['1', '11.00', '9.00', '1.00', '0', '0']
    assert lines[3].split()[4:6] == ['1', '0'] and lines[4].split()[4:6] == ['0', '1']
    assert lines[-2] == 'cache hits: 1; inputs handed over that did not exist: 1'
    assert lines[-1] == 'run root after run 12 / after run 8: 1.000'
    assert 'after run 8' not in bench.kubeflow_table(rows[:11], keep=3)


def test_an_input_is_missing_when_it_is_neither_the_runs_own_nor_existed_before_it():
    existed = ['s3://b/kfp/pipeline_root/smoke/run-1/Trainer/model/saved/file',
               's3://b/kfp/pipeline_root/smoke/run-10/Transform/graph']
    uris = ['s3://b/kfp/pipeline_root/smoke/run-1/Trainer/model',       # a folder that existed
            's3://b/kfp/pipeline_root/smoke/run-10/Transform/graph',    # a file that existed
            's3://b/kfp/pipeline_root/smoke/run-12/Transform/graph',    # the run's own
            's3://b/kfp/pipeline_root/smoke/run-1/Trainer/mod',         # a prefix, not a folder
            's3://b/kfp/pipeline_root/smoke/run-1/Examples/examples']   # deleted
    assert bench.missing_inputs(uris, existed, 'run-12') == uris[3:]
    assert bench.missing_inputs(uris[2:3], existed, 'run-1') == uris[2:3]


def test_the_executor_inputs_are_read_from_the_launchers_flag_in_each_pod():
    """From the pods as the API returns them: Argo's emissary puts its own words before the
    launcher's, which may then be in `command` or in `args`."""
    given = {'inputs': {'artifacts': {'examples': {'artifacts': [{'uri': 's3://b/x'}]}}}}
    flags = ['/kfp-launcher/launch', '--pipeline_name', 'smoke', '--executor_input',
             json.dumps(given), '--', 'python']
    pods = [{'spec': {'containers': [{'name': 'main', 'command': ['/var/run/argo/argoexec',
                                                                  'emissary', '--'],
                                      'args': flags}, {'name': 'wait'}]}},
            {'spec': {'containers': [{'name': 'main', 'command': flags}]}},
            {'spec': {'containers': [{'name': 'main', 'command': ['driver', '--type',
                                                                  'CONTAINER']}]}}]
    assert bench._executor_inputs(pods) == [given, given]
