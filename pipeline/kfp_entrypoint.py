"""The container entry point of every compiled Kubeflow task: `python -m pipeline.kfp_entrypoint`.

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

On Vertex AI inputs are typed and no output is added: the invocation is passed on byte for byte
(after the ExampleGen's preCacheCheck hook, which stays TFX's own driver: open-source KFP never
runs hooks, and on Vertex AI the hook sees typed outputs and no inputs).
"""
from typing import List, Optional, Tuple

from absl import app
from absl import logging
from google.protobuf import json_format
from google.protobuf import struct_pb2
from kfp.pipeline_spec import pipeline_spec_pb2
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_run_executor

# converter.go StructValueToMLMDValue: MLMD has no list value, so a list is stored as the struct
# {"list": <list>} and a struct as {"struct": <struct>}; toRuntimeArtifact hands both back so.
_MLMD_WRAPPERS = {'list': 'list_value', 'struct': 'struct_value'}


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
                    '(pipeline/kubeflow.py)')
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


def prepare_invocation(invocation: str, inputs_spec_json: Optional[str]) -> str:
    """The --json_serialized_invocation_args TFX gets: the given text when nothing changes."""
    executor_input = pipeline_spec_pb2.ExecutorInput()
    # Parsed as TFX's _run_executor parses it.
    json_format.Parse(invocation, executor_input, ignore_unknown_fields=True)
    inputs_spec = None
    if inputs_spec_json:
        inputs_spec = json_format.Parse(inputs_spec_json, pipeline_spec_pb2.ComponentInputsSpec(),
                                        ignore_unknown_fields=True)
    done = prepare(executor_input, inputs_spec)
    if not done:
        return invocation
    logging.info('ExecutorInput prepared for TFX: %s', '; '.join(done))
    return json_format.MessageToJson(executor_input)


def parse_flags(argv: List[str]) -> Tuple[object, List[str]]:
    """TFX's flags, parsed by TFX's own parser, with the ExecutorInput prepared."""
    logging.set_verbosity(logging.INFO)  # as TFX's _run_executor sets it
    args, beam_args = kubeflow_v2_run_executor._parse_flags(argv)  # pylint: disable=protected-access
    args.json_serialized_invocation_args = prepare_invocation(
        args.json_serialized_invocation_args, args.json_serialized_inputs_spec_args)
    return args, beam_args


def main(argv: List[str]) -> None:
    """Runs the task in this process, as `python -m pipeline.kfp_entrypoint` does."""
    kubeflow_v2_run_executor.main(parse_flags(argv))


if __name__ == '__main__':
    app.run(kubeflow_v2_run_executor.main, flags_parser=parse_flags)
