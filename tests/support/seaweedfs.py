"""A real S3 server for the tests: SeaweedFS, the object store Kubeflow Pipelines 2.17 ships.

`make test` builds its binary from the Go module proxy into .tools/weed (tools/seaweedfs/go.mod;
docs/testing.md "S3"). `Server` starts `weed server -s3` on the loopback with a static identity
(`-s3.config`): a master, a volume server, a filer and the S3 gateway, in a temporary folder,
each on a free port P whose P+10000 (SeaweedFS's gRPC port for it) is free too (the gateway a
process of its own with `gateway_apart`, for the store-fault chain). One server per test process
(the session fixture in tests/conftest.py); each test takes a bucket of its own. `env()` is what
a client needs: the standard AWS variables, which core/storage.py turns into tensorflow-io's.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Dict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get('WEED_BINARY', os.path.join(REPO, '.tools', 'weed'))
ACCESS_KEY, SECRET_KEY = 'pipeline-tests', 'pipeline-tests-secret'
_GRPC_OFFSET = 10000   # weed/command/server.go: each port's gRPC port defaults to port + 10000


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(('127.0.0.1', port))
            return True
        except OSError:
            return False


def free_ports(count: int, start: int) -> list:
    """count ports from start up, each free with its gRPC port (+10000) free too. Below the
    kernel's ephemeral range (32768-), where only an explicit bind takes a port."""
    ports, port = [], start
    while len(ports) < count:
        if _free(port) and _free(port + _GRPC_OFFSET):
            ports.append(port)
        port += 1
    return ports


class Server:
    """`weed server` with S3 on the loopback, until stop().

    gateway_apart=True runs the S3 gateway as a process of its own (`weed s3` in front of the
    server's filer), so that kill_gateway() can crash only it: restarting it is ready in a
    second, while a restarted `weed server` fails writes for 15 s (its master's warm-up after
    a leader change, weed/topology/topology.go IsWarmingUp: 3 pulses of a fixed 5 s, no flag).
    A client of the endpoint sees the same either way: connections refused."""

    def __init__(self, gateway_apart: bool = False):
        if not os.access(BINARY, os.X_OK):
            raise RuntimeError(f'SeaweedFS is not built: {BINARY} is missing; `make test` '
                               'builds it (make .tools/weed)')
        self.folder = tempfile.mkdtemp(prefix='seaweedfs-')
        # Spread by process, so two pytest workers starting together probe different ports.
        master, volume, filer, s3 = free_ports(4, 12000 + (os.getpid() % 40) * 100)
        config = os.path.join(self.folder, 's3.json')
        with open(config, 'w') as handle:  # weed/s3api/auth_credentials.go: the identities
            json.dump({'identities': [{'name': 'tests', 'credentials': [
                {'accessKey': ACCESS_KEY, 'secretKey': SECRET_KEY}],
                'actions': ['Admin', 'Read', 'Write', 'List', 'Tagging']}]}, handle)
        os.makedirs(os.path.join(self.folder, 'data'))
        self.log = os.path.join(self.folder, 'weed.log')
        self.endpoint = f'http://127.0.0.1:{s3}'
        # weed server puts each service's gRPC socket in /tmp under its gRPC port (10000 + the
        # port: weed/command/server.go, runServer), with no flag to move it: removed by stop().
        self._grpc_sockets = [f'/tmp/seaweedfs-{name}-grpc-{10000 + port}.sock' for name, port in
                              (('master', master), ('volume', volume), ('filer', filer),
                               ('s3', s3))]
        self._command = [
            # Its glog files and the filer's and gateway's local sockets in its own folder.
            BINARY, f'-logdir={self.folder}', 'server', '-ip=127.0.0.1', '-ip.bind=127.0.0.1',
            f'-filer.localSocket={os.path.join(self.folder, "filer.sock")}',
            f'-dir={os.path.join(self.folder, "data")}', f'-master.port={master}',
            f'-volume.port={volume}', f'-filer.port={filer}',
            # Each bucket is a collection, and its first write grows 7 volumes
            # (master.toml copy_1); weed server's default of 8 volumes left a third
            # bucket with "No writable volumes and no free volumes left" (S3
            # InternalError). Small volumes, many of them: ~40 buckets per server.
            '-volume.max=300', '-master.volumeSizeLimitMB=64',
            # A restarted master elects itself leader after this (10 s by default): until
            # then no read or write of an object is served (a lone master needs no more).
            '-master.electionTimeout=1s']
        socket_file = os.path.join(self.folder, 's3.sock')
        if gateway_apart:
            self._command.append('-filer')   # implied by -s3 otherwise
            # Its Iceberg and Lance servers off: their fixed ports (8181, 9101) are another
            # server's.
            self._gateway_command = [
                BINARY, f'-logdir={self.folder}', 's3', f'-filer=127.0.0.1:{filer}',
                '-ip.bind=127.0.0.1', f'-port={s3}', f'-localSocket={socket_file}',
                f'-config={config}', '-port.iceberg=0', '-port.lance=0']
        else:
            self._gateway_command = None
            self._command += [f'-s3.localSocket={socket_file}', '-s3', f'-s3.port={s3}',
                              f'-s3.config={config}']
        self.process = self.gateway = None
        self.start()

    def _processes(self) -> list:
        return [p for p in (self.process, self.gateway) if p is not None]

    def start(self) -> None:
        """Starts what is not running (again, after kill() or kill_gateway(): same ports, same
        data) and waits for S3."""
        with open(self.log, 'a') as log:
            if self.process is None or self.process.poll() is not None:
                self.process = subprocess.Popen(self._command, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)
            if self._gateway_command and (self.gateway is None or self.gateway.poll() is not None):
                self.gateway = subprocess.Popen(self._gateway_command, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()

    # The faults of tests/e2e/test_store_faults_e2e.py.
    def kill(self) -> None:
        """SIGKILL, as a crash or an evicted pod: connections are refused until start()."""
        for process in self._processes():
            process.kill()
            process.wait()

    def kill_gateway(self) -> None:
        """SIGKILL of the S3 gateway alone (gateway_apart): refused until start()."""
        self.gateway.kill()
        self.gateway.wait()

    def pause(self) -> None:
        """SIGSTOP: the store hangs; the kernel still accepts connections, nothing answers."""
        for process in self._processes():
            process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        for process in self._processes():
            process.send_signal(signal.SIGCONT)

    def _wait_ready(self, timeout: float = 60.0) -> None:
        """Until the S3 gateway answers a signed ListBuckets (the filer behind it is up) and,
        after a restart, serves an object stored before it and stores one (removed again): the
        filer answers listings at once, but a read, then a write, waits (10-15 s each, in one
        request) until the volume server has told the master about its volumes, and a run
        started meanwhile spent that in its clients' backoff (the store-fault chain's next run
        resumed training 25 s late)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in self._processes():
                if process.poll() is not None:
                    raise RuntimeError(f'weed exited with {process.returncode}: '
                                       f'{self.log_tail()}')
            try:
                client = self.client()
                for bucket in client.list_buckets().get('Buckets', ()):
                    stored = client.list_objects_v2(Bucket=bucket['Name'], MaxKeys=1)
                    if stored.get('Contents'):
                        name = bucket['Name']
                        client.get_object(Bucket=name, Key=stored['Contents'][0]['Key'])[
                            'Body'].read()
                        client.put_object(Bucket=name, Key='.seaweedfs-ready', Body=b'ready')
                        client.delete_object(Bucket=name, Key='.seaweedfs-ready')
                        break
                return
            except Exception:  # pylint: disable=broad-except  (not up yet)
                time.sleep(0.3)
        tail = self.log_tail()   # stop() removes the log with the folder
        self.stop()
        raise RuntimeError(f'weed server did not serve S3 in {timeout:.0f} s: {tail}')

    def log_tail(self) -> str:
        with open(self.log, errors='replace') as handle:
            return handle.read()[-3000:]

    def env(self) -> Dict[str, str]:
        return {'AWS_ENDPOINT_URL': self.endpoint, 'AWS_ACCESS_KEY_ID': ACCESS_KEY,
                'AWS_SECRET_ACCESS_KEY': SECRET_KEY, 'AWS_REGION': 'us-east-1'}

    def client(self):
        import boto3  # pylint: disable=import-outside-toplevel
        env = self.env()
        return boto3.client('s3', endpoint_url=self.endpoint, region_name=env['AWS_REGION'],
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def new_bucket(self) -> str:
        name = 'test-' + uuid.uuid4().hex[:16]
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = '') -> Dict[str, int]:
        """Every object under prefix: key -> size."""
        found = {}
        for page in self.client().get_paginator('list_objects_v2').paginate(
                Bucket=bucket, Prefix=prefix):
            found.update({o['Key']: o['Size'] for o in page.get('Contents', ())})
        return found

    def upload_folder(self, folder: str, bucket: str, prefix: str) -> int:
        """Copies a local folder's files under s3://bucket/prefix/; returns how many."""
        client, count = self.client(), 0
        for root, _, files in os.walk(folder):
            for name in files:
                path = os.path.join(root, name)
                key = '/'.join(p for p in (prefix, os.path.relpath(path, folder)) if p)
                client.upload_file(path, bucket, key)
                count += 1
        return count

    def stop(self) -> None:
        """Killed, not asked: its graceful shutdown takes about 20 s, and the data is thrown
        away with its folder."""
        for process in self._processes():
            if process.poll() is None:
                process.kill()   # a SIGSTOPped process dies of SIGKILL too
                process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        for socket_file in self._grpc_sockets:
            if os.path.exists(socket_file):
                os.unlink(socket_file)

