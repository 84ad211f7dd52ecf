"""What Vertex AI Pipelines hands a task where open-source KFP differs (kfp_launcher.py's mode
'vertex'). Vertex AI's orchestrator is closed source: these shapes are what TFX's Vertex entry
point expects (tfx/orchestration/kubeflow/v2/container/kubeflow_v2_run_executor.py: "Format
{pipelineJob.runtimeConfig.gcsOutputDirectory}/{project_number}/{pipeline_job_user_id}/
{task_name}_{task_uuid}/executor_output.json") and what Vertex ML Metadata stores (an artifact's
metadata is a Struct, kept as written). Test support only (no TFX imports).
"""
import uuid

from kfp.pipeline_spec import pipeline_spec_pb2

PROJECT, REGION = '123456789012', 'us-central1'


def resource_name(artifact_id) -> str:
    """Vertex ML Metadata names an artifact by its resource name, not a bare id."""
    return f'projects/{PROJECT}/locations/{REGION}/metadataStores/default/artifacts/{artifact_id}'


def run_root(root: str, job_id: str) -> str:
    return f"{root.rstrip('/')}/{PROJECT}/{job_id}"


def input_artifact(recorded: pipeline_spec_pb2.RuntimeArtifact, artifact_id: int
                   ) -> pipeline_spec_pb2.RuntimeArtifact:
    """An upstream output as Vertex AI hands it on: typed as its producer declared it, its
    metadata as the producer wrote it (bools stay bools, lists and structs unwrapped)."""
    artifact = pipeline_spec_pb2.RuntimeArtifact()
    artifact.CopyFrom(recorded)
    artifact.name = resource_name(artifact_id)
    return artifact


def provision_outputs(job_root: str, task_name: str, outputs_spec
                      ) -> pipeline_spec_pb2.ExecutorInput.Outputs:
    """<root>/<project number>/<job id>/<task>_<task id>/<key>, no executor-logs, and the
    executor output file beside them in the bucket, where the preCacheCheck hook and the
    executor both see it (TFX's run_executor reads the hook's parameters from it)."""
    outputs = pipeline_spec_pb2.ExecutorInput.Outputs()
    task_root = f'{job_root}/{task_name}_{uuid.uuid4().int % 10 ** 19}'
    for key, spec in outputs_spec.artifacts.items():
        artifact = outputs.artifacts[key].artifacts.add(
            name=resource_name(uuid.uuid4().hex), uri=f'{task_root}/{key}')
        artifact.type.CopyFrom(spec.artifact_type)
    outputs.output_file = f'{task_root}/executor_output.json'
    return outputs
