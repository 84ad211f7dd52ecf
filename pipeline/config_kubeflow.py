"""Settings of the Kubeflow compile and schedule, kept out of pipeline/config.py (over size).

KubeflowConfig: how the pipeline is compiled for, and scheduled on, Kubeflow Pipelines
(pipeline/kubeflow.py, pipeline/kubeflow_schedule.py): `runner.py --kubeflow` flags over the
config file's [kubeflow] table (config.example.toml). check_kubeflow_root: the pipeline roots
the tasks can write (gs://, s3://, minio://). pipeline/config.py re-exports both; uses_s3 and
SECRET_KEYS (the object store's credentials on Kubeflow, pipeline/kubeflow.py) live here only.
"""
import dataclasses
import re
from typing import Optional

from pipeline.config_retraining import _check

# A Kubernetes namespace (RFC 1123 label), as a Kubeflow profile names one.
NAMESPACE = r'[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?'
# The scoring pipeline's spec without --output (pipeline/kubeflow_score.py): never the training
# pipeline's file.
SCORE_SPEC_FILE = 'score_pipeline.json'
# Roots on an S3-compatible store: s3:// (AWS S3 or any S3 API) and minio://, open-source KFP's
# name for the S3 API at the cluster's endpoint (backend/src/v2/objectstore/config.go).
S3_SCHEMES = ('s3://', 'minio://')
# The keys of KFP's object-store Secret (backend/src/v2/config/env.go: minioArtifactAccessKeyKey
# "accesskey", minioArtifactSecretKeyKey "secretkey", in the Secret minioArtifactSecretName
# "mlpipeline-minio-artifact") and the standard variables every task gets them as.
SECRET_KEYS = (('accesskey', 'AWS_ACCESS_KEY_ID'), ('secretkey', 'AWS_SECRET_ACCESS_KEY'))
# A Kubernetes object name that is a DNS-1123 subdomain (service accounts, Secrets).
_SUBDOMAIN = r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'


@dataclasses.dataclass(frozen=True)
class KubeflowConfig:
    """How the pipeline is compiled for, and scheduled on, Kubeflow Pipelines
    (pipeline/kubeflow.py).

    The pipeline itself is the same PipelineConfig; its output_dir is then the run root on storage
    the cluster reads (gs://...): TFX artifacts go under <output_dir>/pipeline_root, pushed models
    under <output_dir>/serving, as locally.
    """
    image: str
    output_file: str = 'pipeline.json'
    # Where the Dockerfile puts this checkout in the image: paths inside the checkout (the
    # embedded data and schema, setup.py in the Beam args) are rewritten to this folder.
    image_workdir: str = '/pipeline'
    trainer_cpu: float = 4.0           # cores requested and limited for the trainer's task
    trainer_memory_gb: float = 16.0
    trainer_gpus: int = 0
    gpu_type: str = 'nvidia.com/gpu'   # Kubernetes resource name (Vertex AI: e.g. NVIDIA_TESLA_T4)
    # > 1: the trainer's task creates a Kubeflow Trainer v2 TrainJob of this many workers, or a
    # TFJob (Training Operator v1, deprecated) where the cluster serves only that, each with the
    # trainer's cpu/memory/gpus, and waits for it (launch/cluster.py).
    trainer_workers: int = 1
    # The Kubernetes service account of those worker pods (e.g. one bound to a cloud identity
    # that can write the gs:// pipeline root); '' = the namespace's default.
    trainer_service_account: str = ''
    # Open-source KFP does not run TFX's pre-cache-check hook that fingerprints the input files,
    # so a cached ingestion task would never see new images there: it is compiled uncached.
    cache_ingestion: bool = False
    # An s3:// or minio:// pipeline root (docs/kubeflow.md, "Object stores"): every task writes
    # its artifacts itself, so every task container gets the store's endpoint and region as
    # plain variables (AWS_ENDPOINT_URL, AWS_REGION) and the keys `accesskey` and `secretkey` of
    # this Secret, in the run's namespace, as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the
    # platform spec's secretAsEnv; only the names are compiled, never a value). The defaults are
    # open-source KFP 2.17's own store: SeaweedFS at seaweedfs.kubeflow:9000 and its Secret
    # (backend/src/v2/objectstore/config.go DefaultEndpointInMultiUserMode, config/env.go).
    # s3_secret '' = no Secret (e.g. IAM roles for service accounts on EKS); s3_endpoint '' =
    # AWS's own endpoint for the region. A gs:// root gets none of these.
    s3_secret: str = 'mlpipeline-minio-artifact'
    s3_endpoint: str = 'http://seaweedfs.kubeflow:9000'
    s3_region: str = 'us-east-1'
    # Scheduling (only with an endpoint): KFP API URL, cron expression, experiment name.
    endpoint: Optional[str] = None
    schedule: Optional[str] = None
    experiment: str = 'Default'
    # A full Kubeflow install runs KFP in multi-user mode: the pipeline, experiment and recurring
    # run belong to a profile namespace, and every call needs a user identity. At most one of:
    # a token file (re-read for every call, as projected tokens rotate), the name of an
    # environment variable holding a token, or the pod's projected service-account token.
    namespace: Optional[str] = None
    token_file: Optional[str] = None
    token_env: Optional[str] = None
    service_account_token: bool = False

    def __post_init__(self):
        _check(bool(self.image) and ' ' not in self.image, f'image must be set, got {self.image!r}')
        _check(self.image_workdir.startswith('/'),
               f'image_workdir must be absolute, got {self.image_workdir!r}')
        _check(self.trainer_cpu > 0, f'trainer_cpu must be > 0, got {self.trainer_cpu}')
        _check(self.trainer_memory_gb > 0,
               f'trainer_memory_gb must be > 0, got {self.trainer_memory_gb}')
        _check(self.trainer_gpus >= 0, f'trainer_gpus must be >= 0, got {self.trainer_gpus}')
        _check(self.trainer_workers >= 1,
               f'trainer_workers must be >= 1, got {self.trainer_workers}')
        # Kubernetes ValidateServiceAccountName: a DNS-1123 subdomain.
        _check(not self.trainer_service_account or (
            len(self.trainer_service_account) <= 253 and re.fullmatch(
                _SUBDOMAIN, self.trainer_service_account)), 'trainer_service_account must be a '
               f'Kubernetes name (lower case, digits, "-", "."), got '
               f'{self.trainer_service_account!r}')
        # A Secret's name is a DNS-1123 subdomain too (ValidateSecretName).
        _check(not self.s3_secret or (len(self.s3_secret) <= 253 and re.fullmatch(
            _SUBDOMAIN, self.s3_secret)), 's3_secret must name a Kubernetes Secret (lower case, '
               f'digits, "-", "."), or be empty for none, got {self.s3_secret!r}')
        # A URL without user info: credentials come from the Secret, never from a flag or file.
        _check(not self.s3_endpoint or re.fullmatch(
            r'https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?', self.s3_endpoint) is not None,
               's3_endpoint must be http://HOST[:PORT] or https://HOST[:PORT] (no user, path '
               "or query), or empty for AWS's own endpoint, got "
               + (repr(self.s3_endpoint) if '@' not in self.s3_endpoint else 'a URL with user '
                  'info (credentials belong in the Secret, s3_secret)'))
        _check(re.fullmatch(r'[a-z0-9]+(-[a-z0-9]+)*', self.s3_region) is not None,
               f's3_region must be a region name such as us-east-1, got {self.s3_region!r}')
        _check((self.endpoint is None) == (self.schedule is None),
               'endpoint and schedule go together')
        if self.schedule is not None:
            # KFP parses cron with robfig/cron v1: seconds first. It takes five fields too, as
            # "sec min hour day month", so a usual five-field cron would run at the wrong times.
            _check(len(self.schedule.split()) == 6 or self.schedule.startswith('@'),
                   'schedule must be a six-field cron expression "sec min hour day month '
                   f'weekday" or a descriptor such as @daily or "@every 6h", got {self.schedule!r}')
        _check(bool(self.experiment), 'experiment must not be empty')
        _check(self.namespace is None or re.fullmatch(NAMESPACE, self.namespace) is not None,
               f'namespace must be a Kubernetes namespace name, got {self.namespace!r}')
        _check(self.token_env is None
               or re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', self.token_env) is not None,
               'token_env must name an environment variable (the token itself stays out of '
               f'flags and files), got {self.token_env!r}')
        _check(sum((bool(self.token_file), bool(self.token_env),
                    self.service_account_token)) <= 1,
               'token_file, token_env and service_account_token are alternatives: give one')
        _check(self.endpoint is not None or not (
            self.namespace or self.token_file or self.token_env or self.service_account_token),
               'namespace and credentials are for scheduling: they need an endpoint')


def check_kubeflow_root(root: str, name: str = '--pipeline-root') -> None:
    """Refuses a Kubeflow pipeline root the tasks cannot write: gs://, s3:// or minio://, each
    with a bucket.

    Open-source KFP takes only gs://, s3://, minio:// or mem:// roots (backend/src/v2/objectstore/
    config.go ParseBucketPathToConfig) and, without one, uses minio://mlpipeline/v2/artifacts
    (config/env.go), ignoring the spec's defaultPipelineRoot. But every task reads and writes its
    artifacts at their URIs itself (TFX), not through KFP's launcher, so the root must be one the
    image's TensorFlow and Beam reach: gs:// natively, s3:// and minio:// (KFP's name for the
    S3 API at the cluster's endpoint) with tensorflow-io and apache-beam[aws] in the image; each
    task gets the store's endpoint and credentials from the platform spec (pipeline/kubeflow.py,
    KubeflowConfig.s3_*). mem:// is KFP's own in-memory store, a local path is no bucket. A query
    string (KFP's old `?endpoint=...&region=...`) is refused too: the tasks would write it into
    their paths; the endpoint and region are s3_endpoint and s3_region.
    runner.py --kubeflow calls this (presets.kubeflow_from_flags, where the root is resolved from
    the flags and the config file; name says where it came from); kubeflow.compile_pipeline does
    not, so that the tests can run a compiled spec on local folders (no bucket is reachable here).
    """
    _check(re.fullmatch(r'(gs|s3|minio)://[^/?#]+(/[^?#]*)?', root) is not None,
           f'{name} must be gs://BUCKET[/PATH], s3://BUCKET[/PATH] or minio://BUCKET[/PATH], '
           f'got {root!r}: every task writes its artifacts there itself, with TensorFlow and '
           'Beam (mem:// is KFP\'s own store, a local path is not on the cluster; the endpoint '
           'and region of s3:// and minio:// are --s3-endpoint and --s3-region, not a query)')


def uses_s3(root: str) -> bool:
    """Whether a run root is on an S3-compatible store (s3:// or minio://)."""
    return root.startswith(S3_SCHEMES)


def spec_file(kubeflow: KubeflowConfig, score: bool, output: Optional[str]) -> str:
    """Where `runner.py --kubeflow` writes the spec: output_file, or for the scoring pipeline
    (score) output_file only when --output was given, else SCORE_SPEC_FILE."""
    return kubeflow.output_file if output or not score else SCORE_SPEC_FILE
