"""An HTTP receiver for --notify on the loopback: the `receiver` fixture of the notification
tests (pipeline/runs/notify.py locally, pipeline/kubeflow/run_end.py in a Kubeflow task's process).

    def test_x(receiver):
        handler, url = receiver          # handler.bodies: [(Content-Type, body bytes)]
        handler.status, handler.delay = 500, 0.0   # what it answers, and after how long
"""
import http.server
import threading
import time

import pytest


class Receiver(http.server.BaseHTTPRequestHandler):
    status, delay, bodies = 200, 0.0, []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers['Content-Length']))
        type(self).bodies.append((self.headers['Content-Type'], body))
        time.sleep(type(self).delay)
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args):
        pass


def serve():
    """(handler class, url, server) of a receiver of its own, on a thread."""
    handler = type('Handler', (Receiver,), {'bodies': []})
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return handler, f'http://127.0.0.1:{server.server_address[1]}/hook', server


def stop(server) -> None:
    server.shutdown()
    server.server_close()


@pytest.fixture
def receiver(monkeypatch):
    from pipeline.runs import notify
    monkeypatch.setattr(notify, '_RETRY_PAUSE_SECONDS', 0.0)
    handler, url, server = serve()
    yield handler, url
    stop(server)
