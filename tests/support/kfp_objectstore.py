"""Open-source KFP's object store for an S3 pipeline root, transcribed: how the driver picks a
run's store session and how the launcher opens the bucket, copies input artifacts into the pod
and uploads its outputs (kubeflow/pipelines master, VERSION 2.17.0). Each function names its Go
function and fails with its message (ObjectStoreError). boto3 is the transport where KFP uses Go
CDK's s3blob over aws-sdk-go-v2; the S3 server is a real one (tests/support/seaweedfs.py).

What is transcribed:
- objectstore/config.go: ParseBucketPathToConfig, ParseBucketConfigForArtifactURI, KeyFromURI,
  PrefixedBucket (a Config holds scheme, bucket, key prefix, query string and session info);
- config/env.go GetStoreSessionInfo with no `kfp-launcher` ConfigMap (what driver/root_dag.go
  RootDAG stores in the run's context): an s3:// root gets {Provider s3, fromEnv true}
  (config/s3.go S3ProviderConfig.ProvideSessionInfo without providers); a minio:// root the
  default session (config/minio.go, env.go getDefaultMinioSessionInfo: endpoint
  seaweedfs.kubeflow:9000 without TLS, region "minio", the Secret mlpipeline-minio-artifact's
  keys accesskey and secretkey, path-style);
- objectstore/object_store.go: OpenBucket (createS3BucketSession, getS3BucketCredential,
  newS3Client), UploadBlob, DownloadBlob (isBlobKeyUnderPrefix, sanitizeDownloadPath),
  uploadFile, downloadFile.

The launcher runs inside the task's container, so a session "from env" is the pod's environment
(the container env and the secretAsEnv variables, kfp_launcher_v2.make_environment), never this
test process's. A Secret is read through the Kubernetes API (the Launcher's `secrets`). Host
names are resolved by the cluster's Services (`services`: "host:port" -> the loopback address
serving it), as a pod's DNS resolves seaweedfs.kubeflow:9000. Not transcribed (refused with
NotImplementedError): a `kfp-launcher` ConfigMap's `providers`, query-string roots (Go CDK's URL
opener), gs:// and mem:// buckets.
"""
import dataclasses
import ipaddress
import json
import os
import posixpath
import re
from typing import Dict, Iterator, Optional
from urllib.parse import urlsplit

# objectstore/config.go: bucketPattern.
BUCKET_PATTERN = re.compile(r'(^[a-z][a-z0-9]+:///?)([^/?]+)(/[^?]*)?(\?.+)?$')
_SCHEMES = ('gs://', 's3://', 'minio://', 'mem://')
# objectstore/config.go: DefaultEndpointInMultiUserMode.
DEFAULT_ENDPOINT = 'seaweedfs.kubeflow:9000'
# config/env.go: minioArtifactSecretName, minioArtifactAccessKeyKey, minioArtifactSecretKeyKey.
MINIO_SECRET, MINIO_ACCESS_KEY_KEY, MINIO_SECRET_KEY_KEY = (
    'mlpipeline-minio-artifact', 'accesskey', 'secretkey')


class ObjectStoreError(RuntimeError):
    """An object-store step failed; the message is KFP's (Go's %q quoting as json.dumps)."""


def _q(text: str) -> str:
    return json.dumps(text)


@dataclasses.dataclass
class Config:
    """objectstore/config.go: Config."""
    scheme: str
    bucket_name: str
    prefix: str = ''
    query_string: str = ''
    session_info: Optional[dict] = None

    def prefixed_bucket(self) -> str:
        """PrefixedBucket(): scheme + path.Join(bucket, prefix) (Go's Join drops a trailing
        "/")."""
        return self.scheme + posixpath.normpath(posixpath.join(self.bucket_name, self.prefix))

    def key_from_uri(self, uri: str) -> str:
        """KeyFromURI(): the URI's key below the prefixed bucket; a URI elsewhere, or the prefix
        itself, is refused."""
        prefixed = self.prefixed_bucket()
        if not uri.startswith(prefixed):
            raise ObjectStoreError(f'URI {_q(uri)} does not have expected bucket prefix '
                                   f'{_q(prefixed)}')
        key = uri[len(prefixed):].lstrip('/')
        if not key:
            raise ObjectStoreError(f'URI {_q(uri)} has empty key given prefixed bucket '
                                   f'{_q(prefixed)}')
        return key


def parse_bucket_path_to_config(path: str) -> Config:
    """config.go: ParseBucketPathToConfig(): gs://, s3://, minio:// and mem:// only; the key
    prefix ends with "/"."""
    match = BUCKET_PATTERN.match(path)
    if match is None:
        raise ObjectStoreError('parse bucket config failed: unrecognized pipeline root format: '
                               + _q(path))
    if match.group(1) not in _SCHEMES:
        raise ObjectStoreError(f'parse bucket config failed: unsupported Cloud bucket: {_q(path)}')
    prefix = (match.group(3) or '').lstrip('/')
    if prefix and not prefix.endswith('/'):
        prefix += '/'
    return Config(match.group(1), match.group(2), prefix, match.group(4) or '')


def parse_bucket_config(path: str, session_info: Optional[dict]) -> Config:
    """config.go: ParseBucketConfig()."""
    config = parse_bucket_path_to_config(path)
    config.session_info = session_info
    return config


def parse_bucket_config_for_artifact_uri(uri: str) -> Config:
    """config.go: ParseBucketConfigForArtifactURI(): scheme and bucket only, no prefix."""
    match = BUCKET_PATTERN.match(uri)
    if match is None:
        raise ObjectStoreError('parse bucket config failed: unrecognized uri format: ' + _q(uri))
    if match.group(1) not in _SCHEMES:
        raise ObjectStoreError(f'parse bucket config failed: unsupported Cloud bucket: {_q(uri)}')
    return Config(match.group(1), match.group(2))


def store_session_info(pipeline_root: str) -> dict:
    """config/env.go: Config.GetStoreSessionInfo() on a nil config (no `kfp-launcher`
    ConfigMap in the namespace: FromConfigMap returns nil, and the providers are nil)."""
    provider = parse_bucket_path_to_config(pipeline_root).scheme[:-len('://')]
    query = parse_bucket_path_to_config(pipeline_root).query_string
    if provider == 'minio':
        if query:  # minio.go: the S3 provider's answer, renamed
            return {'Provider': 'minio', 'Params': {'fromEnv': 'true'}}
        return {'Provider': 'minio', 'Params': {  # env.go: getDefaultMinioSessionInfo()
            'region': 'minio', 'endpoint': DEFAULT_ENDPOINT, 'disableSSL': 'true',
            'fromEnv': 'false', 'maxRetries': '5', 'secretName': MINIO_SECRET,
            'accessKeyKey': MINIO_ACCESS_KEY_KEY, 'secretKeyKey': MINIO_SECRET_KEY_KEY}}
    if provider in ('s3', 'gs'):  # s3.go (and gcs.go): no providers -> fromEnv
        return {'Provider': provider, 'Params': {'fromEnv': 'true'}}
    raise ObjectStoreError(f'Encountered unsupported provider in provider config {provider}')


def session_info_json(session_info: Optional[dict]) -> str:
    """json.Marshal(objectstore.SessionInfo): fields in declaration order, map keys sorted."""
    if session_info is None:
        return 'null'
    return json.dumps({'Provider': session_info['Provider'],
                       'Params': dict(sorted(session_info['Params'].items()))},
                      separators=(',', ':'))


def _parse_bool(text: str) -> bool:
    """strconv.ParseBool."""
    values = {'1': True, 't': True, 'T': True, 'TRUE': True, 'true': True, 'True': True,
              '0': False, 'f': False, 'F': False, 'FALSE': False, 'false': False,
              'False': False}
    if text not in values:
        raise ObjectStoreError(f'strconv.ParseBool: parsing {_q(text)}: invalid syntax')
    return values[text]


def structured_s3_params(params: Dict[str, str]) -> dict:
    """config.go: StructuredS3Params(): forcePathStyle defaults to true."""
    return {'from_env': _parse_bool(params.get('fromEnv', 'false')),
            'secret_name': params.get('secretName', ''),
            'access_key_key': params.get('accessKeyKey', ''),
            'secret_key_key': params.get('secretKeyKey', ''),
            'region': params.get('region', ''), 'endpoint': params.get('endpoint', ''),
            'disable_ssl': _parse_bool(params.get('disableSSL', 'false')),
            'force_path_style': _parse_bool(params.get('forcePathStyle', 'true'))}


def _has_structured_s3_settings(params: Dict[str, str]) -> bool:
    """config.go: HasStructuredS3Settings()."""
    return any(k in params for k in ('region', 'endpoint', 'disableSSL', 'forcePathStyle',
                                     'maxRetries'))


class Bucket:
    """A Go CDK blob.PrefixedBucket over s3blob: keys relative to the prefix. `failure`: the
    error every operation meets (e.g. an endpoint host the cluster cannot resolve), as Go's
    SDK only finds out on the first request."""

    def __init__(self, client, name: str, prefix: str, failure: Optional[str] = None):
        self.client, self.name, self.prefix, self.failure = client, name, prefix, failure

    def _check(self):
        if self.failure:
            raise ObjectStoreError(self.failure)

    def list(self, prefix: str) -> Iterator[str]:
        """bucket.List(Prefix) with no delimiter: every key under it, lexicographic."""
        self._check()
        pages = self.client.get_paginator('list_objects_v2').paginate(
            Bucket=self.name, Prefix=self.prefix + prefix)
        for page in pages:
            for item in page.get('Contents', ()):
                yield item['Key'][len(self.prefix):]

    def write(self, key: str, data: bytes) -> None:
        self._check()
        self.client.put_object(Bucket=self.name, Key=self.prefix + key, Body=data)

    def read(self, key: str) -> bytes:
        self._check()
        return self.client.get_object(Bucket=self.name, Key=self.prefix + key)['Body'].read()


class Opener:
    """What OpenBucket needs from the pod and the cluster: the namespace and its Secrets (the
    Kubernetes API), the pod's environment (the launcher runs in the task's container) and the
    cluster's Services."""

    def __init__(self, namespace: str, secrets: Dict[str, Dict[str, str]],
                 pod_env: Dict[str, str], services: Dict[str, str]):
        self.namespace, self.secrets = namespace, secrets
        self.pod_env, self.services = pod_env, services

    def open_bucket(self, config: Config) -> Bucket:
        """object_store.go: OpenBucket()."""
        try:
            return self._open(config)
        except ObjectStoreError as error:
            raise ObjectStoreError(f'Failed to open bucket {_q(config.bucket_name)}: {error}')

    def _open(self, config: Config) -> Bucket:
        session = config.session_info
        if session is not None:
            if session['Provider'] in ('minio', 's3') and not config.query_string:
                bucket = self._s3_bucket_session(config)
                if bucket is not None:
                    return bucket
            elif session['Provider'] == 'gs':
                raise NotImplementedError('a gs:// bucket: no GCS here')
        url = config.scheme + config.bucket_name
        if config.query_string:
            raise NotImplementedError(f'{url}{config.query_string}: Go CDK\'s URL opener '
                                      '(query-string roots) is not transcribed')
        if url.startswith(('minio://', 's3://')):  # useExplicitS3Client: newS3Client(nil, nil)
            return self._new_s3_client(config, None, None)
        raise NotImplementedError(f'{url}: Go CDK\'s URL opener (gs://, mem://) is not '
                                  'transcribed')

    def _s3_bucket_session(self, config: Config) -> Optional[Bucket]:
        """object_store.go: createS3BucketSession(): nil (the env's defaults) for fromEnv without
        explicit settings; else the Secret's keys unless fromEnv."""
        params = config.session_info['Params']
        structured = structured_s3_params(params)
        if structured['from_env'] and not _has_structured_s3_settings(params):
            return None
        creds = None
        if not structured['from_env']:
            try:
                creds = self._bucket_credential(structured)
            except ObjectStoreError as error:
                raise ObjectStoreError(
                    f'failed to retrieve credentials for bucket {config.bucket_name}: {error}')
        return self._new_s3_client(config, structured, creds)

    def _bucket_credential(self, params: dict):
        """object_store.go: getS3BucketCredential(): the Secret read through the API."""
        where = (f'failed to get Bucket credentials from secret name={_q(params["secret_name"])}'
                 f' namespace={_q(self.namespace)}')
        secret = self.secrets.get(params['secret_name'])
        if secret is None:  # the API server's NotFound
            raise ObjectStoreError(f'{where}: secrets {_q(params["secret_name"])} not found')
        access = secret.get(params['access_key_key'], '')
        secret_key = secret.get(params['secret_key_key'], '')
        if access and secret_key:
            return access, secret_key
        missing = [name for name, value in (('access key', access), ('secret key', secret_key))
                   if not value]
        raise ObjectStoreError(f'{where}: bucket credential secret has no value for: '
                               + ', '.join(missing))

    def _new_s3_client(self, config: Config, params: Optional[dict], creds) -> Bucket:
        """object_store.go: newS3Client(): aws-sdk-go-v2's LoadDefaultConfig from the pod's
        environment (AWS_REGION or AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID and
        AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL), then the session's
        region, keys, endpoint (http:// when disableSSL) and path style over it. Without
        params the SDK's default addressing holds: virtual-hosted, dialing <bucket>.<host>,
        unless the endpoint's host is an IP address (the S3 endpoint rules). A host name is
        dialed through the cluster's Services (none for it: the SDK's "no such host" at the
        first request); the boto3 transport then sends path-style requests to that address."""
        env = self.pod_env
        region = env.get('AWS_REGION') or env.get('AWS_DEFAULT_REGION') or ''
        access = env.get('AWS_ACCESS_KEY_ID') or env.get('AWS_ACCESS_KEY')
        secret = env.get('AWS_SECRET_ACCESS_KEY') or env.get('AWS_SECRET_KEY')
        token = env.get('AWS_SESSION_TOKEN')
        endpoint = ('' if env.get('AWS_IGNORE_CONFIGURED_ENDPOINT_URLS') == 'true' else
                    env.get('AWS_ENDPOINT_URL_S3') or env.get('AWS_ENDPOINT_URL') or '')
        path_style = False
        if params is not None:
            path_style = params['force_path_style']
            region = params['region'] or region
            if params['endpoint'] and not re.match(r'^(https://)?s3.amazonaws.com',
                                                   params['endpoint'].lower()):
                endpoint = params['endpoint']
                if not endpoint.startswith(('http://', 'https://')):
                    endpoint = ('http://' if params['disable_ssl'] else 'https://') + endpoint
        if creds is not None:
            access, secret, token = creds[0], creds[1], None
        if not endpoint:
            raise NotImplementedError("AWS's own S3 endpoint: not reachable here")
        if not region:  # the SDK's endpoint resolution needs one
            return Bucket(None, config.bucket_name, config.prefix,
                          'failed to resolve service endpoint, an AWS region is required, but '
                          'was not found')
        parts = urlsplit(endpoint)
        host = parts.hostname or ''
        try:
            ipaddress.ip_address(host)
            is_ip = True
        except ValueError:
            is_ip = False
        authority = parts.netloc
        dialed = authority if path_style or is_ip else f'{config.bucket_name}.{authority}'
        if not is_ip and dialed not in self.services:
            return Bucket(None, config.bucket_name, config.prefix,
                          f'dial tcp: lookup {dialed.rsplit(":", 1)[0]}: no such host')
        if not is_ip:  # the Service's address; the request keeps its path-style shape
            endpoint = f'{parts.scheme}://{self.services[dialed]}'
        return Bucket(_boto_client(endpoint, region, access, secret, token),
                      config.bucket_name, config.prefix)


def _boto_client(endpoint: str, region: str, access: Optional[str], secret: Optional[str],
                 token: Optional[str]):
    """A boto3 S3 client that reads nothing of this process's environment or ~/.aws: the
    credentials given or none (then every request fails: NoCredentialsError)."""
    import boto3  # pylint: disable=import-outside-toplevel
    from botocore import config as botocore_config  # pylint: disable=import-outside-toplevel
    from botocore import credentials as botocore_credentials  # pylint: disable=import-outside-toplevel
    from botocore import session as botocore_session  # pylint: disable=import-outside-toplevel
    core = botocore_session.Session()
    core.register_component('credential_provider', botocore_credentials.CredentialResolver([]))
    session = boto3.session.Session(
        aws_access_key_id=access if access and secret else None,
        aws_secret_access_key=secret if access and secret else None,
        aws_session_token=token if access and secret else None, botocore_session=core)
    return session.client('s3', endpoint_url=endpoint, region_name=region,
                          config=botocore_config.Config(
                              s3={'addressing_style': 'path'},
                              retries={'max_attempts': 2}, connect_timeout=10, read_timeout=60))


def _client_error(error: Exception) -> str:
    return str(error)


def upload_blob(bucket: Bucket, local_path: str, blob_path: str) -> None:
    """object_store.go: UploadBlob(): a file, or a folder's files recursively (os.ReadDir order,
    sorted); nothing for an empty folder. A missing local path is FileNotFoundError (Go's
    os.ErrNotExist, which uploadOutputArtifacts tolerates)."""
    try:
        is_dir = os.path.isdir(local_path)
        os.stat(local_path)
    except FileNotFoundError as error:
        raise FileNotFoundError(f'unable to stat local filepath {_q(local_path)}: {error}')
    if not is_dir:
        _upload_file(bucket, local_path, blob_path)
        return
    for name in sorted(os.listdir(local_path)):
        path = os.path.join(local_path, name)
        if os.path.isdir(path):
            upload_blob(bucket, path, blob_path + '/' + name)
        else:
            _upload_file(bucket, path, posixpath.normpath(posixpath.join(blob_path, name)))


def _upload_file(bucket: Bucket, local_file: str, blob_file: str) -> None:
    """object_store.go: uploadFile()."""
    def failed(text):
        return ObjectStoreError(f'uploadFile(): unable to complete copying {_q(local_file)} to '
                                f'remote storage {_q(blob_file)}: {text}')
    try:
        with open(local_file, 'rb') as handle:
            data = handle.read()
    except OSError as error:
        raise failed(f'unable to open local file {_q(local_file)} for reading: {error}')
    try:  # s3blob's writer sends nothing before Close()
        bucket.write(blob_file, data)
    except Exception as error:  # pylint: disable=broad-except  (botocore's errors)
        raise failed(f'failed to close Writer for bucket: {_client_error(error)}')


def _is_blob_key_under_prefix(key: str, blob_dir: str) -> bool:
    """object_store.go: isBlobKeyUnderPrefix()."""
    blob_dir = blob_dir.rstrip('/')
    return key == blob_dir or key.startswith(blob_dir + '/')


def _sanitize_download_path(local_dir: str, blob_dir: str, key: str) -> str:
    """object_store.go: sanitizeDownloadPath(): no ".." component, nothing outside local_dir."""
    if '..' in key.split('/'):
        raise ObjectStoreError(f"path traversal detected: blob key {_q(key)} contains '..' "
                               'component')
    local_path = os.path.normpath(os.path.join(local_dir, posixpath.relpath(key, blob_dir)))
    absolute, folder = os.path.abspath(local_path), os.path.abspath(local_dir)
    if absolute != folder and not absolute.startswith(folder + os.sep):
        raise ObjectStoreError(f'path traversal detected: blob key {_q(key)} resolves to '
                               f'{_q(absolute)} which is outside target directory {_q(folder)}')
    return local_path


def download_blob(bucket: Bucket, local_dir: str, blob_dir: str) -> None:
    """object_store.go: DownloadBlob(): every object listed under blob_dir, each to its path
    below local_dir (a key equal to blob_dir: local_dir itself). Nothing listed copies nothing.
    A zero-byte "folder" object (a key ending in "/") becomes an empty file of the folder's
    name, so the folder's files cannot be written after it (kubeflow/pipelines #13476)."""
    try:
        keys = list(bucket.list(blob_dir))
    except ObjectStoreError as error:
        raise ObjectStoreError(f'failed to list objects in remote storage {_q(blob_dir)}: '
                               f'{error}')
    except Exception as error:  # pylint: disable=broad-except  (botocore's errors)
        raise ObjectStoreError(f'failed to list objects in remote storage {_q(blob_dir)}: '
                               f'{_client_error(error)}')
    for key in keys:
        if not _is_blob_key_under_prefix(key, blob_dir):
            continue
        _download_file(bucket, key, _sanitize_download_path(local_dir, blob_dir, key))


def _download_file(bucket: Bucket, key: str, local_file: str) -> None:
    """object_store.go: downloadFile()."""
    def failed(text):
        return ObjectStoreError(f'downloadFile(): unable to complete copying {_q(key)} to local '
                                f'storage {_q(local_file)}: {text}')
    try:
        data = bucket.read(key)
    except Exception as error:  # pylint: disable=broad-except  (botocore's errors)
        raise failed(f'unable to open reader for bucket: {_client_error(error)}')
    folder = os.path.dirname(local_file)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise failed(f'failed to create local directory {_q(folder)}: {error}')
    try:
        with open(local_file, 'wb') as handle:
            handle.write(data)
    except OSError as error:
        raise failed(f'unable to open local file {_q(local_file)} for writing: {error}')
