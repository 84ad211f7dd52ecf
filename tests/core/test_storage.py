"""core/storage.py: minio:// as s3://, tensorflow-io's variables from the standard
AWS ones, the exit code of a process that used S3, and the existence checks following the
environment (against SeaweedFS, tests/support)."""
import os
import subprocess
import sys
import textwrap

import pytest

from core import storage, store_watch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def test_minio_uris_are_the_same_objects_as_s3():
    assert storage.to_s3('minio://mlpipeline/v2/artifacts/x') == 's3://mlpipeline/v2/artifacts/x'
    assert storage.to_s3('s3://b/k') == 's3://b/k'
    assert storage.to_s3('gs://b/k') == 'gs://b/k'
    assert storage.to_s3('/local/minio://x') == '/local/minio://x'
    assert [storage.is_object_store(p) for p in ('s3://b', 'minio://b', 'gs://b', '/tmp/s3')] == [
        True, True, False, False]


def test_tensorflow_variables_follow_the_standard_ones():
    plain = storage.tensorflow_variables({'AWS_ENDPOINT_URL': 'http://seaweedfs.kubeflow:9000'})
    assert plain == {'S3_ENDPOINT': 'http://seaweedfs.kubeflow:9000', 'S3_USE_HTTPS': '0',
                     'S3_VERIFY_SSL': '0', 'AWS_REGION': 'us-east-1', 'S3_REGION': 'us-east-1',
                     'AWS_DEFAULT_REGION': 'us-east-1', **store_watch.CLIENT_VARIABLES}
    tls = storage.tensorflow_variables({'AWS_ENDPOINT_URL': 'https://minio.example:443',
                                        'AWS_REGION': 'eu-west-1', 'S3_VERIFY_SSL': '0',
                                        'AWS_MAX_ATTEMPTS': '3'})
    # A variable the user set for a client wins; the region follows AWS_REGION.
    assert tls == {'S3_ENDPOINT': 'https://minio.example:443', 'S3_USE_HTTPS': '1',
                   'S3_REGION': 'eu-west-1', 'AWS_DEFAULT_REGION': 'eu-west-1',
                   'S3_CONNECT_TIMEOUT_MSEC': '10000', 'S3_REQUEST_TIMEOUT_MSEC': '20000',
                   'AWS_RETRY_MODE': 'standard'}
    # AWS itself: no endpoint, the SDKs' own.
    assert 'S3_ENDPOINT' not in storage.tensorflow_variables({'AWS_DEFAULT_REGION': 'us-east-2'})
    assert storage.tensorflow_variables({'AWS_DEFAULT_REGION': 'us-east-2'})['AWS_REGION'] == (
        'us-east-2')


def test_describe_names_keys_never_their_values():
    line = storage.describe({'AWS_ENDPOINT_URL': 'http://h:9000', 'AWS_ACCESS_KEY_ID': 'AKIA1',
                             'AWS_SECRET_ACCESS_KEY': 'very-secret'})
    assert 'http://h:9000' in line and 'AWS_SECRET_ACCESS_KEY' in line
    assert 'very-secret' not in line and 'AKIA1' not in line
    assert 'none' in storage.describe({})


def test_enable_for_only_object_store_paths(monkeypatch):
    called = []
    monkeypatch.setattr(storage, 'enable', lambda: called.append(1))
    assert not storage.enable_for(['/tmp/x', 'gs://b/x', '', None])
    assert storage.enable_for(['/tmp/x', 'minio://b/x']) and called == [1]


_TOUCH_S3 = textwrap.dedent('''
    import logging, sys
    {enable}
    import tensorflow as tf
    logging.basicConfig(filename=sys.argv[2], level=logging.INFO)
    with tf.io.gfile.GFile(sys.argv[1], 'w') as handle:
        handle.write('written')
    assert tf.io.gfile.exists(sys.argv[1])
    logging.info('the last line of the log')
    print('buffered, not flushed', end='')
    if sys.argv[3] == 'raise':
        raise RuntimeError('a failing task')
    sys.exit(int(sys.argv[3]))
''')


def _run_touching_s3(s3, tmp_path, name: str, outcome: str, enable: str):
    script = tmp_path / f'{name}.py'
    script.write_text(_TOUCH_S3.format(enable=enable))
    log = tmp_path / f'{name}.log'
    process = subprocess.Popen(
        [sys.executable, str(script), s3.uri(name, 'file.txt'), str(log), outcome],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    return process, log


def test_a_process_that_used_s3_exits_with_its_own_code(s3, tmp_path):
    """Exit 0, 3 and an uncaught exception's 1, each with its log and stdout flushed, and 0 in a
    child that only inherited the configuration and imported a stage (as Beam's workers); without
    storage.enable (tensorflow-io imported as it is), the same process aborts with 134
    (tensorflow/io #2039), which is what enable() prevents."""
    enabled = 'from core import storage; storage.enable()'
    runs = {outcome: _run_touching_s3(s3, tmp_path, f'enabled-{outcome}', outcome, enabled)
            for outcome in ('0', '3', 'raise')}
    # A child of such a process (a Beam worker) inherits its S3_* variables and only imports
    # our package to unpickle a DoFn: components/__init__.py enables S3 there.
    runs['inherited'] = _run_touching_s3(s3, tmp_path, 'enabled-inherited', '0',
                                         'import components.ingest.graph.convert')
    bare = _run_touching_s3(s3, tmp_path, 'bare', '0', 'import tensorflow_io')
    errors = {}
    for outcome, (process, log) in runs.items():
        stdout, stderr = errors[outcome] = process.communicate(timeout=240)
        expected = {'raise': 1, 'inherited': 0, '0': 0, '3': 3}[outcome]
        assert process.returncode == expected, stderr[-2000:]
        assert stdout == 'buffered, not flushed'
        assert 'the last line of the log' in log.read_text()
        assert s3.keys(f'enabled-{outcome}/') == {f'enabled-{outcome}/file.txt': 7}
    assert 'RuntimeError: a failing task' in errors['raise'][1]
    assert not any('pure virtual' in err for _, err in errors.values())
    process, _ = bare
    _, stderr = process.communicate(timeout=240)
    assert process.returncode == -6 or process.returncode == 134, stderr[-2000:]
    assert 'pure virtual method called' in stderr


def test_the_existence_checks_ask_the_store_the_environment_names_now(s3, seaweedfs,
                                                                      monkeypatch):
    """exists() and children() keep a boto3 client per store configuration, each with a session
    of its own: after the environment names other keys (or another endpoint), the store is not
    asked with the old ones (CI once saw a process that had checked one store list another with
    the first one's keys: InvalidAccessKeyId)."""
    import tensorflow as tf
    s3_path = s3.uri('a', 'b.txt')
    with tf.io.gfile.GFile(s3_path, 'w') as handle:
        handle.write('x')
    assert storage.exists(s3_path)
    monkeypatch.setenv('AWS_ACCESS_KEY_ID', 'someone-else')
    from botocore import exceptions
    with pytest.raises(exceptions.ClientError) as refused:
        storage.exists(s3_path)
    assert refused.value.response['ResponseMetadata']['HTTPStatusCode'] == 403
    monkeypatch.setenv('AWS_ACCESS_KEY_ID', seaweedfs.env()['AWS_ACCESS_KEY_ID'])
    assert storage.exists(s3_path) and storage.children(s3.uri('a')) == ['b.txt']


def test_beams_s3_clients_share_botocore_models_and_still_read_the_environment(s3, seaweedfs,
                                                                              monkeypatch):
    """Beam's S3 file system starts a boto3 session per call; after enable() those sessions share
    one loader of botocore's models (parsed once, not per call), and each still signs with the
    keys the environment names at that call: other keys are refused (403), the right ones
    answer again. A search path of its own (AWS_DATA_PATH) gets a loader of its own."""
    import botocore.session
    from apache_beam.io.aws import s3io
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.io.filesystems import FileSystems
    # What a pipeline's run sets (apache_beam/pipeline.py Pipeline.__init__), for this test only.
    monkeypatch.setattr(FileSystems, '_pipeline_options', PipelineOptions())
    with FileSystems.create(s3.uri('beam', 'x.txt')) as handle:
        handle.write(b'written by Beam')
    loaders = [s3io.S3IO(options=PipelineOptions()).client.client._loader for _ in range(2)]
    assert loaders[0] is loaders[1]
    assert botocore.session.Session().get_component('data_loader') is loaders[0]
    assert FileSystems.exists(s3.uri('beam', 'x.txt'))
    monkeypatch.setenv('AWS_SECRET_ACCESS_KEY', 'not-the-key')
    with pytest.raises(Exception, match='403|Forbidden|SignatureDoesNotMatch'):
        FileSystems.open(s3.uri('beam', 'x.txt')).read()
    monkeypatch.setenv('AWS_SECRET_ACCESS_KEY', seaweedfs.env()['AWS_SECRET_ACCESS_KEY'])
    assert FileSystems.open(s3.uri('beam', 'x.txt')).read() == b'written by Beam'
    monkeypatch.setenv('AWS_DATA_PATH', '/nonexistent-models')
    assert botocore.session.Session().get_component('data_loader') is not loaders[0]


_WRITE_AND_HANG = textwrap.dedent('''
    import sys, time
    from core import storage
    storage.enable()
    import tensorflow as tf
    handle = tf.io.gfile.GFile(sys.argv[1], 'w')   # never closed: the store-down exit's case
    handle.write('x' * 100000)
    handle.flush()
    print('writing', flush=True)
    time.sleep(300)
''')


def test_a_process_writing_to_s3_holds_an_upload_buffer_which_is_deleted_for_it(s3, tmp_path):
    """tensorflow-io stages a file written to S3 in /tmp/_s3_filesystem_*, kept open until the
    file is closed: the store-down exit (which ends without closing) deletes those of the run's
    processes, and only those."""
    import glob
    script = tmp_path / 'hang.py'
    script.write_text(_WRITE_AND_HANG)
    before = set(glob.glob(storage.UPLOAD_BUFFER_PREFIX + '*'))
    child = subprocess.Popen([sys.executable, str(script), s3.uri('hang', 'file.txt')],
                             cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == 'writing\n', child.stderr.read()[-2000:]
        # The child's own: another test process may be writing to S3 at the same moment.
        held = {os.readlink(f'/proc/{child.pid}/fd/{fd}')
                for fd in os.listdir(f'/proc/{child.pid}/fd')}
        buffers = (set(glob.glob(storage.UPLOAD_BUFFER_PREFIX + '*')) - before) & held
        assert len(buffers) == 1 and os.path.getsize(next(iter(buffers))) == 100000
        assert storage.remove_upload_buffers([os.getpid()]) == []   # not this process's
        assert storage.remove_upload_buffers([child.pid]) == sorted(buffers)
        assert not [path for path in buffers if os.path.exists(path)]
    finally:
        child.kill()
        child.wait()
