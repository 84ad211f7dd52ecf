"""The launcher stand-in (tests/support/kfp_launcher.py) across runs and modes: KFP's cache key, the
Vertex AI mode, and TFX's plain run_executor under both, on tiny hand-written specs."""
import os

import pytest

import kfp_driver
import kfp_launcher
from kfp_tiny_specs import EXAMPLES, build, probe, recorded

TFX_RUN_EXECUTOR = ['python', '-m', 'tfx.orchestration.kubeflow.v2.container.'
                    'kubeflow_v2_run_executor']
# TFX's own do-nothing executor: the test is about what TFX's entry point makes of its input.
NOOP = ['--executor_class_path', 'tfx.dsl.components.base.base_executor.EmptyExecutor',
        '--json_serialized_invocation_args', '{{$}}']


@pytest.fixture
def dirs(tmp_path):
    os.makedirs(tmp_path / 'records')
    return str(tmp_path / 'root'), str(tmp_path / 'records'), str(tmp_path / 'pods')


def _ingest_schema_stats(records):
    """The pipeline's shape: uncached ingestion, a cached task without inputs (ImportSchemaGen),
    and a cached task reading the ingested data (StatisticsGen)."""
    return {'Ingest': probe(records, outputs={'examples': EXAMPLES}, cache=False),
            'Schema': probe(records, outputs={'schema': EXAMPLES}, params={
                'schema_file': ('STRING', '/data/schema.pbtxt')}),
            'Stats': probe(records, inputs={'examples': ('Ingest', 'examples')},
                           outputs={'statistics': EXAMPLES})}


def test_the_cache_reuses_a_task_without_new_inputs_from_the_older_run(dirs):
    root, records, pods = dirs
    launcher = kfp_launcher.Launcher(workdir=pods)
    job = build(root, _ingest_schema_stats(records))
    first = launcher.run_job(job, 'run-1')
    second = launcher.run_job(job, 'run-2')
    cached = {task for (run, task), record in launcher.tasks.items()
              if run == 'run-2' and record.cached}
    assert cached == {'Schema'}  # Ingest is uncached; Stats reads a new Examples id
    assert launcher.tasks[('run-2', 'Schema')].pod is None  # no pod started
    assert not os.path.exists(os.path.join(pods, 'run-2', 'Schema'))
    reused = second['Schema'].artifacts['schema'].artifacts[0]
    assert reused == first['Schema'].artifacts['schema'].artifacts[0]  # same id, same URI
    assert f'{root}/rules/run-1/Schema/' in reused.uri and reused.type.instance_schema == ''
    state = launcher.store.executions[launcher.tasks[('run-2', 'Schema')].execution_id]
    assert state.last_known_state == state.CACHED


def test_the_cache_key_ignores_uris_and_follows_inputs_image_and_command(dirs):
    root, records, _ = dirs
    job = build(root, _ingest_schema_stats(records))
    spec = kfp_launcher.json_format.ParseDict(
        kfp_launcher.json_format.MessageToDict(job.pipeline_spec),
        kfp_launcher.pipeline_spec_pb2.PipelineSpec())
    task, component = spec.root.dag.tasks['Stats'], spec.components['Stats_comp']
    container = {'image': 'local', 'command': ['python'], 'args': ['{{$}}']}

    def key(artifact_name='7', uri='/a', image='local', args=('{{$}}',)):
        executor_input = kfp_launcher.pipeline_spec_pb2.ExecutorInput()
        executor_input.inputs.artifacts['examples'].artifacts.add(name=artifact_name, uri=uri)
        executor_input.outputs.artifacts['statistics'].artifacts.add(name='statistics', uri=uri)
        return kfp_driver.fingerprint(task, component, dict(container, image=image,
                                                            args=list(args)), executor_input)
    assert key() == key(uri='/elsewhere')
    assert len({key(), key(artifact_name='8'), key(image='other'), key(args=('x',))}) == 4


def test_cache_disabled_on_the_server_reruns_every_task(dirs):
    root, records, pods = dirs
    launcher = kfp_launcher.Launcher(workdir=pods, cache_disabled=True)
    job = build(root, _ingest_schema_stats(records))
    launcher.run_job(job, 'run-1')
    launcher.run_job(job, 'run-2')
    assert not any(record.cached for record in launcher.tasks.values())


def test_vertex_runs_the_hook_first_and_hands_typed_inputs_with_their_metadata(dirs):
    root, records, pods = dirs
    hook = [['python', 'tests/support/kfp_task_probe.py'], ['{{$}}', '--hook']]
    written = {'artifacts': {'out': {'artifacts': [{'metadata': {'flag': True, 'l': [1]}}]}}}
    job = build(root, {'A': probe(records, outputs={'out': EXAMPLES}, written=written, hook=hook),
                       'B': probe(records, inputs={'examples': ('A', 'out')})})
    launcher = kfp_launcher.Launcher(mode='vertex', workdir=pods)
    launcher.run_job(job, 'job-1')
    a_input = recorded(records, 'A')
    assert a_input['found_output'] == {'parameterValues': {'from_hook': 'yes'}}
    assert 'executor-logs' not in a_input['executor_input']['outputs']['artifacts']
    # Outputs and the executor output file live in the bucket, under the project and job.
    uri = a_input['executor_input']['outputs']['artifacts']['out']['artifacts'][0]['uri']
    assert uri.startswith(f'{root}/123456789012/job-1/A_') and uri.endswith('/out')
    assert a_input['executor_input']['outputs']['outputFile'] == \
        os.path.dirname(uri) + '/executor_output.json'
    [given] = recorded(records, 'B')['executor_input']['inputs']['artifacts']['examples'][
        'artifacts']
    assert given['type'] == {'instanceSchema': EXAMPLES}
    assert given['metadata'] == {'flag': True, 'l': [1]}
    assert given['name'].startswith('projects/123456789012/locations/')
    assert not os.path.exists(launcher.tasks[('job-1', 'B')].pod.path('/gcs'))  # no copies


def _tfx_downstream(root, records):
    return build(root, {'A': probe(records, outputs={'out': EXAMPLES}),
                        'B': {'command': TFX_RUN_EXECUTOR, 'args': NOOP,
                              'inputs': {'examples': ('A', 'out')}}})


def test_tfxs_plain_run_executor_fails_on_a_downstream_task_under_open_source_kfp(dirs):
    root, records, pods = dirs
    with pytest.raises(kfp_launcher.TaskFailed) as failure:
        kfp_launcher.Launcher(workdir=pods).run_job(_tfx_downstream(root, records), 'run-1')
    text = str(failure.value)
    assert text.startswith('failed to execute component: exit status 1')
    assert 'in _retrieve_class_path' in text
    assert "AttributeError: 'NoneType' object has no attribute 'get'" in text


def test_tfxs_plain_run_executor_fails_on_executor_logs_without_inputs(dirs):
    root, _, pods = dirs
    job = build(root, {'A': {'command': TFX_RUN_EXECUTOR, 'args': NOOP,
                             'outputs': {'out': EXAMPLES}}})
    with pytest.raises(kfp_launcher.TaskFailed, match='ImportError: Could not import '
                                                      'system.Artifact'):
        kfp_launcher.Launcher(workdir=pods).run_job(job, 'run-1')


def test_tfxs_plain_run_executor_passes_under_vertex(dirs):
    root, records, pods = dirs
    outputs = kfp_launcher.Launcher(mode='vertex', workdir=pods).run_job(
        _tfx_downstream(root, records), 'job-1')
    assert len(outputs['B'].artifacts) == 0  # ran to the end and wrote its (empty) output
