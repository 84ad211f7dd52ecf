"""An HTTP relay in front of a test's S3 store that answers chosen GETs once with a 500, as
S3 does now and then ("We encountered an internal error, please try again") and SeaweedFS does
while it starts. Everything else is passed through byte for byte, the Host header included,
so signatures made for the relay's address still verify at the store.

    relay = FailOnceRelay(seaweedfs.endpoint)   # .endpoint: http://127.0.0.1:PORT
    relay.fail_next_get('bucket/key')           # its next GET answers 500, the one after passes
    relay.fail_gets('bucket/key', below=1000)   # every ranged GET starting before byte 1000
                                                # answers 500 (an outage of those reads)
    ...
    relay.stop()
"""
import http.client
import http.server
import threading
import urllib.parse
from typing import Dict, Set

ERROR_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
              b'<Message>We encountered an internal error, please try again.</Message></Error>')


class FailOnceRelay:
    def __init__(self, store_endpoint: str):
        target = urllib.parse.urlparse(store_endpoint)
        self._armed: Set[str] = set()
        self._failing: Dict[str, int] = {}   # path -> the first byte whose reads pass
        self.failed: list = []   # the paths answered with a 500, in order
        lock = threading.Lock()
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):  # quiet: the test's output is the assertions
                pass

            def _relay(self):
                path = urllib.parse.urlparse(self.path).path.lstrip('/')
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length) if length else None
                with lock:
                    fail = self.command == 'GET' and (
                        path in relay._armed
                        or _first_byte(self.headers.get('Range')) < relay._failing.get(path, 0))
                    if fail:
                        relay._armed.discard(path)
                        relay.failed.append(path)
                if fail:
                    self.send_response(500)
                    self.send_header('Content-Type', 'application/xml')
                    self.send_header('Content-Length', str(len(ERROR_BODY)))
                    self.end_headers()
                    self.wfile.write(ERROR_BODY)
                    return
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                upstream.request(self.command, self.path, body=body,
                                 headers={k: v for k, v in self.headers.items()})
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                head = self.command == 'HEAD'   # its Content-Length is the object's: kept
                for key, value in answer.getheaders():
                    if key.lower() not in ('transfer-encoding', 'connection') and (
                            head or key.lower() != 'content-length'):
                        self.send_header(key, value)
                if not head:
                    self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)
                upstream.close()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _relay

        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f'http://127.0.0.1:{self._server.server_address[1]}'
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def fail_next_get(self, bucket_and_key: str) -> None:
        self._armed.add(bucket_and_key)

    def fail_gets(self, bucket_and_key: str, below: int) -> None:
        """Every GET of the object whose range starts before byte `below` (or that has no
        range) answers 500 from now on, as a store that has stopped answering does."""
        self._failing[bucket_and_key] = below

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _first_byte(range_header) -> int:
    """The first byte a GET's Range asks for ('bytes=A-B'); 0 for a whole-object GET."""
    if not range_header or not range_header.startswith('bytes='):
        return 0
    first = range_header[len('bytes='):].split('-', 1)[0]
    return int(first) if first else 0
