"""Object stores beside local disk and gs://: S3, MinIO and SeaweedFS, configured in one place.

No TFX imports. Every process of ours that may touch an `s3://` or `minio://` path calls
`enable_for(...)` with the paths it was given (runner.py's local run, each Kubeflow task, the
trainer's workers) or, in a process started by one of those, `enable_from_env()`
(components/__init__.py, so that Beam's worker processes get it by importing our DoFns). It does
three things, once per process:

1. **Configuration from the standard variables.** `AWS_ENDPOINT_URL`, `AWS_REGION` and the key
   variables are what boto3 (Beam's S3 file system) reads itself; tensorflow-io's S3 file system
   reads `S3_ENDPOINT`, `S3_USE_HTTPS`, `S3_VERIFY_SSL` and `AWS_REGION`/`S3_REGION` instead
   (tensorflow_io/core/filesystems/s3/s3_filesystem.cc GetDefaultClientConfig). The second set
   is derived from the first and put in this process's environment, which child processes
   inherit. No value is logged: `describe()` names the endpoint and whether keys are set.
2. **TensorFlow's `s3://` scheme:** importing tensorflow_io registers it (tf.io.gfile, TFRecord
   files, SavedModels).
3. **The exit code.** A process that used tensorflow-io's S3 file system aborts after its last
   Python line ("pure virtual method called", exit code 134: tensorflow/io #2039, fixed on its
   main branch but not released): the AWS SDK's client is destroyed by a static destructor that
   runs after the SDK has shut down. C's `exit()` runs its exit handlers newest first, and
   those destructors were registered when the library loaded; so a handler registered after
   the import, glibc's `on_exit` with `_exit` as the function, runs before them and ends the
   process with the status `exit()` was given. Python has finalised by then: its atexit
   functions ran and its streams and logs were flushed. Only C++ teardown is skipped, which
   the operating system does anyway. tests/core/test_storage.py checks exit codes
   0, 3 and an uncaught exception's 1.

`minio://` is Kubeflow Pipelines' name for the S3 API at the cluster's endpoint
(backend/src/v2/objectstore/config.go): KFP's launcher hands tasks artifact URIs with that scheme.
`to_s3` maps them; pipeline/kubeflow/entrypoint.py does so for each task, and maps them back in what
the task reports to KFP.
"""
import ctypes
import io
import logging
import os
import posixpath
import time
from typing import Iterable, List, Mapping, MutableMapping, Optional, Tuple

from core import store_watch

S3 = 's3://'
MINIO = 'minio://'
SCHEMES = (S3, MINIO)
ENDPOINT_VARIABLE = 'AWS_ENDPOINT_URL'
REGION_VARIABLE = 'AWS_REGION'
KEY_VARIABLES = ('AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY')
DEFAULT_REGION = 'us-east-1'   # AWS's default; S3-compatible stores ignore it

# tensorflow-io stages each file it writes to S3 in a local file named from this template (fixed
# in its plugin, libtensorflow_io_plugins.so: TMPDIR is not read), uploads it when the file is
# closed and deletes it then.
UPLOAD_BUFFER_PREFIX = '/tmp/_s3_filesystem_'

_enabled = False


def is_object_store(path: str) -> bool:
    """s3:// or minio://: a store without folders or renames."""
    return path.startswith(SCHEMES)


def to_s3(uri: str) -> str:
    """minio://BUCKET/KEY as s3://BUCKET/KEY (the same object at the configured endpoint);
    any other path unchanged."""
    return S3 + uri[len(MINIO):] if uri.startswith(MINIO) else uri


def normpath(path: str) -> str:
    """os.path.normpath that keeps a URI's scheme: 's3://b/x/../y/' -> 's3://b/y' (normpath
    alone gives 's3:/b/y', a local path)."""
    scheme, sep, rest = path.partition('://')
    if not sep:
        return os.path.normpath(path)
    return scheme + sep + posixpath.normpath(rest).lstrip('/')


def copy_file(source: str, target: str) -> None:
    """tf.io.gfile.copy(overwrite=True), also for an empty source: tensorflow-io's S3 copy
    refuses one ("Source is a directory or empty file"), so an empty file is written instead."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel  (callers have it loaded)
    if is_object_store(source) and tf.io.gfile.stat(source).length == 0:
        with tf.io.gfile.GFile(target, 'wb') as handle:
            handle.write(b'')
        return
    tf.io.gfile.copy(source, target, overwrite=True)


def tensorflow_variables(environ: Mapping[str, str]) -> dict:
    """What tensorflow-io's S3 file system needs, derived from the standard AWS variables, and
    the store clients' timeouts and retries (core/store_watch.py CLIENT_VARIABLES, which
    botocore reads too); variables already set win (a user may tune the clients directly)."""
    derived = {}
    endpoint = environ.get(ENDPOINT_VARIABLE, '')
    if endpoint:
        derived['S3_ENDPOINT'] = endpoint
        plain = endpoint.startswith('http://')
        derived['S3_USE_HTTPS'] = '0' if plain else '1'
        derived['S3_VERIFY_SSL'] = '0' if plain else '1'
    region = environ.get(REGION_VARIABLE) or environ.get('AWS_DEFAULT_REGION') or DEFAULT_REGION
    # AWS_DEFAULT_REGION: boto3's name; tensorflow-io reads AWS_REGION or S3_REGION.
    derived.update(AWS_REGION=region, S3_REGION=region, AWS_DEFAULT_REGION=region)
    # The clients' timeouts and retries (core/store_watch.py): tensorflow-io's and botocore's.
    derived.update(store_watch.CLIENT_VARIABLES)
    return {k: v for k, v in derived.items() if k not in environ}


def describe(environ: Optional[Mapping[str, str]] = None) -> str:
    """One line for the log: the endpoint and region, and which keys are set (never their
    values)."""
    environ = os.environ if environ is None else environ
    keys = [k for k in KEY_VARIABLES if environ.get(k)]
    return (f'S3 endpoint {environ.get(ENDPOINT_VARIABLE) or "AWS default"}, region '
            f'{environ.get(REGION_VARIABLE) or environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION}'
            f', keys: {", ".join(keys) if keys else "none (instance or pod identity)"}')


def enable(environ: Optional[MutableMapping[str, str]] = None) -> None:
    """Configures S3 for TensorFlow and Beam in this process (and its children); idempotent."""
    global _enabled
    if _enabled:
        return
    environ = os.environ if environ is None else environ
    environ.update(tensorflow_variables(environ))
    import tensorflow_io  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    # tensorflow-io registers s3:// when its file-system plugins load, which its import does.
    _skip_cxx_teardown()
    _share_botocore_models()
    _enabled = True
    logging.getLogger(__name__).info('S3 enabled: %s', describe(environ))


def _share_botocore_models() -> None:
    """One parsed copy of botocore's service models for every boto3 session of this process.

    Beam's S3 file system makes a new boto3 session and client for each call it makes (each
    match, open, exists, delete: apache_beam/io/aws/s3filesystem.py builds an S3IO, whose
    boto3_client.Client starts a Session), and every new session's loader parses botocore's JSON
    models again: about 0.1 s a client on these machines, 49 clients in a smoke run on S3, most
    of what a Beam stage on S3 costs beyond the same stage on disk. The models are static files
    that one session's clients already share; shared here between sessions, a client costs about
    15 ms. Each session still resolves the endpoint, region and keys itself, so no client is
    shared and a changed environment is still read. A loader with its own search path
    (AWS_DATA_PATH) is made as before."""
    from botocore import loaders, session  # pylint: disable=import-outside-toplevel
    if getattr(session.create_loader, 'shared', False):
        return
    shared, own = loaders.create_loader(), session.create_loader

    def create_loader(search_path_string=None):
        return shared if search_path_string is None else own(search_path_string)
    create_loader.shared = True
    session.create_loader = create_loader


def enable_for(paths: Iterable[str]) -> bool:
    """enable() when any of paths is on an object store; returns whether it did."""
    if any(p and is_object_store(p) for p in paths):
        enable()
        return True
    return False


def enable_from_env() -> None:
    """In a child of a process that enabled S3 (S3_ENDPOINT or S3_REGION inherited): the same."""
    if not _enabled and 'S3_REGION' in os.environ:
        enable()


def bucket_of(uri: str) -> str:
    return to_s3(uri)[len(S3):].split('/', 1)[0]


def unreachable(paths: Iterable[str], timeout: float = 10.0) -> Optional[str]:
    """Why a bucket of the object-store paths cannot be used, or None: asked once, with short
    timeouts. Without it, a wrong or missing endpoint shows only minutes later, as
    tensorflow-io's retries of an unresolvable host end."""
    buckets = sorted({bucket_of(p) for p in paths if p and is_object_store(p)})
    if not buckets:
        return None
    from botocore import exceptions  # pylint: disable=import-outside-toplevel
    client = s3_client(timeout)
    where = os.environ.get(ENDPOINT_VARIABLE) or 'the AWS endpoint (AWS_ENDPOINT_URL not set)'
    for bucket in buckets:
        try:
            client.head_bucket(Bucket=bucket)
        except exceptions.ClientError as error:
            code = error.response.get('Error', {}).get('Code', '')
            if code in ('404', 'NoSuchBucket'):
                return f'bucket {bucket} does not exist at {where}'
            if code in ('403', 'AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch'):
                return (f'access to bucket {bucket} at {where} was refused ({code}): check '
                        'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY')
            return f'bucket {bucket} at {where}: {code or error}'
        except exceptions.NoCredentialsError:
            return (f'no credentials for bucket {bucket}: set AWS_ACCESS_KEY_ID and '
                    'AWS_SECRET_ACCESS_KEY (docs/storage.md)')
        except exceptions.BotoCoreError as error:
            return f'cannot reach bucket {bucket} at {where}: {error}'
    return None


def remove_upload_buffers(pids: Iterable[int]) -> List[str]:
    """Deletes the upload buffers of tensorflow-io's S3 file system that these processes hold
    open, and returns their paths. A process ended without closing the files it writes (the
    store-down exit: os._exit, its workers killed) would leave each behind in /tmp, as large as
    what it was writing, at every outage. Deleting an open file is safe: the process writes on
    into it until it ends, and its space is freed then."""
    removed = []
    for pid in pids:
        try:
            descriptors = os.listdir(f'/proc/{pid}/fd')
        except OSError:   # gone already
            continue
        for descriptor in descriptors:
            try:
                target = os.readlink(f'/proc/{pid}/fd/{descriptor}')
            except OSError:
                continue
            if target.startswith(UPLOAD_BUFFER_PREFIX) and target not in removed:
                try:
                    os.unlink(target)
                    removed.append(target)
                except OSError:   # another process of the run removed it first
                    pass
    return removed


def s3_client(timeout: float = 10.0, attempts: int = 1):
    """A boto3 S3 client with short timeouts and one attempt (or `attempts`, with the
    standard mode's backoff); boto3 reads AWS_ENDPOINT_URL, AWS_REGION and the keys itself, as
    the pipeline's own reads do."""
    import boto3  # pylint: disable=import-outside-toplevel  (apache-beam[aws] brings it)
    from botocore import config as botocore_config  # pylint: disable=import-outside-toplevel
    # Its INFO lines (where it found the credentials) are not for the console.
    logging.getLogger('botocore').setLevel(logging.WARNING)
    # A session of its own: boto3's default session resolves the keys once per process and
    # keeps them, so a client made after the environment named other keys would sign with the old.
    # total_max_attempts, not max_attempts: botocore's max_attempts counts the retries after
    # the first request, so {'max_attempts': 1} asked twice (a probe of a hung store took twice
    # its timeout, 10 s, not 5).
    return boto3.session.Session().client('s3', config=botocore_config.Config(
        connect_timeout=timeout, read_timeout=timeout,
        retries={'total_max_attempts': attempts, 'mode': 'standard'}))


class StoreUnanswered(OSError):
    """The object store did not answer (no response, a timeout or a 5xx) after the bounded
    retries: not the same as "not there"."""


_checking_clients = {}
# What boto3 reads from the environment to choose the endpoint, region and keys.
_CLIENT_ENVIRONMENT = ('AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_ACCESS_KEY_ID',
                       'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_REGION',
                       'AWS_DEFAULT_REGION', 'AWS_PROFILE')


def _checker():
    """The client of exists() and children(): one attempt per call, _asked() retries. Made once
    per store configuration (boto3 clients are thread-safe): a client keeps the endpoint and
    keys of its making, and a process whose environment names another store (a test after
    another, a runner configured twice) must not ask the first one with them."""
    key = tuple(os.environ.get(name) for name in _CLIENT_ENVIRONMENT)
    if key not in _checking_clients:
        _checking_clients[key] = s3_client(
            float(store_watch.CLIENT_VARIABLES['S3_REQUEST_TIMEOUT_MSEC']) / 1000)
    return _checking_clients[key]


def _asked(uri: str, call):
    """call(client)'s result, asked again with backoff (0.5 s doubling, at most 8 s apart) while
    the store does not answer, for store_watch.BLIP_SECONDS: botocore's own standard retries
    wait only about 4 s in all, and a store restarting refuses connections for longer. Then
    StoreUnanswered. An answer (a 404 too) is returned or raised at once."""
    from botocore import exceptions  # pylint: disable=import-outside-toplevel
    deadline, pause = time.monotonic() + store_watch.BLIP_SECONDS, 0.5
    while True:
        try:
            return call(_checker())
        except (exceptions.BotoCoreError, exceptions.ClientError) as error:
            status = getattr(error, 'response', {}).get('ResponseMetadata', {}).get(
                'HTTPStatusCode') or 0
            if 0 < status < 500:
                raise
            if time.monotonic() + pause > deadline:
                where = os.environ.get(ENDPOINT_VARIABLE) or 'the AWS endpoint'
                raise StoreUnanswered(f'the store at {where} did not answer for {uri}: '
                                      f'{" ".join(str(error).split())[:200]}') from error
        time.sleep(pause)
        pause = min(pause * 2, 8.0)


def exists(uri: str) -> bool:
    """tf.io.gfile.exists, except that on an object store (an object, or a folder: a prefix
    with objects) a store that does not answer raises StoreUnanswered: tensorflow-io's Stat
    reports any failed request as NotFound, so during an outage a complete version would read
    as absent, and be deleted or overwritten as a killed push's leftover."""
    if not is_object_store(uri):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel  (callers have it)
        return tf.io.gfile.exists(uri)
    from botocore import exceptions  # pylint: disable=import-outside-toplevel
    bucket, _, key = to_s3(uri)[len(S3):].partition('/')
    key = key.rstrip('/')
    try:
        _asked(uri, lambda client: client.head_object(Bucket=bucket, Key=key))
        return True
    except exceptions.ClientError as error:
        if error.response.get('ResponseMetadata', {}).get('HTTPStatusCode') != 404:
            raise
    listed = _asked(uri, lambda client: client.list_objects_v2(
        Bucket=bucket, Prefix=key + '/', MaxKeys=1))
    return bool(listed.get('KeyCount') or listed.get('Contents'))


def read_if_exists(uri: str) -> Optional[bytes]:
    """A whole file's bytes, or None when there is no such file.

    On an object store by a GET of our own, asked again while the store does not answer
    (_asked), because what tensorflow-io's read returns cannot be trusted there: when a GET
    answers a 5xx and the AWS SDK's own retry succeeds, the failed attempt's XML error stays at
    the front of the bytes read, cut to the file's length (seen with SeaweedFS starting up:
    `<?xml ...><Error><Code>InternalError</Code>...` and then the file). A text proto or JSON
    file then fails to parse, and TensorFlow's checkpoint reader takes that as "no checkpoint"
    (checkpoint_management.get_checkpoint_state), so a rerun would train from step 0. Records
    and SavedModels carry checksums or fail to parse loudly; the small files we read ourselves
    come through here. Elsewhere (local disk, gs://), tf.io.gfile."""
    if not is_object_store(uri):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel  (callers have it)
        if not tf.io.gfile.exists(uri):
            return None
        with tf.io.gfile.GFile(uri, 'rb') as handle:
            return handle.read()
    from botocore import exceptions  # pylint: disable=import-outside-toplevel
    bucket, _, key = to_s3(uri)[len(S3):].partition('/')
    try:
        # The body is read inside the asked call: a connection cut mid-body is asked again too.
        return _asked(uri, lambda client: client.get_object(Bucket=bucket,
                                                            Key=key)['Body'].read())
    except exceptions.ClientError as error:   # an answer: absent, or refused (403, ...)
        if error.response.get('ResponseMetadata', {}).get('HTTPStatusCode') == 404:
            return None
        raise _refused(uri, error) from error


def _refused(uri: str, error: Exception) -> OSError:
    """A store's answer that is not the object (403, 412, ...) as one line."""
    return OSError(f'cannot read {uri}: {" ".join(str(error).split())[:200]}')


def read(uri: str) -> bytes:
    """read_if_exists, for a file that must be there: FileNotFoundError when it is not."""
    found = read_if_exists(uri)
    if found is None:
        raise FileNotFoundError(f'no file at {uri}')
    return found


def read_text(uri: str) -> Optional[str]:
    """read_if_exists as UTF-8 text (None when there is no file)."""
    found = read_if_exists(uri)
    return None if found is None else found.decode('utf-8')


# How much of an object one GET of open_read's fetches: a CSV's lines are read through a buffer
# this large, and Parquet's larger column chunks in one GET each.
READ_CHUNK_BYTES = 8 << 20


class _ObjectReader(io.RawIOBase):
    """One object as a read-only, seekable file: ranged GETs, each asked again while the store
    does not answer (_asked), with the object's ETag required (If-Match), so that an object
    replaced while it is read fails (412) instead of mixing two versions, and its length
    checked. Seeking costs nothing: bytes are fetched when read."""

    def __init__(self, uri: str):
        from botocore import exceptions  # pylint: disable=import-outside-toplevel
        super().__init__()
        self._uri = uri
        self._bucket, _, self._key = to_s3(uri)[len(S3):].partition('/')
        try:
            head = _asked(uri, lambda client: client.head_object(Bucket=self._bucket,
                                                                 Key=self._key))
        except exceptions.ClientError as error:
            if error.response.get('ResponseMetadata', {}).get('HTTPStatusCode') == 404:
                raise FileNotFoundError(f'no file at {uri}') from None
            raise _refused(uri, error) from error
        self.size, self._etag, self._position = int(head['ContentLength']), head['ETag'], 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:
        from botocore import exceptions  # pylint: disable=import-outside-toplevel
        count = min(len(buffer), self.size - self._position)
        if count <= 0:
            return 0
        first, last = self._position, self._position + count - 1
        try:
            data = _asked(self._uri, lambda client: client.get_object(
                Bucket=self._bucket, Key=self._key, Range=f'bytes={first}-{last}',
                IfMatch=self._etag)['Body'].read())
        except exceptions.ClientError as error:  # 412: replaced since it was opened
            raise _refused(self._uri, error) from error
        if len(data) != count:
            raise OSError(f'cannot read {self._uri}: {len(data)} bytes where {count} were '
                          f'asked at {first}')
        buffer[:count] = data
        self._position += count
        return count


def open_read(uri: str):
    """A binary, seekable file for reading; on an object store one whose bytes are the
    object's (read_if_exists says why tensorflow-io's are not always), elsewhere tf.io.gfile's.
    FileNotFoundError (object store) or tf's NotFoundError when there is no such file."""
    if not is_object_store(uri):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel  (callers have it)
        return tf.io.gfile.GFile(uri, 'rb')
    return io.BufferedReader(_ObjectReader(uri), buffer_size=READ_CHUNK_BYTES)


def _pages(uri: str, bucket: str, prefix: str, **options):
    """Every page of list_objects_v2 under prefix (1,000 entries a page), each asked through
    _asked: StoreUnanswered when the store does not answer."""
    token = None
    while True:
        more = {'ContinuationToken': token} if token else {}
        page = _asked(uri, lambda client: client.list_objects_v2(
            Bucket=bucket, Prefix=prefix, **options, **more))  # noqa: B023 (called at once)
        yield page
        token = page.get('NextContinuationToken')
        if not token:
            return


def children(uri: str) -> list:
    """The names directly under an object-store folder (files and sub-folders, sorted; [] when
    there is none), or StoreUnanswered: tf.io.gfile.isdir reads an outage as "no folder"."""
    bucket, _, prefix = to_s3(uri)[len(S3):].partition('/')
    prefix = prefix.rstrip('/') + '/' if prefix.rstrip('/') else ''
    names = set()
    for page in _pages(uri, bucket, prefix, Delimiter='/'):
        names.update(p['Prefix'][len(prefix):].rstrip('/') for p in page.get('CommonPrefixes', ()))
        names.update(o['Key'][len(prefix):] for o in page.get('Contents', ()))
    return sorted(n for n in names if n)


# S3's DeleteObjects takes at most this many keys a request.
DELETE_BATCH = 1000


def remove(uri: str) -> int:
    """Deletes the object-store folder uri (every object under it) or, when none is there, the
    one object uri; returns their bytes, 0 when there is nothing (not an error). One listing
    (1,000 objects a page, with their sizes) and one DeleteObjects per 1,000 keys: through
    tf.io.gfile each object cost a stat and a delete request of its own (200 objects on
    SeaweedFS: about 2.2 s, now 0.1 s).
    Each request is asked again while the store does not answer (_asked), then
    StoreUnanswered; a key the store refuses to delete (DeleteObjects answers 200 and lists it
    under Errors) raises OSError naming it and the store's code."""
    from botocore import exceptions  # pylint: disable=import-outside-toplevel
    bucket, _, key = to_s3(uri)[len(S3):].partition('/')
    key = key.rstrip('/')
    prefix = key + '/' if key else ''
    objects = {}
    try:
        for page in _pages(uri, bucket, prefix):
            objects.update((o['Key'], o['Size']) for o in page.get('Contents', ()))
        if not objects and key:   # not a folder: the one object, if there is one
            try:
                head = _asked(uri, lambda client: client.head_object(Bucket=bucket, Key=key))
                objects[key] = int(head['ContentLength'])
            except exceptions.ClientError as error:
                if error.response.get('ResponseMetadata', {}).get('HTTPStatusCode') != 404:
                    raise
        keys = sorted(objects)
        for start in range(0, len(keys), DELETE_BATCH):
            batch = [{'Key': k} for k in keys[start:start + DELETE_BATCH]]
            answer = _asked(uri, lambda client: client.delete_objects(  # noqa: B023
                Bucket=bucket, Delete={'Objects': batch, 'Quiet': True}))
            refused = answer.get('Errors') or []
            if refused:
                first = refused[0]
                others = f' (and {len(refused) - 1} more keys)' if len(refused) > 1 else ''
                raise OSError(f'cannot delete s3://{bucket}/{first.get("Key")}: the store '
                              f'answered {first.get("Code")} ({first.get("Message", "")})'
                              f'{others}')
    except exceptions.ClientError as error:   # an answer that is not the listing or deletion
        raise OSError(f'cannot delete {uri}: {" ".join(str(error).split())[:200]}') from error
    return sum(objects.values())


def sizes(uri: str) -> Optional[Tuple[int, int]]:
    """(objects, bytes) under an object-store folder, hidden names aside, by listing it (1,000
    objects per request); None when it cannot be listed."""
    bucket, _, prefix = to_s3(uri)[len(S3):].partition('/')
    prefix = prefix.rstrip('/') + '/' if prefix else ''
    count = size = 0
    try:
        for page in s3_client().get_paginator('list_objects_v2').paginate(
                Bucket=bucket, Prefix=prefix):
            for item in page.get('Contents', ()):
                if not any(part.startswith('.') for part in item['Key'][len(prefix):].split('/')):
                    count, size = count + 1, size + item['Size']
    except Exception:  # pylint: disable=broad-except  (no credentials, no endpoint: unknown)
        return None
    return count, size


def _skip_cxx_teardown() -> None:
    """Registers `_exit(status)` with glibc's on_exit, after tensorflow-io's destructors (see
    the module docstring, 3). on_exit calls its function as f(status, arg); _exit reads only the
    first argument."""
    libc = ctypes.CDLL(None)
    on_exit = libc.on_exit
    on_exit.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
    on_exit.restype = ctypes.c_int
    if on_exit(ctypes.cast(libc._exit, ctypes.c_void_p), None) != 0:  # pylint: disable=protected-access
        raise OSError('on_exit failed: a process that used S3 may abort at exit (code 134)')
