"""The compiled Kubeflow spec, parsed strictly into KFP's protos: tasks, DAG, image, resources.

Compiles through the real command line (`runner.py --kubeflow`), as a user would.
"""
import json
import os
import sys

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
import pytest

from helpers import REPO_ROOT, run_command

IMAGE = 'europe-docker.pkg.dev/acme/ml/image-pipeline:1.0'
ROOT = 'gs://acme-ml/image-pipeline'
BEAM = '--runner=DataflowRunner --project=acme --region=europe-west4'
# Our entry point (pipeline/kubeflow/entrypoint.py), which prepares the ExecutorInput for TFX's.
ENTRYPOINT = ['python', '-m', 'pipeline.kubeflow.entrypoint']

# Every task and the tasks it waits for: data flow, plus the gate before training.
EXPECTED_DAG = {
    'ImageExampleGen': set(),
    'ImportSchemaGen': set(),
    'StatisticsGen': {'ImageExampleGen'},
    'ExampleValidator': {'StatisticsGen', 'ImportSchemaGen'},
    'AnomalyGate': {'ExampleValidator'},
    'ImageTrainer': {'ImageExampleGen', 'AnomalyGate'},
    'ServedModelBaseline': {'ImageTrainer'},
    'DriftCheck': {'StatisticsGen', 'ImageExampleGen', 'ServedModelBaseline'},
    'Evaluator': {'ImageExampleGen', 'ImageTrainer', 'ServedModelBaseline', 'DriftCheck'},
    'Pusher': {'ImageTrainer', 'Evaluator'},
}


@pytest.fixture(scope='module')
def compiled(tmp_path_factory):
    output = str(tmp_path_factory.mktemp('kfp') / 'pipeline.json')
    result = run_command(
        [sys.executable, 'runner.py', '--kubeflow', '--image', IMAGE, '--pipeline-root', ROOT,
         '--output', output, '--beam-args', BEAM, '--trainer-cpu', '8', '--trainer-memory', '30',
         '--trainer-gpus', '2'], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return output, result


def test_the_compile_prints_one_line_and_logs_the_rest_beside_the_spec(compiled):
    output, result = compiled
    log = output[:-len('.json')] + '.log'
    # The second line says what each run does at its end (default --keep-runs 3).
    assert result.stdout == (f'Compiled {output}; log: {log}\nAt the end of each run (in the '
                             "Pusher's task): retention keeps the newest 3 runs (every task "
                             'uncached)\n') and result.stderr == ''
    with open(log) as handle:
        assert ' I ' in handle.read()  # TFX's INFO lines of the compile


@pytest.fixture(scope='module')
def job(compiled):
    output, _ = compiled
    assert not os.path.exists(os.path.join(REPO_ROOT, 'gs:'))  # the URI was never used as a path
    with open(output) as handle:
        text = handle.read()
    # Strict: an unknown field anywhere fails the parse.
    return json_format.Parse(text, pipeline_spec_pb2.PipelineJob(), ignore_unknown_fields=False)


@pytest.fixture(scope='module')
def spec(job):
    return json_format.ParseDict(json_format.MessageToDict(job.pipeline_spec),
                                 pipeline_spec_pb2.PipelineSpec(), ignore_unknown_fields=False)


def _container(spec, task_name):
    task = spec.root.dag.tasks[task_name]
    executor_label = spec.components[task.component_ref.name].executor_label
    return spec.deployment_spec.fields['executors'].struct_value.fields[executor_label]


def _container_spec(spec, task_name):
    executor = pipeline_spec_pb2.PipelineDeploymentConfig.ExecutorSpec()
    json_format.ParseDict(json_format.MessageToDict(_container(spec, task_name)), executor,
                          ignore_unknown_fields=False)
    assert executor.WhichOneof('spec') == 'container', task_name  # no resolver or importer
    return executor.container


def test_every_task_and_its_dependencies(spec):
    tasks = spec.root.dag.tasks
    assert {name: set(task.dependent_tasks) for name, task in tasks.items()} == EXPECTED_DAG
    assert spec.pipeline_info.name == 'image-pipeline'
    assert spec.schema_version == '2.1.0'  # the only version open-source KFP's API accepts


def test_artifacts_flow_from_the_producing_tasks(spec):
    inputs = spec.root.dag.tasks['Evaluator'].inputs.artifacts
    assert inputs['baseline_model'].task_output_artifact.producer_task == 'ServedModelBaseline'
    assert inputs['model'].task_output_artifact.producer_task == 'ImageTrainer'
    assert inputs['examples'].task_output_artifact.producer_task == 'ImageExampleGen'
    assert inputs['drift'].task_output_artifact.producer_task == 'DriftCheck'
    baseline = spec.root.dag.tasks['DriftCheck'].inputs.artifacts['baseline']
    assert baseline.task_output_artifact.producer_task == 'ServedModelBaseline'
    candidate = spec.root.dag.tasks['ServedModelBaseline'].inputs.artifacts['candidate']
    assert candidate.task_output_artifact.output_artifact_key == 'model'


def _inputs_spec(spec, task_name, json_text):
    """The --json_serialized_inputs_spec_args value, parsed strictly: the component's inputs."""
    inputs = json_format.Parse(json_text, pipeline_spec_pb2.ComponentInputsSpec(),
                               ignore_unknown_fields=False)
    component = spec.components[spec.root.dag.tasks[task_name].component_ref.name]
    assert inputs == component.input_definitions, task_name
    return inputs


def test_every_task_runs_our_entry_point_in_our_image_with_the_beam_args(spec):
    for name in EXPECTED_DAG:
        container = _container_spec(spec, name)
        assert container.image == IMAGE
        assert list(container.command) == ENTRYPOINT
        args = list(container.args)
        assert args[:6] == ['--executor_class_path', args[1], '--json_serialized_invocation_args',
                            '{{$}}', '--json_serialized_inputs_spec_args', args[5]]
        # Given args naming no dependency get the project's setup file, as the image sees it:
        # Dataflow's workers need this code (pipeline/definition/beam_mode.py resolve).
        assert args[6:] == BEAM.split() + ['--setup_file=/pipeline/setup.py'], name
        # The declared inputs, from which the entry point types what open-source KFP hands
        # over untyped: every input artifact of the task, with its TFX type.
        declared = _inputs_spec(spec, name, args[5])
        task = spec.root.dag.tasks[name]
        assert set(declared.artifacts) == set(task.inputs.artifacts), name
        assert all(a.artifact_type.instance_schema.startswith('title: tfx.')
                   for a in declared.artifacts.values()), name
        assert set(declared.parameters) == set(task.inputs.parameters), name
    declared = _inputs_spec(spec, 'Evaluator', _container_spec(spec, 'Evaluator').args[5])
    assert declared.artifacts['model'].artifact_type.instance_schema.startswith(
        'title: tfx.Model\n')
    assert _container_spec(spec, 'ServedModelBaseline').args[1] == \
        'components.baseline.executor.Executor'
    assert _container_spec(spec, 'Evaluator').args[1] == 'components.evaluate.executor.Executor'


def test_ingestion_has_the_fingerprint_driver_and_is_not_cached(spec):
    container = _container_spec(spec, 'ImageExampleGen')
    hook = container.lifecycle.pre_cache_check
    # TFX's own driver: only Vertex AI runs the hook, and there it needs no preparing.
    assert list(hook.command) == [
        'python', '-m', 'tfx.orchestration.kubeflow.v2.file_based_example_gen.driver']
    assert list(hook.args[:3]) == ['--json_serialized_invocation_args', '{{$}}',
                                   '--json_serialized_inputs_spec_args']
    _inputs_spec(spec, 'ImageExampleGen', hook.args[3])
    # With retention (the default --keep-runs 3) no task is cached: docs/kubeflow.md
    # "Retention"; tests/pipeline/kubeflow/test_run_end.py compiles the other cases.
    assert not [n for n in EXPECTED_DAG if spec.root.dag.tasks[n].caching_options.enable_cache]


def test_only_the_trainer_has_resources(spec):
    resources = _container_spec(spec, 'ImageTrainer').resources
    assert (resources.cpu_limit, resources.memory_limit) == (8.0, 30.0)
    assert (resources.resource_cpu_limit, resources.resource_memory_limit) == ('8', '30G')
    assert (resources.resource_cpu_request, resources.resource_memory_request) == ('8', '30G')
    assert resources.accelerator.type == resources.accelerator.resource_type == 'nvidia.com/gpu'
    assert (resources.accelerator.count, resources.accelerator.resource_count) == (2, '2')
    for name in EXPECTED_DAG:
        if name != 'ImageTrainer':
            assert not _container_spec(spec, name).HasField('resources'), name


def _parameter(spec, task, name):
    # Schema 2.1.0: `runtimeValue.constant` (what KFP's driver reads, resolve.go), its type in
    # the component's inputDefinitions.
    component = spec.components[spec.root.dag.tasks[task].component_ref.name]
    assert component.input_definitions.parameters[name].parameter_type == \
        pipeline_spec_pb2.ParameterType.STRING, (task, name)
    return spec.root.dag.tasks[task].inputs.parameters[name].runtime_value.constant.string_value


def test_parameters_are_2_1_constants_typed_in_the_components(spec):
    ParameterType = pipeline_spec_pb2.ParameterType
    kinds = {ParameterType.NUMBER_INTEGER: 'number_value', ParameterType.NUMBER_DOUBLE:
             'number_value', ParameterType.STRING: 'string_value'}
    seen = set()
    for name, task in spec.root.dag.tasks.items():
        definitions = spec.components[task.component_ref.name].input_definitions.parameters
        for key, parameter in task.inputs.parameters.items():
            assert not parameter.runtime_value.HasField('constant_value'), (name, key)
            kind = definitions[key].parameter_type
            assert parameter.runtime_value.constant.WhichOneof('kind') == kinds[kind], (name, key)
            seen.add(kind)
    # Lists and dicts are compiled as JSON strings, a bool as an integer (compiler_utils).
    assert seen == set(kinds)
    trainer = spec.root.dag.tasks['ImageTrainer'].inputs.parameters
    assert trainer['global_batch_size'].runtime_value.constant.number_value == 0  # from the data
    assert trainer['label_smoothing'].runtime_value.constant.number_value == 0.1
    assert trainer['learning_rate'].runtime_value.constant.number_value == 0.003


def test_paths_point_into_the_image_and_the_pipeline_root(job, spec):
    assert job.runtime_config.gcs_output_directory == ROOT + '/pipeline_root'
    assert _parameter(spec, 'ImageExampleGen', 'input_base') == '/pipeline/data/digits'
    assert _parameter(spec, 'ImportSchemaGen', 'schema_file') == \
        '/pipeline/data/schema/digits.pbtxt'
    assert _parameter(spec, 'ServedModelBaseline', 'serving_dir') == ROOT + '/serving'
    destination = json.loads(_parameter(spec, 'Pusher', 'push_destination'))
    assert destination['filesystem']['base_directory'] == ROOT + '/serving'


def _compile(output, *flags):
    return run_command(
        [sys.executable, 'runner.py', '--kubeflow', '--image', IMAGE, '--pipeline-root', ROOT,
         '--output', output, '--trainer-cpu', '8', '--trainer-memory', '30',
         '--trainer-gpus', '2', *flags], timeout=300)


def test_trainer_workers_compile_a_tfjob_with_the_trainer_resources_per_worker(tmp_path):
    from launch import launchers
    from pipeline.kubeflow.jobs import tfjob
    output = str(tmp_path / 'pipeline.json')
    result = _compile(output, '--trainer-workers', '2', '--trainer-service-account', 'trainer')
    assert result.returncode == 0, result.stderr[-3000:]
    with open(output) as handle:
        spec = json_format.ParseDict(json.load(handle)['pipelineSpec'],
                                     pipeline_spec_pb2.PipelineSpec())
    choice = launchers.Choice.from_json(_parameter(spec, 'ImageTrainer', 'launcher'))
    assert choice.name == 'kubernetes'
    assert tfjob.TFJobSpec.from_json(choice.spec) == tfjob.TFJobSpec(
        workers=2, image=IMAGE, cpu=8.0, memory_gb=30.0, gpus=2,
        gpu_resource='nvidia.com/gpu', service_account='trainer')
    # The task itself only creates and watches the job: no GPU, little CPU and memory.
    resources = _container_spec(spec, 'ImageTrainer').resources
    assert (resources.resource_cpu_limit, resources.resource_memory_limit) == ('1', '4G')
    assert not resources.HasField('accelerator')
    # Ingestion leaves every pod train shards of its own (FILE sharding): at least 3 of them.
    result = _compile(output, '--trainer-workers', '3', '--batch-size', '48')
    assert result.returncode == 0, result.stderr[-3000:]
    with open(output) as handle:
        parameters = json.load(handle)['pipelineSpec']['root']['dag']['tasks'][
            'ImageExampleGen']['inputs']['parameters']
    assert {k: parameters[k]['runtimeValue']['constant'] for k in (
        'num_shards', 'min_train_shards')} == {'num_shards': 3, 'min_train_shards': 3}


def test_without_trainer_workers_the_task_trains_in_its_own_pod(spec):
    assert 'launcher' not in spec.root.dag.tasks['ImageTrainer'].inputs.parameters


def test_workers_and_trainer_workers_are_exclusive_and_must_split_the_batch(tmp_path):
    output = str(tmp_path / 'pipeline.json')
    result = _compile(output, '--trainer-workers', '2', '--workers', '2')
    assert result.returncode == 2 and 'not both' in result.stderr
    result = _compile(output, '--trainer-workers', '3', '--batch-size', '32')
    assert result.returncode == 2 and 'split global_batch_size (32) evenly, got 3' in \
        result.stderr
    assert not os.path.exists(output)
