"""Settings of the Kubeflow compile and schedule.

KubeflowConfig: how the pipeline is compiled for, and scheduled on, Kubeflow Pipelines
(pipeline/kubeflow/compiler.py, pipeline/kubeflow/schedule.py): `runner.py --kubeflow` flags over
the config file's [kubeflow] table (config.example.toml). check_kubeflow_root: the pipeline roots
the tasks can write (gs://, s3://, minio://). uses_s3 and SECRET_KEYS: the object store's
credentials on Kubeflow (pipeline/kubeflow/compiler.py).
"""
import dataclasses
import re
from typing import ClassVar, Optional

from core.settings import Settings, require, setting

# A Kubernetes namespace (RFC 1123 label), as a Kubeflow profile names one.
NAMESPACE = r'[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?'
# The scoring pipeline's spec without --output (pipeline/kubeflow/score.py): never the training
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


def _name(pattern: str, limit: int = 253):
    """A predicate: '' or a name matching pattern, at most limit characters."""
    return lambda name: not name or (len(name) <= limit and re.fullmatch(pattern, name))


@dataclasses.dataclass(frozen=True)
class KubeflowConfig(Settings):
    """How the pipeline is compiled for, and scheduled on, Kubeflow Pipelines
    (pipeline/kubeflow/compiler.py): the config file's [kubeflow] table, under `runner.py
    --kubeflow`'s flags (core/settings.py). Every flag of it but --pipeline-root (a local run's
    too) is refused without --kubeflow.

    The pipeline itself is the same PipelineConfig; its output_dir is then the run root on storage
    the cluster reads (gs://...): TFX artifacts go under <output_dir>/pipeline_root, pushed models
    under <output_dir>/serving, as locally.
    """
    GROUP: ClassVar[str] = 'Kubeflow'
    image: str = setting(help='container image of every task (see Dockerfile)', flag='--image',
                         check=(lambda image: bool(image) and ' ' not in image, 'must be set'))
    # runner.py's --output with --kubeflow: not a key of the file.
    output_file: str = setting('pipeline.json', 'the compiled file', key=False)
    # Where the Dockerfile puts this checkout in the image: paths inside the checkout (the
    # embedded data and schema, setup.py in the Beam args) are rewritten to this folder.
    image_workdir: str = setting(
        '/pipeline', 'where the Dockerfile puts this checkout in the image',
        check=(lambda folder: folder.startswith('/'), 'must be absolute'))
    trainer_cpu: float = setting(4.0, "the trainer's cores", '--trainer-cpu',
                                 check=(lambda cores: cores > 0, 'must be > 0'))
    trainer_memory_gb: float = setting(16.0, "the trainer's memory in GB", '--trainer-memory',
                                       check=(lambda gb: gb > 0, 'must be > 0'))
    trainer_gpus: int = setting(0, "the trainer's GPUs", '--trainer-gpus',
                                check=(lambda gpus: gpus >= 0, 'must be >= 0'))
    gpu_type: str = setting(  # Kubernetes resource name (Vertex AI: e.g. NVIDIA_TESLA_T4)
        'nvidia.com/gpu', "the GPUs' Kubernetes resource (Vertex AI: NVIDIA_TESLA_T4)")
    # > 1: the trainer's task creates a Kubeflow Trainer v2 TrainJob of this many workers, or a
    # TFJob (Training Operator v1, deprecated) where the cluster serves only that, each with the
    # trainer's cpu/memory/gpus, and waits for it (pipeline/kubeflow/jobs/launcher.py).
    trainer_workers: int = setting(
        1, 'N > 1: train in N pods, each with the resources above: a TrainJob (Kubeflow '
        'Trainer v2), or a TFJob where the cluster has only the Training Operator',
        '--trainer-workers', metavar='N',
        check=(lambda workers: workers >= 1, 'must be >= 1'))
    # The Kubernetes service account of those worker pods (e.g. one bound to a cloud identity
    # that can write the gs:// pipeline root). Kubernetes ValidateServiceAccountName: a DNS-1123
    # subdomain.
    trainer_service_account: str = setting(
        '', "the TFJob pods' Kubernetes service account", '--trainer-service-account',
        metavar='NAME', default_text="the namespace's default",
        check=(_name(_SUBDOMAIN), 'must be a Kubernetes name (lower case, digits, "-", ".")'))
    # Open-source KFP does not run TFX's pre-cache-check hook that fingerprints the input files,
    # so a cached ingestion task would never see new images there: it is compiled uncached.
    cache_ingestion: bool = setting(
        False, 'cache ingestion (open-source KFP would miss new files)')
    # An s3:// or minio:// pipeline root (docs/kubeflow.md, "Object stores"): every task writes
    # its artifacts itself, so every task container gets the store's endpoint and region as
    # plain variables (AWS_ENDPOINT_URL, AWS_REGION) and the keys `accesskey` and `secretkey` of
    # this Secret, in the run's namespace, as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the
    # platform spec's secretAsEnv; only the names are compiled, never a value). The defaults are
    # open-source KFP 2.17's own store: SeaweedFS at seaweedfs.kubeflow:9000 and its Secret
    # (backend/src/v2/objectstore/config.go DefaultEndpointInMultiUserMode, config/env.go).
    # s3_secret '' = no Secret (e.g. IAM roles for service accounts on EKS); s3_endpoint '' =
    # AWS's own endpoint for the region. A gs:// root gets none of these. A Secret's name is a
    # DNS-1123 subdomain (ValidateSecretName).
    s3_secret: str = setting(
        'mlpipeline-minio-artifact', 's3:// and minio:// roots: the Kubernetes Secret whose keys '
        'accesskey and secretkey every task gets as AWS_ACCESS_KEY_ID and '
        'AWS_SECRET_ACCESS_KEY; "" = none, e.g. IAM roles for service accounts', '--s3-secret',
        metavar='NAME', check=(_name(_SUBDOMAIN), 'must name a Kubernetes Secret (lower case, '
                               'digits, "-", "."), or be empty for none'))
    s3_endpoint: str = setting(
        'http://seaweedfs.kubeflow:9000', 's3:// and minio:// roots: the S3 API every task '
        'writes to, as AWS_ENDPOINT_URL; "" = AWS S3 itself', '--s3-endpoint', metavar='URL',
        default_text='http://seaweedfs.kubeflow:9000, the SeaweedFS of KFP 2.17')
    s3_region: str = setting(
        'us-east-1', 's3:// and minio:// roots: AWS_REGION of every task', '--s3-region',
        metavar='REGION', check=(lambda region: re.fullmatch(r'[a-z0-9]+(-[a-z0-9]+)*', region)
                                 is not None, 'must be a region name such as us-east-1'))
    # Scheduling (only with an endpoint): KFP API URL, cron expression, experiment name.
    endpoint: Optional[str] = setting(None, 'KFP API URL: upload the pipeline and schedule it',
                                      '--endpoint', group='scheduling')
    # KFP parses cron with robfig/cron v1: seconds first. It takes five fields too, as "sec min
    # hour day month", so a usual five-field cron would run at the wrong times.
    schedule: Optional[str] = setting(
        None, 'six-field cron, seconds first, e.g. "0 0 3 * * *" (03:00 daily), or @daily, '
        '"@every 6h"', '--schedule', group='scheduling',
        check=(lambda cron: cron is None or len(cron.split()) == 6 or cron.startswith('@'),
               'must be a six-field cron expression "sec min hour day month weekday" or a '
               'descriptor such as @daily or "@every 6h"'))
    experiment: str = setting('Default', 'KFP experiment', '--experiment', group='scheduling',
                              check=(bool, 'must not be empty'))
    # A full Kubeflow install runs KFP in multi-user mode: the pipeline, experiment and recurring
    # run belong to a profile namespace, and every call needs a user identity. At most one of:
    # a token file (re-read for every call, as projected tokens rotate), the name of an
    # environment variable holding a token, or the pod's projected service-account token.
    namespace: Optional[str] = setting(
        None, 'Kubeflow profile namespace, needed when KFP runs multi-user (a full Kubeflow '
        'install)', '--namespace', group='scheduling',
        default_text='none; in a pod, its own namespace',
        check=(lambda name: name is None or re.fullmatch(NAMESPACE, name) is not None,
               'must be a Kubernetes namespace name'))
    token_file: Optional[str] = setting(
        None, 'file holding a bearer token for the KFP API, re-read for every call (e.g. a '
        'projected service-account token)', '--token-file', metavar='FILE', group='scheduling',
        path=True)
    token_env: Optional[str] = setting(
        None, 'environment variable holding a bearer token for the KFP API', '--token-env',
        metavar='VAR', group='scheduling',
        check=(lambda name: name is None or re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', name)
               is not None, 'must name an environment variable (the token itself stays out '
               'of flags and files)'))
    service_account_token: bool = setting(
        False, 'in a pod: the projected token kfp reads ($KF_PIPELINES_SA_TOKEN_PATH, else '
        '/var/run/secrets/kubeflow/pipelines/token)', '--service-account-token',
        group='scheduling', default_text=None)
    # The run root the cluster writes (runner.py checks it: check_kubeflow_root); '' here, so
    # that a compiled spec can also run on local folders in the tests.
    pipeline_root: str = setting('', 'run root the cluster writes', '--pipeline-root')

    def _checks(self):
        # A URL without user info: credentials come from the Secret, never from a flag or file.
        yield (not self.s3_endpoint or re.fullmatch(
            r'https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?', self.s3_endpoint) is not None,
               's3_endpoint must be http://HOST[:PORT] or https://HOST[:PORT] (no user, path '
               "or query), or empty for AWS's own endpoint, got "
               + (repr(self.s3_endpoint) if '@' not in self.s3_endpoint else 'a URL with user '
                  'info (credentials belong in the Secret, s3_secret)'))
        yield (self.endpoint is None) == (self.schedule is None), \
            'endpoint and schedule go together'
        yield (sum((bool(self.token_file), bool(self.token_env),
                    self.service_account_token)) <= 1,
               'token_file, token_env and service_account_token are alternatives: give one')
        yield (self.endpoint is not None or not (
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
    task gets the store's endpoint and credentials from the platform spec
    (pipeline/kubeflow/compiler.py, KubeflowConfig.s3_*). mem:// is KFP's own in-memory store, a
    local path is no bucket. A query string (KFP's old `?endpoint=...&region=...`) is refused too:
    the tasks would write it into their paths; the endpoint and region are s3_endpoint and
    s3_region. runner.py --kubeflow calls this (presets.kubeflow_from_flags, where the root is
    resolved from the flags and the config file; name says where it came from);
    kubeflow.compile_pipeline does not, so that the tests can run a compiled spec on local folders
    (no bucket is reachable here).
    """
    require(re.fullmatch(r'(gs|s3|minio)://[^/?#]+(/[^?#]*)?', root) is not None,
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
