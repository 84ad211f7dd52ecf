"""Every compiled Kubeflow task's container entry point: `python -m pipeline.kubeflow.entrypoint`.

It takes exactly the arguments of TFX's own entry point
(tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor): --executor_class_path,
--json_serialized_invocation_args (the ExecutorInput, `{{$}}`), --json_serialized_inputs_spec_args
(the component's declared inputs, compiled into every task with PipelineSpec 2.1) and the Beam
args. It rewrites the ExecutorInput, then hands the arguments to that entry point's own parser
and main. No TFX file is changed and nothing of TFX is patched at run time.

Why: TFX's entry point reads the ExecutorInput as Vertex AI hands it over. Open-source KFP's
driver hands it over differently, and every task would fail (docs/kubeflow.md, compatibility):
- Input artifacts arrive untyped: `type.instanceSchema` is "" (backend/src/v2/metadata/client.go
  GetOutputArtifactsByExecutionId, `Schema: ""`, put there by OutputArtifact.ToRuntimeArtifact),
  and TFX's _retrieve_class_path fails with "'NoneType' object has no attribute 'get'". Each
  gets back the type its component declares.
- Their metadata went through ML Metadata (metadata/converter.go StructValueToMLMDValue, read
  back by toRuntimeArtifact): a list comes back as {"list": [...]}, a struct as
  {"struct": {...}}. Both are unwrapped, so executors read the values they read locally. A bool
  comes back as 0/1 and cannot be told from a number; no executor of this pipeline writes one.
- From KFP 2.14, with publish_logs on (the default), the driver adds an output `executor-logs`
  typed `system.Artifact` (driver/driver.go provisionOutputs); TFX would fail with "Could not
  import system.Artifact". Outputs TFX did not compile (TFX types every artifact with an
  instanceSchema: compiler_utils.build_output_artifact_spec) are left out of what TFX parses, so
  TFX's executor output never names them: the launcher keeps its own record of them
  (component/launcher_v2.go uploadOutputArtifacts merges only what the executor output lists,
  and never executor-logs).
Parameters need nothing: the driver fills `inputs.parameterValues` from `runtimeValue.constant`
(driver/resolve.go), which TFX reads, typed by the inputs spec (integers back to int).
- The ingestion task's driver never runs: TFX compiles it as the task's preCacheCheck hook,
  which only Vertex AI runs, so the executor would get `span-{SPAN}` unresolved and no input
  fingerprint. The entry point does that driver's work (run_driver: the component's own
  SpanCheckingDriver, components/ingest/component.py resolve_input) and hands its values over
  as the hook's would reach TFX: as parameters. So spans and "no new data" work the same on
  every orchestrator, and the executor knows none of this.

On Vertex AI inputs are typed and no output is added: the invocation is passed on byte for byte
(after the ExampleGen's preCacheCheck hook, which stays TFX's own driver: open-source KFP never
runs hooks, and on Vertex AI the hook sees typed outputs and no inputs).

After TFX's entry point returns or raises, the task writes its record into its task folder
(pipeline/kubeflow/task_record.py): what retention on Kubeflow knows of the task. A task that
completed but cannot write its record fails: retention would not know what the run uses. The
task whose custom_config holds the run's end (the Pusher's, when --keep-runs, --notify or
--on-finish is set: pipeline/kubeflow/run_end.py) then applies retention and notifies.
"""
import json
import os
import re
import sys
import time
from typing import Dict, List, Optional, Tuple

from absl import app
from absl import logging
from google.protobuf import json_format
from google.protobuf import struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2
import tensorflow as tf
from tfx.components.example_gen import utils as example_gen_utils
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_run_executor

from core import stable_paths, storage, store_watch
from pipeline.kubeflow import run_end as run_end_lib, task_record

# converter.go StructValueToMLMDValue: MLMD has no list value, so a list is stored as the struct
# {"list": <list>} and a struct as {"struct": <struct>}; toRuntimeArtifact hands both back so.
_MLMD_WRAPPERS = {'list': 'list_value', 'struct': 'struct_value'}
# A JSON string value that starts with minio:// (after its opening quote).
_QUOTED_MINIO = re.compile('(?<=")' + re.escape(storage.MINIO))


def _untyped(artifact: pipeline_spec_pb2.RuntimeArtifact) -> bool:
    """As open-source KFP hands over an upstream output: type.instanceSchema "" (or no type)."""
    kind = artifact.type.WhichOneof('kind')
    return kind is None or (kind == 'instance_schema' and not artifact.type.instance_schema)


def _unwrap_mlmd_values(metadata: struct_pb2.Struct) -> List[str]:
    """Replaces each top-level {"list": [...]} / {"struct": {...}} by its content; returns keys."""
    unwrapped = []
    for key in sorted(metadata.fields):
        value = metadata.fields[key]
        if value.WhichOneof('kind') != 'struct_value' or len(value.struct_value.fields) != 1:
            continue
        (wrapper, inner), = value.struct_value.fields.items()
        if _MLMD_WRAPPERS.get(wrapper) == inner.WhichOneof('kind'):
            content = struct_pb2.Value()
            content.CopyFrom(inner)  # a copy first: inner is part of the value it replaces
            metadata.fields[key].CopyFrom(content)
            unwrapped.append(key)
    return unwrapped


def prepare(executor_input: pipeline_spec_pb2.ExecutorInput,
            inputs_spec: Optional[pipeline_spec_pb2.ComponentInputsSpec]) -> List[str]:
    """Rewrites executor_input in place for TFX; returns what was done (empty: nothing)."""
    done = []
    for key, artifact_list in executor_input.inputs.artifacts.items():
        for artifact in artifact_list.artifacts:
            if not _untyped(artifact):
                continue  # typed (Vertex AI): as it is
            if inputs_spec is None or key not in inputs_spec.artifacts:
                raise ValueError(
                    f'Input artifact {key!r} arrived without a type and the task declares none '
                    '(--json_serialized_inputs_spec_args): compile with PipelineSpec 2.1 '
                    '(pipeline/kubeflow/compiler.py)')
            artifact.type.CopyFrom(inputs_spec.artifacts[key].artifact_type)
            done.append(f'typed input {key} (ML Metadata id {artifact.name}) as declared')
            unwrapped = _unwrap_mlmd_values(artifact.metadata)
            if unwrapped:
                done.append(f'unwrapped {key} metadata {", ".join(unwrapped)}')
    outputs = executor_input.outputs.artifacts
    for key in sorted(outputs):
        if any(a.type.WhichOneof('kind') != 'instance_schema' for a in outputs[key].artifacts):
            del outputs[key]
            done.append(f'left output {key} to the launcher')
    return done


def run_driver(executor_input: pipeline_spec_pb2.ExecutorInput,
               inputs_spec: Optional[pipeline_spec_pb2.ComponentInputsSpec],
               executor_class_path: str) -> List[str]:
    """The ingestion task's driver work, where none ran (see the module's docstring): its
    resolved input config, span, version and fingerprint become the task's parameters, in
    place. Returns what was done (empty: another task, or a driver ran)."""
    parameters = executor_input.inputs.parameter_values
    if 'input_config' not in parameters or example_gen_utils.FINGERPRINT_PROPERTY_NAME in \
            parameters or tf.io.gfile.exists(executor_input.outputs.output_file):
        return []  # not ingestion, or a driver ran: Vertex AI's hook wrote its values to the
    # output file, which TFX's run_executor merges (KFP's is a fresh local file per attempt)
    from components.ingest import component as ingest  # only a task with an input config
    executor = ingest.ImageExampleGen.EXECUTOR_SPEC.executor_class
    if executor_class_path != f'{executor.__module__}.{executor.__qualname__}':
        return []
    resolved = ingest.resolve_input(kubeflow_v2_entrypoint_utils.parse_execution_properties(
        parameters, executor_input.inputs.parameters, inputs_spec))
    if not resolved.get(example_gen_utils.FINGERPRINT_PROPERTY_NAME):
        return []  # matched nothing: the executor's input checks say what
    for key in ('input_config', example_gen_utils.SPAN_PROPERTY_NAME,
                example_gen_utils.VERSION_PROPERTY_NAME,
                example_gen_utils.FINGERPRINT_PROPERTY_NAME):
        value = resolved.get(key)
        if isinstance(value, str):
            parameters[key].string_value = value
        elif value is not None:  # no version: none is given, as the hook gives none
            parameters[key].number_value = value
    return [f'resolved span {resolved[example_gen_utils.SPAN_PROPERTY_NAME]} and fingerprinted '
            'the input (no driver ran)']


def _artifacts(executor_input: pipeline_spec_pb2.ExecutorInput):
    for side in (executor_input.inputs.artifacts, executor_input.outputs.artifacts):
        for artifact_list in side.values():
            yield from artifact_list.artifacts


def parameter_to_s3(text: str) -> str:
    """A string parameter with minio:// read as s3://: the whole value, or each JSON string in
    it that starts with minio:// (TFX passes a proto exec property as JSON text: the Pusher's
    push_destination holds {"filesystem": {"base_directory": "minio://..."}})."""
    return _QUOTED_MINIO.sub(storage.S3, storage.to_s3(text))


def to_s3(executor_input: pipeline_spec_pb2.ExecutorInput) -> Dict[str, str]:
    """minio:// artifact URIs and string parameters (parameter_to_s3) as s3:// in place, which
    TensorFlow and Beam read (core/storage.py); returns {s3 URI: minio URI} of the
    outputs, which the task's ExecutorOutput must name as KFP handed them: the launcher takes a
    URI listed there (component/launcher_v2.go mergeRuntimeArtifacts) and then refuses one
    outside its bucket configuration (uploadOutputArtifacts, bucketConfig.KeyFromURI)."""
    restore = {storage.to_s3(a.uri): a.uri for lst in executor_input.outputs.artifacts.values()
               for a in lst.artifacts if a.uri.startswith(storage.MINIO)}
    for artifact in _artifacts(executor_input):
        artifact.uri = storage.to_s3(artifact.uri)
    for value in executor_input.inputs.parameter_values.values():
        if value.WhichOneof('kind') == 'string_value':
            value.string_value = parameter_to_s3(value.string_value)
    return restore


def check_run_root(executor_input: pipeline_spec_pb2.ExecutorInput) -> None:
    """ValueError when KFP puts this run's artifacts outside the root the pipeline was compiled
    for. KFP lets a run choose its root (the run's runtime config, else the kfp-launcher
    ConfigMap's defaultPipelineRoot: driver/root_dag.go), and puts every output under it
    (driver/driver.go provisionOutputs). But the span index, checkpoints and serving versions
    live under the compiled root (the `pipeline_root` parameter), so a run elsewhere would read
    and write another run's side state."""
    compiled = executor_input.inputs.parameter_values.get(stable_paths.PIPELINE_ROOT)
    if compiled is None or not compiled.string_value:
        return
    root = storage.normpath(compiled.string_value).rstrip('/') + '/'
    outside = sorted(a.uri for lst in executor_input.outputs.artifacts.values()
                     for a in lst.artifacts if not storage.normpath(a.uri).startswith(root))
    if outside:
        raise ValueError(
            f'This run stores its artifacts outside the pipeline root it was compiled for: '
            f'{outside[0]} is not under {root}. The span index, checkpoints and serving '
            'versions are kept under the compiled root, so a run elsewhere would mix another '
            'run\'s state. Create the run with that pipeline root (runner.py --kubeflow '
            '--schedule does), or compile with --pipeline-root set to the root you run with '
            '(docs/kubeflow.md, "Object stores").')


def _parse(invocation: str) -> pipeline_spec_pb2.ExecutorInput:
    # Parsed as TFX's _run_executor parses it.
    return json_format.Parse(invocation, pipeline_spec_pb2.ExecutorInput(),
                             ignore_unknown_fields=True)


def prepare_invocation(invocation: str, inputs_spec_json: Optional[str],
                       executor_class_path: str = '') -> str:
    """The --json_serialized_invocation_args TFX gets: the given text when nothing changes."""
    executor_input = _parse(invocation)
    inputs_spec = None
    if inputs_spec_json:
        inputs_spec = json_format.Parse(inputs_spec_json, pipeline_spec_pb2.ComponentInputsSpec(),
                                        ignore_unknown_fields=True)
    mapped = to_s3(executor_input) or storage.MINIO in invocation
    check_run_root(executor_input)
    # Before TFX touches a URI: TensorFlow's s3:// scheme, and this task's own exit code.
    storage.enable_for([a.uri for a in _artifacts(executor_input)])
    done = prepare(executor_input, inputs_spec)
    done += run_driver(executor_input, inputs_spec, executor_class_path)
    if mapped:
        done.append('read minio:// URIs as s3://')
    if not done:
        return invocation
    logging.info('ExecutorInput prepared for TFX: %s', '; '.join(done))
    return json_format.MessageToJson(executor_input)


def restore_output_uris(output_file: str, restore: Dict[str, str]) -> None:
    """Names the outputs in TFX's ExecutorOutput file as KFP handed them (see to_s3)."""
    text = storage.read_text(output_file) if restore else None
    if text is None:
        return
    output = json.loads(text)
    for artifact_list in output.get('artifacts', {}).values():
        for artifact in artifact_list.get('artifacts', ()):
            artifact['uri'] = restore.get(artifact.get('uri'), artifact.get('uri'))
    with tf.io.gfile.GFile(output_file, 'w') as handle:
        json.dump(output, handle)


def parse_flags(argv: List[str]) -> Tuple[object, List[str]]:
    """TFX's flags, parsed by TFX's own parser, with the ExecutorInput prepared."""
    logging.set_verbosity(logging.INFO)  # as TFX's _run_executor sets it
    args, beam_args = kubeflow_v2_run_executor._parse_flags(argv)  # pylint: disable=protected-access
    args.started = time.time()
    args.original_input = _parse(args.json_serialized_invocation_args)
    args.restore_uris = to_s3(_parse(args.json_serialized_invocation_args))
    args.json_serialized_invocation_args = prepare_invocation(
        args.json_serialized_invocation_args, args.json_serialized_inputs_spec_args,
        args.executor_class_path)
    return args, beam_args


def write_record(args, state: str, error: Optional[str] = None) -> Optional[str]:
    """The task's record in its task folder (pipeline/kubeflow/task_record.py); the folder, or None
    when the outputs share no task folder (nothing to record beside)."""
    prepared = _parse(args.json_serialized_invocation_args)
    folder = task_record.task_root(args.original_input)
    if folder is None:
        logging.warning('No task record: the outputs share no task folder')
        return None
    run_end = run_end_lib.from_parameters(prepared.inputs.parameter_values) is not None
    record = task_record.make(
        prepared, args.original_input, state, args.started, error,
        prepared.outputs.output_file if state == task_record.COMPLETE else None, run_end)
    task_record.write(record, folder)
    return folder


def store_down(args, down: store_watch.StoreDown) -> None:
    """Ends the task whose store did not answer for the bound (core/store_watch.py): one line
    in the pod's log, every process below it killed (Beam's, the trainer's workers), exit 75,
    so that KFP marks the task failed and its retry policy, or the next scheduled run, starts
    afresh. No task record: it would be written to the store that does not answer."""
    line = down.line(args.executor_class_path.rsplit('.', 2)[0],
                     store_watch.current_operation())
    logging.error('%s', line)
    print(line, file=sys.stderr, flush=True)
    buffers = storage.remove_upload_buffers([os.getpid(), *store_watch.descendants()])
    store_watch.kill_descendants()
    logging.info('Unsent upload buffers deleted: %s', buffers or 'none')
    sys.stdout.flush()
    os._exit(store_watch.EXIT_STORE_DOWN)  # pylint: disable=protected-access


def _watch(args) -> store_watch.Watch:
    """The store watch of this task, over the buckets of its artifacts."""
    buckets = {storage.bucket_of(a.uri) for a in _artifacts(_parse(
        args.json_serialized_invocation_args)) if storage.is_object_store(a.uri)}
    return store_watch.Watch(buckets, store_watch.bound_from_env(),
                             lambda down: store_down(args, down))


def run(parsed: Tuple[object, List[str]]) -> None:
    """TFX's entry point on the prepared arguments, its record, then the output URIs KFP must
    see; within the store's bound (store_down)."""
    args, _ = parsed
    watch = _watch(args).start()
    try:
        _run(parsed, watch)
    finally:
        watch.stop()


def _run(parsed: Tuple[object, List[str]], watch: store_watch.Watch) -> None:
    args, _ = parsed
    try:
        kubeflow_v2_run_executor.main(parsed)
    except BaseException as error:
        down = watch.check()  # failed as its store went away: that is the reason
        if down is not None:
            store_down(args, down)
        try:  # the failure stays the task's error; a record that cannot be written is logged
            write_record(args, task_record.FAILED, f'{type(error).__name__}: {error}'[:2000])
        except Exception as failed:  # pylint: disable=broad-except
            logging.warning('Could not write the failed task\'s record: %s', failed)
        raise
    prepared = _parse(args.json_serialized_invocation_args)
    folder = write_record(args, task_record.COMPLETE)
    run_end = run_end_lib.from_parameters(prepared.inputs.parameter_values)
    if run_end is not None and folder is not None:
        run_end_lib.after_push(run_end, folder,
                               prepared.inputs.parameter_values['custom_config'].string_value)
    restore_output_uris(prepared.outputs.output_file, args.restore_uris)


def main(argv: List[str]) -> None:
    """Runs the task in this process, as `python -m pipeline.kubeflow.entrypoint` does."""
    run(parse_flags(argv))


if __name__ == '__main__':
    app.run(run, flags_parser=parse_flags)
